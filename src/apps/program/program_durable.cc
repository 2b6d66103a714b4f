// Durable unit instances (docs/programs.md "Durable instances"): their journal in
// <data_dir>/units, and giving restored instances back to their units. Part of ProgramRuntime
// (program_runtime.h).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <map>
#include <utility>

#include "actor/durable_open.h"
#include "apps/program/detail/program_state.h"

namespace reef::apps::program {

using json = nlohmann::json;

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
  if (!unattached.empty()) {
    bool have_program = false;
    {
      MutexLock lock(mu);
      have_program = current != nullptr;
    }
    if (have_program) {
      std::vector<Tagged> retired_now = Reattach(std::exchange(unattached, {}));
      retiring.insert(retiring.end(), std::make_move_iterator(retired_now.begin()),
                      std::make_move_iterator(retired_now.end()));
    } else {
      spdlog::warn(
          "unit instances: {} restored, but no program came back to take them: they keep their "
          "state and inbox until a deploy gives them to its units (deploy the program again)",
          unattached.size());
    }
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

std::vector<Tagged> ProgramRuntime::State::Reattach(const std::vector<Tagged>& tagged) {
  std::vector<Tagged> retired_now;
  MutexLock lock(mu);
  std::map<std::pair<std::string, std::string>, std::shared_ptr<UnitState>> old_code;
  size_t kept = 0;
  for (const auto& [ref, tag] : tagged) {
    json fields = json::parse(tag, nullptr, /*allow_exceptions=*/false);
    const bool valid = fields.is_object() && fields.value("unit", json()).is_string() &&
                       fields.value("instance", json()).is_number_unsigned() &&
                       fields.value("code", json()).is_string();
    if (!valid) {  // not written by InstanceTag: the journal holds what it did not write
      spdlog::error(
          "unit instances: @{} has the tag {}, which names no unit instance; it stays "
          "but gets no invocations",
          ref.str(), tag);
      continue;
    }
    const std::string name = fields["unit"].get<std::string>();
    const std::string code = fields["code"].get<std::string>();
    const auto id = fields["instance"].get<uint32_t>();
    const bool was_retired = fields.value("retired", false);
    auto& ids = instance_ids[name];
    if (!ids) ids = std::make_shared<std::atomic<uint32_t>>(1);
    if (ids->load() <= id) ids->store(id + 1);  // ids are never given twice
    std::shared_ptr<UnitState> unit;
    if (auto it = units.find(name);
        !was_retired && it != units.end() && it->second->code_fingerprint == code) {
      unit = it->second;
      ++kept;
    } else {
      std::shared_ptr<UnitState>& old = old_code[{name, code}];
      if (!old) {
        old = std::make_shared<UnitState>();
        old->name = name;
        old->next_instance = ids;
        old->code_fingerprint = code;
        old->code_generation = fields.value("generation", uint64_t{0});
        MutexLock unit_lock(old->mu);  // never waited for: nothing else has the state yet
        old->spec.name = name;
        old->retired = true;
        retired.push_back(old);
      }
      unit = old;
      if (!was_retired) retired_now.emplace_back(ref, InstanceTag(*old, id, /*retired=*/true));
    }
    MutexLock unit_lock(unit->mu);
    unit->instances.try_emplace(id, id, ref);
  }
  if (!tagged.empty()) {
    spdlog::info("unit instances: {} restored, {} back with their units, {} finishing on old code",
                 tagged.size(), kept, tagged.size() - kept);
  }
  return retired_now;
}

}  // namespace reef::apps::program
