// ProgramRuntime: deploys Programs atomically and routes invocations to unit instances on a
// fleet of reactor threads (spec 003; docs/programs.md).
//
// - The current Program is one shared_ptr swapped under a lock: a deploy builds and checks
//   everything first (program.h), writes it to <data_dir>/programs/, then publishes it in one
//   step. Routing that started before the swap finishes on the old Program; routing after it
//   sees the new one.
// - A unit instance is an actor (actor/runtime.h) of the unit's implementation, spawned with
//   FailurePolicy::kReset: a handler that traps or fails, or a kill, poisons only that
//   instance, which starts over from the unit's initial state (incarnation + 1).
// - Durable instances (the default): the instances are a durable free-running group whose
//   journal is <data_dir>/units (actor/durable_image.h). Open brings them back with their
//   state, incarnation and inbox, and gives each to its unit again when the redeployed
//   program has the same code for it (else it finishes its inbox on its old code, retired).
//   An answer that says a message was queued (try, enqueue) or gives a handler's reply
//   (wait) waits until that is on disk.
// - Units whose code (module bytes, handler, placement, initial state) did not change keep
//   their instances across a deploy; the others get new ones, and their old instances finish
//   what they hold and are then removed.
// - Routing: a named instance (Specific) must exist; otherwise (AnyOrSpawn) a singleton uses
//   its one instance, spawned on first use on the next Up reactor and pinned there; a
//   replicated unit uses an idle instance round-robin, else spawns one (up to its
//   instance_limit) on the next Up reactor round-robin, else the least loaded one.
// - An eviction thread removes replicated instances idle for the unit's idle_eviction_ms
//   (never a singleton of the current program) and old instances once they are idle.
//
// Thread ownership: every method may be called from any thread, concurrently. Lock order:
// deploy_mu_ -> mu_ -> UnitState::mu.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actor/runtime.h"
#include "apps/program/program.h"
#include "core/metrics.h"
#include "core/status.h"
#include "core/value.h"

