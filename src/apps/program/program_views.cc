// ProgramRuntime's views (units, instances, reactors) and control operations (kill, drain):
// part of ProgramRuntime (program_runtime.h).
#include <fmt/format.h>

#include <thread>
#include <utility>

#include "apps/program/detail/program_state.h"

namespace reef::apps::program {

std::vector<UnitInfo> ProgramRuntime::Units() {
  State& s = *state_;
  std::vector<std::pair<std::shared_ptr<UnitState>, std::vector<ActorRef>>> units;
  {
    MutexLock lock(s.mu);
    for (auto& [name, unit] : s.units) units.push_back({unit, {}});
  }
  std::vector<UnitInfo> infos;
  for (auto& [unit, refs] : units) {
    UnitInfo info;
    {
      MutexLock lock(unit->mu);
      info.spec = unit->spec;
      info.instances = unit->instances.size();
      for (const auto& [id, instance] : unit->instances) refs.push_back(instance.actor);
    }
    info.code_generation = unit->code_generation;
    info.invocations = unit->invocations.load();
    info.rejected = unit->rejected.load();
    info.evicted = unit->evicted.load();
    for (const ActorRef& ref : refs) {  // atomics only: no reactor round trip per instance
      auto usage = s.runtime->Mailbox(ref);
      if (usage.ok()) info.poisoned += usage->incarnation - 1;
    }
    infos.push_back(std::move(info));
  }
  return infos;
}

Result<std::vector<InstanceInfo>> ProgramRuntime::Instances(std::string_view name) {
  State& s = *state_;
  // The unit's current instances, then those of its old code still finishing their work.
  std::vector<std::shared_ptr<UnitState>> states;
  {
    MutexLock lock(s.mu);
    if (!s.current) return Status::NotFound("no program is deployed");
    auto it = s.units.find(std::string(name));
    if (it != s.units.end()) states.push_back(it->second);
    for (const auto& old : s.retired) {  // a removed unit's old instances count too
      if (old->name == name) states.push_back(old);
    }
    if (states.empty()) {
      return Status::NotFound(
          fmt::format("program {} has no unit {}", s.current->manifest.program, name));
    }
  }
  std::vector<InstanceInfo> infos;
  std::vector<Clock::time_point> last_used;
  for (const auto& unit : states) {
    MutexLock lock(unit->mu);
    for (const auto& [id, instance] : unit->instances) {
      InstanceInfo info(instance.actor);
      info.instance = id;
      info.invocations = instance.use->invocations.load();
      info.code_generation = unit->code_generation;
      info.retired = unit->retired;
      infos.push_back(info);
      last_used.push_back(instance.use->LastUsed());
    }
  }
  std::vector<InstanceInfo> present;
  Clock::time_point now = Clock::now();
  for (size_t i = 0; i < infos.size(); ++i) {
    auto snapshot = s.runtime->Inspect(infos[i].actor);
    if (!snapshot.ok()) continue;  // evicted meanwhile
    InstanceInfo& info = infos[i];
    info.reactor = snapshot->reactor;
    info.status = snapshot->status;
    info.incarnation = snapshot->incarnation;
    info.queued = snapshot->queued.size();
    info.inbox_capacity = snapshot->mailbox_capacity;
    info.idle_ms = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(now - last_used[i]).count());
    info.failure = snapshot->failure;
    info.tier = snapshot->tier;
    present.push_back(std::move(info));
  }
  return present;
}

Status ProgramRuntime::Kill(std::string_view name, uint32_t instance) {
  State& s = *state_;
  std::vector<std::shared_ptr<UnitState>> states;  // current code first, then old code
  {
    MutexLock lock(s.mu);
    auto it = s.units.find(std::string(name));
    if (it != s.units.end()) states.push_back(it->second);
    for (const auto& old : s.retired) {  // a removed unit's old instances count too
      if (old->name == name) states.push_back(old);
    }
    if (states.empty()) return Status::NotFound(fmt::format("no unit {}", name));
  }
  for (const auto& unit : states) {
    std::optional<ActorRef> ref;
    {
      MutexLock lock(unit->mu);
      auto it = unit->instances.find(instance);
      if (it != unit->instances.end()) ref = it->second.actor;
    }
    if (ref) return s.runtime->Kill(*ref);
  }
  return Status::NotFound(fmt::format("unit {} has no instance {}", name, instance));
}

std::vector<actor::ReactorInfo> ProgramRuntime::Reactors() {
  return state_->runtime->Reactors();
}

Result<actor::ReactorInfo> ProgramRuntime::Drain(uint32_t reactor,
                                                 std::chrono::milliseconds timeout) {
  State& s = *state_;
  auto deadline = Clock::now() + timeout;
  for (;;) {
    REEF_RETURN_IF_ERROR(s.runtime->Drain(reactor));
    actor::ReactorInfo info = s.runtime->Reactors().at(reactor);
    if (info.liveness == actor::ReactorLiveness::kDown || Clock::now() >= deadline) return info;
    MutexLock lock(s.stop_mu);
    s.stop_cv.WaitUntil(s.stop_mu, std::min(deadline, Clock::now() + std::chrono::milliseconds(5)));
    if (s.stopping) {
      return Status::Unavailable(fmt::format(
          "Reef is shutting down; reactor {} was left draining (its busy actors stay)", reactor));
    }
  }
}

void ProgramRuntime::DrainAsync(uint32_t reactor, std::chrono::milliseconds timeout,
                                DrainDone done) {
  SubmitForResult<actor::ReactorInfo>(
      *state_->drains, "the drain", [this, reactor, timeout] { return Drain(reactor, timeout); },
      std::move(done),
      fmt::format("{} drains are waiting already (or Reef is shutting down); try again later",
                  kMaxWaitingDrains));
}

namespace {
std::string ControlsRefusal() {
  return fmt::format(
      "{} unit views and kills are waiting already (or Reef is shutting down); try again shortly",
      ProgramRuntime::kMaxWaitingControls);
}
}  // namespace

void ProgramRuntime::InstancesAsync(std::string unit, InstancesDone done) {
  SubmitForResult<std::vector<InstanceInfo>>(
      *state_->controls, "listing instances",
      [this, unit = std::move(unit)] { return Instances(unit); }, std::move(done),
      ControlsRefusal());
}

void ProgramRuntime::KillAsync(std::string unit, uint32_t instance, KillDone done) {
  SubmitForResult<bool>(
      *state_->controls, "the kill",
      [this, unit = std::move(unit), instance]() -> Result<bool> {
        REEF_RETURN_IF_ERROR(Kill(unit, instance));
        return true;
      },
      [done = std::move(done)](Result<bool> killed) { done(killed.status()); }, ControlsRefusal());
}

}  // namespace reef::apps::program
