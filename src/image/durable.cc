// The durable image (issue 16; docs/operations.md "Durable image"): opening the journal in
// <data dir>/image, bringing the recorded actors back, and the output gate of the ops.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <map>
#include <utility>

#include "image/detail/image_state.h"
#include "wasm/module.h"

namespace reef::image {

namespace {

// The implementation a record describes, rebuilt from its module bytes: the same id as long as
// the engine and the ABI are the same (a newer Reef gives it a new one).
Result<std::shared_ptr<const actor::Implementation>> Rebuild(
    const actor::ImplementationRecord& record) {
  auto module = wasm::Module::FromBinary(record.wasm, record.label);
  if (!module.ok()) {
    return module.status().WithContext(
        fmt::format("the recorded module of {} ({}) no longer loads", record.label, record.id));
  }
  auto implementation =
      actor::MakeImplementation(std::move(*module), record.label, record.origin, record.handler);
  if (!implementation.ok()) {
    return implementation.status().WithContext(
        fmt::format("the recorded implementation {} ({})", record.label, record.id));
  }
  return implementation;
}

}  // namespace

Status Image::State::OpenDurable() {
  actor::DurableImageOptions durable_options;
  actor::JournalOptions& journal = durable_options.journal;
  journal.dir = options.data_dir / "image";
  // A whole mailbox is one record when set-messages replaces it.
  journal.max_record_bytes = 256u << 20;
  journal.segment_bytes = options.journal_bytes;
  durable_options.compact_after_bytes = options.journal_bytes;
  durable_options.value_limits = runtime->options().value_limits;
  std::error_code ec;
  const bool had_lock = std::filesystem::exists(journal.dir / "LOCK", ec);
  actor::RecoveredImage recovered(durable_options.value_limits);
  actor::JournalRecovery recovery;
  REEF_ASSIGN_OR_RETURN(durable, actor::DurableImage::Open(durable_options, &recovered, &recovery));
  REEF_ASSIGN_OR_RETURN(group, runtime->CreateGroup(actor::SchedulingMode::kManual, durable));

  std::map<std::string, std::shared_ptr<const actor::Implementation>, std::less<>> built;
  Status broken = Status::Ok();
  auto implementation_of =
      [&](std::string_view id) -> std::shared_ptr<const actor::Implementation> {
    if (auto it = built.find(id); it != built.end()) return it->second;
    auto record = recovered.implementations().find(id);
    if (record == recovered.implementations().end()) return nullptr;
    auto implementation = Rebuild(record->second);
    if (!implementation.ok()) {
      if (broken.ok()) broken = implementation.status();
      return nullptr;
    }
    if ((*implementation)->id != id) {
      spdlog::warn("image: {} has implementation id {} on this Reef (recorded as {})",
                   record->second.label, (*implementation)->id, id);
    }
    built.emplace(std::string(id), *implementation);
    return *implementation;
  };
  // In batches, each record freed as its actor is made: the records and the actors of a large
  // image are never all in memory at once.
  std::map<ActorRef, actor::ActorRecord>& left = recovered.actors();
  std::vector<std::pair<ActorRef, std::string>> pending;  // (actor, label of its pending install)
  const size_t count = left.size();
  while (!left.empty()) {
    constexpr size_t kBatch = 10'000;
    std::vector<actor::ActorRecord> batch;
    batch.reserve(std::min(kBatch, left.size()));
    while (!left.empty() && batch.size() < kBatch) {
      batch.push_back(std::move(left.extract(left.begin()).mapped()));
      const actor::ActorRecord& added = batch.back();
      if (added.pending_install) {
        if (auto implementation = implementation_of(*added.pending_install)) {
          pending.emplace_back(added.ref, implementation->label);
        }
      }
    }
    Status restored = runtime->Restore(group, std::move(batch), implementation_of);
    if (!broken.ok()) restored = Status::InvalidArgument(broken.message());
    if (!restored.ok()) {
      // The batches restored so far go, and with them the group's hold on the journal.
      (void)runtime->RemoveGroup(*group);
      return restored;
    }
  }
  spdlog::info(
      "image {}: {} actor(s) restored from the snapshot of record {} and {} journal "
      "record(s) in {} file(s)",
      journal.dir.string(), count, durable->stats().snapshot_seq, recovery.records, recovery.files);
  if (recovery.torn_bytes > 0) {
    spdlog::warn(
        "image journal: cut {} bytes from the end of its last file: a write torn by a crash "
        "(never acknowledged), or damage to the file's end",
        recovery.torn_bytes);
  }
  if (count == 0 && recovery.files == 0 && durable->stats().snapshot_seq == 0 && had_lock) {
    spdlog::warn(
        "image {}: no journal file, though the directory was used before (its LOCK is there): "
        "starting with an empty image",
        journal.dir.string());
  }
  // The labels of pending installs (reload, become), which inspect shows.
  {
    MutexLock lock(mu);
    for (const auto& [ref, label] : pending) pending_labels[ref] = label;
  }
  return Status::Ok();
}

void Image::State::AfterDurable(std::function<void(Status)> done) {
  if (!durable) return done(Status::Ok());
  // Answers once: from the journal, or with Unavailable when the work is destroyed unrun
  // (the fleet stopping).
  struct Waiter {
    std::function<void(Status)> done;
    void Answer(Status status) {
      if (done) std::exchange(done, nullptr)(std::move(status));
    }
    ~Waiter() { Answer(Status::Unavailable("the image closed before the change was durable")); }
  };
  auto waiter = std::make_shared<Waiter>();
  waiter->done = std::move(done);
  Status posted = runtime->Post(group->home, [d = durable, waiter] {
    d->WhenAppendedDurable([waiter](Status status) { waiter->Answer(std::move(status)); });
  });
  if (!posted.ok()) waiter->Answer(posted);
}

}  // namespace reef::image