namespace reef::apps::program {

struct ProgramRuntimeOptions {
  std::filesystem::path data_dir = "reef-data";  // programs are kept in <data_dir>/programs/
  uint32_t reactors = 0;  // reactor threads; 0 = hardware concurrency, at least 2
  // The reactor fleet units run on (shared with command executions by `reef serve`); empty:
  // the runtime starts its own with `reactors` reactors.
  std::shared_ptr<actor::Runtime> fleet;
  std::chrono::milliseconds eviction_interval{50};  // how often idle instances are looked for
  std::chrono::milliseconds max_timeout{60'000};    // longest invocation wait a caller may ask
  uint32_t kept_programs = 5;                       // program files kept on disk (the newest ones)
  // Keep unit instances in <data_dir>/units across restarts and crashes (docs/programs.md
  // "Durable instances"); false: in memory only (`reef serve --ephemeral`).
  bool durable = true;
  uint64_t journal_bytes = 64ull << 20;  // their journal's file size and compaction threshold
  ProgramLimits limits;
};

// How an invocation is handed over (spec 003 "Routing").
enum class InvokeMode : uint8_t {
  kTry,      // never waits: queued, or refused at once when the inbox is full
  kEnqueue,  // waits (up to the timeout) for inbox room, not for the handler
  kWait,     // waits for room and then for the handler's result
};
// "try", "enqueue", "wait".
std::string_view InvokeModeName(InvokeMode mode);
// Errors: InvalidArgument listing the three names.
Result<InvokeMode> ParseInvokeMode(std::string_view name);

struct InvokeRequest {
  std::string unit;
  Value message;
  InvokeMode mode = InvokeMode::kWait;
  std::optional<uint32_t> instance;  // Specific(instance); empty = AnyOrSpawn
  std::chrono::milliseconds timeout{10'000};
};

// Why an invocation was not done; each maps to one HTTP status (docs/http-api.md).
enum class InvokeFailure : uint8_t {
  kNone,
  kInvalid,     // the request itself (message over the value limits, timeout out of range)
  kNotFound,    // no program, no such unit, or no such instance
  kInboxFull,   // kTry: the chosen instance's inbox is full (the message was not queued)
  kNoRoom,      // kEnqueue / kWait: the inbox stayed full for the whole timeout
  kTimeout,     // kWait: queued, but no result within the timeout (it may still run)
  kFailed,      // kWait: the handler failed, trapped or was killed (the instance is poisoned)
  kUnavailable  // the runtime could not spawn an instance (no Up reactor, shutting down)
};

struct InvokeOutcome {
  InvokeFailure failure = InvokeFailure::kNone;
  std::string message;      // what went wrong, for people; empty on success
  Value result;             // kWait: the handler's reply to its sender, or null
  uint32_t instance = 0;    // the instance it went to (0 when none was chosen)
  uint64_t generation = 0;  // the program generation it was routed on
};

struct DeployReport {
  uint64_t generation = 0;
  std::string program;
  std::vector<std::string> added, changed, unchanged, removed;  // unit names, sorted
};

struct UnitInfo {
  UnitSpec spec;
  uint64_t code_generation = 0;  // the deploy that gave the unit its current code
  uint64_t instances = 0;
  uint64_t invocations = 0;  // accepted (queued) invocations
  uint64_t rejected = 0;     // kTry refusals and kEnqueue/kWait that found no room
  uint64_t poisoned = 0;     // resets of the live instances (incarnation - 1, summed)
  uint64_t evicted = 0;      // instances removed for idleness
};

struct InstanceInfo {
  explicit InstanceInfo(ActorRef ref) : actor(ref) {}
  uint32_t instance = 0;
  ActorRef actor;
  uint32_t reactor = 0;
  actor::ActorStatus status = actor::ActorStatus::kIdle;
  uint32_t incarnation = 1;  // 1 + the times it was poisoned
  uint64_t queued = 0;       // messages waiting, the running one not included
  uint32_t inbox_capacity = 0;
  uint64_t invocations = 0;               // routed to this instance
  uint64_t idle_ms = 0;                   // since the last invocation was routed to it
  std::optional<std::string> failure;     // why it was last poisoned
  uint64_t code_generation = 0;           // the deploy whose code it runs
  wasm::Tier tier = wasm::Tier::kInterp;  // the engine tier its handlers run on (ActorSnapshot)
  bool retired = false;  // it runs a unit's old code, finishing what it accepted before a
                         // deploy changed the unit; it is removed once idle
};

class ProgramRuntime {
 public:
  // Starts the reactor fleet and the eviction thread, restores the durable instances, and
  // redeploys the newest program kept in <data_dir>/programs/, giving the instances back to
  // their units. A kept program that no longer builds is logged and skipped (its instances
  // then finish their inboxes and go).
  // Errors: Unavailable when the directory cannot be created; those of Runtime::Create and of
  // actor::OpenDurableGroup (a damaged journal: DataLoss).
  static Result<std::unique_ptr<ProgramRuntime>> Open(ProgramRuntimeOptions options);
  // Stops the eviction thread and the reactors (running handlers end at their next slice).
  ~ProgramRuntime();
  ProgramRuntime(const ProgramRuntime&) = delete;
  ProgramRuntime& operator=(const ProgramRuntime&) = delete;

  // Builds `body` (BuildProgram; each module's trial instantiation runs on a reactor of the
  // fleet, this thread waits), keeps it on disk (fsync), publishes it. Deploys run one at a
  // time. REQUIRES: not on a reactor thread.
  // Errors: those of BuildProgram (nothing changes); Unavailable when it cannot be written.
  Result<DeployReport> Deploy(const nlohmann::json& body);
  // Deploy on the runtime's deploy thread; `done` runs exactly once with the result, on that
  // thread (or on this one when the deploy cannot be queued: Unavailable when
  // kMaxWaitingDeploys wait already or the runtime is stopping). Used by the HTTP route, so a
  // deploy holds no server thread.
  using DeployDone = std::function<void(Result<DeployReport>)>;
  void DeployAsync(nlohmann::json body, DeployDone done);
  static constexpr uint32_t kMaxWaitingDeploys = 8;
  // The published program, or null before the first deploy.
  std::shared_ptr<const Program> Current() const;

