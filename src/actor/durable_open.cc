#include "actor/durable_open.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <map>
#include <string_view>

#include "wasm/module.h"

namespace reef::actor {

namespace {

// The implementation a record describes, rebuilt from its module bytes: the same id as long as
// the engine and the ABI are the same (a newer Reef gives it a new one).
Result<std::shared_ptr<const Implementation>> Rebuild(const ImplementationRecord& record) {
  auto module = wasm::Module::FromBinary(record.wasm, record.label);
  if (!module.ok()) {
    return module.status().WithContext(
        fmt::format("the recorded module of {} ({}) no longer loads", record.label, record.id));
  }
  auto implementation =
      MakeImplementation(std::move(*module), record.label, record.origin, record.handler);
  if (!implementation.ok()) {
    return implementation.status().WithContext(
        fmt::format("the recorded implementation {} ({})", record.label, record.id));
  }
  return implementation;
}

}  // namespace

Result<OpenedGroup> OpenDurableGroup(Runtime& runtime, SchedulingMode mode,
                                     const DurableImageOptions& options, std::string_view what) {
  const std::filesystem::path& dir = options.journal.dir;
  std::error_code ec;
  const bool had_lock = std::filesystem::exists(dir / "LOCK", ec);
  RecoveredImage recovered(options.value_limits);
  JournalRecovery recovery;
  OpenedGroup opened;
  REEF_ASSIGN_OR_RETURN(opened.durable, DurableImage::Open(options, &recovered, &recovery));
  REEF_ASSIGN_OR_RETURN(opened.group, runtime.CreateGroup(mode, opened.durable));

  std::map<std::string, std::shared_ptr<const Implementation>, std::less<>> built;
  Status broken = Status::Ok();
  auto implementation_of = [&](std::string_view id) -> std::shared_ptr<const Implementation> {
    if (auto it = built.find(id); it != built.end()) return it->second;
    auto record = recovered.implementations().find(id);
    if (record == recovered.implementations().end()) return nullptr;
    auto implementation = Rebuild(record->second);
    if (!implementation.ok()) {
      if (broken.ok()) broken = implementation.status();
      return nullptr;
    }
    if ((*implementation)->id != id) {
      spdlog::warn("{}: {} has implementation id {} on this Reef (recorded as {})", what,
                   record->second.label, (*implementation)->id, id);
    }
    built.emplace(std::string(id), *implementation);
    return *implementation;
  };
  // In batches, each record freed as its actor is made: the records and the actors of a large
  // group are never all in memory at once.
  std::map<ActorRef, ActorRecord>& left = recovered.actors();
  opened.restored = left.size();
  while (!left.empty()) {
    constexpr size_t kBatch = 10'000;
    std::vector<ActorRecord> batch;
    batch.reserve(std::min(kBatch, left.size()));
    while (!left.empty() && batch.size() < kBatch) {
      batch.push_back(std::move(left.extract(left.begin()).mapped()));
      const ActorRecord& added = batch.back();
      if (added.pending_install) {
        if (auto implementation = implementation_of(*added.pending_install)) {
          opened.pending_installs.emplace_back(added.ref, implementation->label);
        }
      }
      if (!added.tag.empty()) opened.tags.emplace_back(added.ref, added.tag);
    }
    Status restored = runtime.Restore(opened.group, std::move(batch), implementation_of);
    if (!broken.ok()) restored = Status::InvalidArgument(broken.message());
    if (!restored.ok()) {
      // The batches restored so far go, and with them the group's hold on the journal.
      (void)runtime.RemoveGroup(*opened.group);
      return restored;
    }
  }
  if (Status started = runtime.StartRestored(*opened.group); !started.ok()) {
    (void)runtime.RemoveGroup(*opened.group);
    return started;
  }
  spdlog::info(
      "{} {}: {} actor(s) restored from the snapshot of record {} and {} journal record(s) in "
      "{} file(s)",
      what, dir.string(), opened.restored, opened.durable->stats().snapshot_seq, recovery.records,
      recovery.files);
  if (recovery.torn_bytes > 0) {
    spdlog::warn(
        "{} journal: cut {} bytes from the end of its last file: a write torn by a crash (never "
        "acknowledged), or damage to the file's end",
        what, recovery.torn_bytes);
  }
  if (opened.restored == 0 && recovery.files == 0 && opened.durable->stats().snapshot_seq == 0 &&
      had_lock) {
    spdlog::warn(
        "{} {}: no journal file, though the directory was used before (its LOCK is "
        "there): starting with none",
        what, dir.string());
  }
  return opened;
}

}  // namespace reef::actor
