// Durable unit instances (docs/programs.md "Durable instances"): their journal in
// <data_dir>/units, and giving restored instances back to their units. Part of ProgramRuntime
// (program_runtime.h).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <map>
#include <optional>
#include <utility>

#include "actor/durable_open.h"
#include "apps/program/detail/program_state.h"

namespace reef::apps::program {

namespace {
using json = nlohmann::json;
}  // namespace

std::string InstanceTag(const UnitState& unit, uint32_t instance, bool retired) {
  json tag = {{"unit", unit.name},
              {"instance", instance},
              {"code", unit.code_fingerprint},
              {"generation", unit.code_generation}};
  if (retired) tag["retired"] = true;
  return tag.dump();
}

Result<std::vector<Tagged>> ProgramRuntime::State::OpenDurable() {
  actor::DurableImageOptions durable_options;
  durable_options.journal.dir = options.data_dir / "units";
  durable_options.journal.segment_bytes = options.journal_bytes;
  durable_options.compact_after_bytes = options.journal_bytes;
  durable_options.value_limits = runtime->options().value_limits;
  REEF_ASSIGN_OR_RETURN(actor::OpenedGroup opened,
                        actor::OpenDurableGroup(*runtime, actor::SchedulingMode::kFreeRunning,
                                                durable_options, "unit instances"));
  durable = std::move(opened.durable);
  group = std::move(opened.group);
  return std::move(opened.tags);
}

void ProgramRuntime::State::Settle(std::vector<Tagged> retiring) {
  if (!unattached.empty()) {  // no program took them
    spdlog::warn(
        "unit instances: {} restored, but no program came back to take them: they get no "
        "invocations until a deploy gives them to its units (deploy the program again)",
        unattached.size());
  }
  for (auto& [ref, tag] : retiring) {
    // NotFound: gone already (evicted), nothing to mark.
    Status marked = runtime->SetTag(ref, std::move(tag));
    if (!marked.ok() && marked.code() != Code::kNotFound) {
      spdlog::warn("unit instances: @{} could not be marked retired: {}", ref.str(),
                   marked.ToString());
    }
  }
}

namespace {

// The fields of a tag InstanceTag wrote, or nullopt (anything else: a journal holding what
// this runtime did not write).
struct TagFields {
  std::string unit, code;
  uint32_t instance = 0;
  uint64_t generation = 0;
  bool retired = false;
};
std::optional<TagFields> ParseTag(const std::string& tag) {
  const json fields = json::parse(tag, nullptr, /*allow_exceptions=*/false);
  if (!fields.is_object()) return std::nullopt;
  auto field = [&](const char* key) -> const json* {
    auto it = fields.find(key);
    return it == fields.end() ? nullptr : &*it;
  };
  const json *unit = field("unit"), *code = field("code"), *instance = field("instance");
  const json *generation = field("generation"), *retired = field("retired");
  if (unit == nullptr || !unit->is_string() || code == nullptr || !code->is_string() ||
      instance == nullptr || !instance->is_number_unsigned() ||
      instance->get<uint64_t>() >= UINT32_MAX ||
      (generation != nullptr && !generation->is_number_unsigned()) ||
      (retired != nullptr && !retired->is_boolean())) {
    return std::nullopt;
  }
  TagFields out;
  out.unit = unit->get<std::string>();
  out.code = code->get<std::string>();
  out.instance = static_cast<uint32_t>(instance->get<uint64_t>());
  if (generation != nullptr) out.generation = generation->get<uint64_t>();
  out.retired = retired != nullptr && retired->get<bool>();
  return out;
}

}  // namespace

void ProgramRuntime::State::Reattach(const std::vector<Tagged>& tagged,
                                     std::vector<Tagged>* retiring) {
  std::map<std::pair<std::string, std::string>, std::shared_ptr<UnitState>> old_code;
  size_t kept = 0;
  for (const auto& [ref, tag] : tagged) {
    std::optional<TagFields> fields = ParseTag(tag);
    if (!fields) {
      spdlog::error(
          "unit instances: @{} has the tag {}, which names no unit instance; it stays "
          "but gets no invocations",
          ref.str(), json(tag.substr(0, 200)).dump());
      continue;
    }
    const std::string& name = fields->unit;
    const uint32_t id = fields->instance;
    auto& ids = instance_ids[name];
    if (!ids) ids = std::make_shared<std::atomic<uint32_t>>(1);
    if (ids->load() <= id) ids->store(id + 1);  // ids are never given twice
    std::shared_ptr<UnitState> unit;
    if (auto it = units.find(name);
        !fields->retired && it != units.end() && it->second->code_fingerprint == fields->code) {
      unit = it->second;
      ++kept;
    } else {
      std::shared_ptr<UnitState>& old = old_code[{name, fields->code}];
      if (!old) {
        old = std::make_shared<UnitState>();
        old->name = name;
        old->next_instance = ids;
        old->code_fingerprint = fields->code;
        old->code_generation = fields->generation;
        MutexLock unit_lock(old->mu);  // never waited for: nothing else has the state yet
        old->spec.name = name;
        old->retired = true;
        retired.push_back(old);
      }
      unit = old;
      if (!fields->retired) retiring->emplace_back(ref, InstanceTag(*old, id, /*retired=*/true));
    }
    MutexLock unit_lock(unit->mu);
    if (!unit->instances.try_emplace(id, id, ref).second) {
      spdlog::error(
          "unit instances: @{} is instance {} of unit {}, which another instance has "
          "already; it stays but gets no invocations",
          ref.str(), id, name);
    }
  }
  if (!tagged.empty()) {
    spdlog::info("unit instances: {} restored, {} back with their units, {} finishing on old code",
                 tagged.size(), kept, tagged.size() - kept);
  }
}

}  // namespace reef::apps::program