  // Routes and hands over one invocation; see InvokeMode and InvokeFailure. Blocks the
  // caller up to request.timeout in kEnqueue and kWait.
  InvokeOutcome Invoke(InvokeRequest request);
  // Invoke without blocking: `done` runs exactly once with the outcome, at the latest when
  // request.timeout has passed (or at shutdown): on this thread when the
  // answer is known at once (invalid, not found, kTry), otherwise on a reactor thread, so it
  // must not block (hand the outcome to another thread's queue). Used by the HTTP route, so
  // a waiting invocation holds no thread.
  using InvokeDone = std::function<void(InvokeOutcome)>;
  void InvokeAsync(InvokeRequest request, InvokeDone done);
  // For a shutdown: every invocation still waiting ends now with kUnavailable ("Reef is
  // shutting down"), and so does every later one, at once. Idempotent; any thread.
  void RefuseInvocations();
  // The start of a shutdown, before the server's graceful stop: RefuseInvocations, and every
  // drain in progress ends now with Unavailable (so its caller is answered while the server
  // still answers). Idempotent; any thread.
  void BeginStop();

  // The current program's units, by name.
  std::vector<UnitInfo> Units();
  // The unit's live instances: its current code's, then (retired) its old code's that still
  // finish work accepted before a deploy. Instance ids are unique per unit name across
  // deploys. Errors: NotFound (no program or no such unit).
  Result<std::vector<InstanceInfo>> Instances(std::string_view unit);
  // Kills the instance's invocation (a retired one too): it is poisoned (reset) like a
  // trapped one. Errors: NotFound.
  Status Kill(std::string_view unit, uint32_t instance);

  std::vector<actor::ReactorInfo> Reactors();
  // Adds the series of the program, its units and the reactors (docs/http-api.md "Unit
  // metrics") to `out`: a MetricsCollector for the server's /metrics. Any thread.
  void CollectMetrics(MetricFamilies& out);
  // Drains `reactor` (Runtime::Drain) and keeps draining until it hosts nothing or `timeout`
  // passed; returns its state then. Errors: NotFound, FailedPrecondition (no other Up
  // reactor).
  Result<actor::ReactorInfo> Drain(uint32_t reactor, std::chrono::milliseconds timeout);
  // Drain on one of the runtime's two drain threads; `done` runs exactly once with the
  // result, on that thread (or on this one when the drain cannot be queued: Unavailable when
  // kMaxWaitingDrains wait already or the runtime is stopping). Used by the HTTP route, so a
  // drain (up to its timeout) holds no server thread.
  using DrainDone = std::function<void(Result<actor::ReactorInfo>)>;
  void DrainAsync(uint32_t reactor, std::chrono::milliseconds timeout, DrainDone done);
  static constexpr uint32_t kMaxWaitingDrains = 8;
  // Instances and Kill on one of the runtime's two control threads (both wait for reactors:
  // Instances makes one round trip per instance), answered like DrainAsync's (Unavailable
  // when kMaxWaitingControls wait already or the runtime is stopping). Used by the HTTP
  // routes, so a busy reactor holds no server thread.
  using InstancesDone = std::function<void(Result<std::vector<InstanceInfo>>)>;
  void InstancesAsync(std::string unit, InstancesDone done);
  using KillDone = std::function<void(Status)>;
  void KillAsync(std::string unit, uint32_t instance, KillDone done);
  static constexpr uint32_t kMaxWaitingControls = 64;

  const ProgramRuntimeOptions& options() const;
  actor::Runtime& runtime();
  // The durable instances' journal (its metrics), or null (ProgramRuntimeOptions::durable off).
  const actor::DurableImage* durable() const;

  struct State;  // internals (program_runtime.cc)

 private:
  explicit ProgramRuntime(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace reef::apps::program
