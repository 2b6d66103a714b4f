// Internals of ProgramRuntime shared by its source files (program_runtime.cc: deploys,
// routing, eviction; program_views.cc: the views and control operations). Not a public
// header. Thread ownership and lock order: program_runtime.h.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "actor/durable_image.h"
#include "apps/program/program_runtime.h"
#include "core/io_pool.h"
#include "core/mutex.h"

namespace reef::apps::program {

using Clock = std::chrono::steady_clock;

// How an instance is being used. Atomic, and shared with the invocations in flight, because
// an invocation ends on a reactor thread, which must not wait for UnitState::mu: that lock is
// held across reactor round trips (Spawn, Remove).
struct InstanceUse {
  std::atomic<uint32_t> pending{0};  // invocations handed to it and not ended (blocks eviction)
  std::atomic<Clock::rep> last_used{Clock::now().time_since_epoch().count()};
  std::atomic<uint64_t> invocations{0};  // accepted into its inbox

  void Touch() { last_used.store(Clock::now().time_since_epoch().count()); }
  Clock::time_point LastUsed() const {
    return Clock::time_point(Clock::duration(last_used.load()));
  }
};

struct Instance {
  Instance(uint32_t instance_id, ActorRef ref) : id(instance_id), actor(ref) {}
  uint32_t id = 0;
  ActorRef actor;
  std::shared_ptr<InstanceUse> use = std::make_shared<InstanceUse>();
};

// One unit's code and its instances. A redeploy that changes the unit's code retires this
// object and makes a new one; an unchanged unit carries it over.
struct UnitState {
  Mutex mu;
  // Set before the state is published (State::Publish), constant after.
  std::string name;  // spec.name, readable without mu
  std::shared_ptr<const actor::Implementation> implementation;
  std::string code_fingerprint;
  uint64_t code_generation = 0;
  UnitSpec spec GUARDED_BY(mu);  // limits may change (written with State::mu held too)
  std::map<uint32_t, Instance> instances GUARDED_BY(mu);
  // The unit's next instance id, shared by every UnitState of the unit's name, so an id
  // never names two instances (old code's and new code's) at once.
  std::shared_ptr<std::atomic<uint32_t>> next_instance;
  uint32_t cursor GUARDED_BY(mu) = 0;  // round-robin position
  bool retired GUARDED_BY(mu) = false;
  std::atomic<uint64_t> invocations{0};
  std::atomic<uint64_t> rejected{0};
  std::atomic<uint64_t> evicted{0};
};

// What a durable instance's actor carries (actor::SpawnOptions::tag): its unit's name, the
// instance number and the unit's code, so that a restart can give it back (State::Reattach).
// JSON (program_durable.cc).
// `retired`: the instance was retired (by a deploy that changed its unit); a restart keeps it so.
std::string InstanceTag(const UnitState& unit, uint32_t instance, bool retired = false);
using Tagged = std::pair<ActorRef, std::string>;  // an instance's actor and its tag

struct ProgramRuntime::State {
  ProgramRuntimeOptions options;
  std::shared_ptr<actor::Runtime> runtime;  // the fleet (ProgramRuntimeOptions::fleet)
  std::filesystem::path programs_dir;
  // Durable instances (ProgramRuntimeOptions::durable): their group and its journal; null:
  // instances join the fleet's default group, in memory only. Constant after Open.
  std::shared_ptr<actor::ActorGroup> group;
  std::shared_ptr<actor::DurableImage> durable;

  Mutex deploy_mu;  // one deploy at a time
  uint64_t last_generation GUARDED_BY(deploy_mu) = 0;
  // Restored instances no program has taken yet (none came back at start): the next deploy
  // gives them to its units (Settle).
  std::vector<Tagged> unattached GUARDED_BY(deploy_mu);

  mutable Mutex mu;
  std::shared_ptr<const Program> current GUARDED_BY(mu);
  std::map<std::string, std::shared_ptr<UnitState>> units GUARDED_BY(mu);
  // Next instance id per unit name, across deploys (UnitState::next_instance).
  std::map<std::string, std::shared_ptr<std::atomic<uint32_t>>> instance_ids GUARDED_BY(mu);
  std::vector<std::shared_ptr<UnitState>> retired GUARDED_BY(mu);
  std::atomic<uint32_t> reactor_cursor{0};
  // RefuseInvocations was called; shared with the invocations in flight, whose answers may
  // come after the runtime is gone (a journal's wait).
  std::shared_ptr<std::atomic<bool>> refusing = std::make_shared<std::atomic<bool>>(false);

  // Runs DeployAsync's deploys, one at a time (declared after what they use: destroyed
  // first, waiting for the deploy in progress).
  std::unique_ptr<IoPool> deploys;
  // Runs DrainAsync's drains (two threads: a drain waits up to its timeout).
  std::unique_ptr<IoPool> drains;
  // Runs InstancesAsync and KillAsync (two threads).
  std::unique_ptr<IoPool> controls;

  Mutex stop_mu;
  CondVar stop_cv;
  bool stopping GUARDED_BY(stop_mu) = false;
  std::thread evictor;

  // Publishes `program` and gives it the `unattached` instances (Reattach); durable instances
  // it retires go to `retiring` with their retired tags (Settle marks them).
  Result<DeployReport> Publish(std::shared_ptr<const Program> program,
                               std::vector<Tagged>* retiring) REQUIRES(deploy_mu);
  // Opens the instances' journal in <data_dir>/units, makes `group` and `durable`, and
  // restores the instances; returns (actor, tag) for each (program_durable.cc). Errors: those
  // of actor::OpenDurableGroup.
  Result<std::vector<Tagged>> OpenDurable();
  // After a publish (or none, at start): marks `retiring` retired (SetTag: a reactor round
  // trip each), and logs instances still waiting for a program. REQUIRES: not on a reactor.
  void Settle(std::vector<Tagged> retiring) REQUIRES(deploy_mu);
  // Gives restored instances back to the current units: to the unit of their name when its
  // code is the same and they were not retired, else to a retired UnitState of their old code
  // (finished and removed by the eviction thread). Adds those it retired and whose tag does
  // not say so yet to `retiring`.
  void Reattach(const std::vector<Tagged>& tagged, std::vector<Tagged>* retiring) REQUIRES(mu);
  // BuildProgram's trial instantiation, on a reactor of the fleet (the start function is
  // guest code); the calling thread waits. REQUIRES: not on a reactor thread.
  Status TrialInstantiate(const std::shared_ptr<const wasm::Module>& module);
  // Where a new instance goes: the Up reactor hosting the fewest actors, ties in turn.
  // Errors: Unavailable (no reactor is Up).
  Result<uint32_t> NextReactor();
  // Picks (or spawns) the instance an invocation goes to.
  Result<Instance*> Pick(UnitState& unit, const std::optional<uint32_t>& target,
                         InvokeOutcome* outcome) REQUIRES(unit.mu);
  void EvictIdle();
  void EvictLoop();
};

}  // namespace reef::apps::program
