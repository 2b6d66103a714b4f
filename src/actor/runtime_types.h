// The value types of the actor runtime's interface (actor/runtime.h): options, placement,
// reactor liveness and what host-side sends and observations return.
//
// Thread ownership: plain values; copy freely.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "actor/actor.h"
#include "actor/actor_group.h"
#include "actor/log_store.h"
#include "core/limits.h"
#include "core/status.h"
#include "wasm/engine.h"

namespace reef::actor {

// Where Spawn places an actor when no reactor is named (spec 003).
enum class PlacementPolicy : uint8_t {
  kRoundRobin,   // the next Up reactor in turn
  kLeastLoaded,  // the Up reactor hosting the fewest actors
};

// Reactor liveness (spec 003): only Up reactors receive new actors.
enum class ReactorLiveness : uint8_t { kUp, kDraining, kDown };
std::string_view ReactorLivenessName(ReactorLiveness liveness);

struct RuntimeOptions {
  SchedulingMode mode = SchedulingMode::kManual;
  uint32_t reactors = 1;                    // reactor count; free-running default: cores
  uint64_t manual_slice = 32;               // engine instructions per slice in Tick
  uint64_t free_slice = 10'000;             // engine instructions per slice, free-running
  uint32_t messages_per_turn = 16;          // handler completions per actor per turn
  uint32_t default_mailbox_capacity = 256;  // messages (queued + reserved)
  PlacementPolicy placement = PlacementPolicy::kRoundRobin;
  std::chrono::milliseconds call_timeout{10'000};  // longest wait of any blocking call
  ValueLimits value_limits;
  TransitionLimits transition_limits;
  wasm::EngineLimits engine_limits;
  LogStoreOptions log_options;
};

struct SpawnOptions {
  std::optional<uint32_t> mailbox_capacity;  // default: RuntimeOptions'
  std::optional<uint32_t> reactor;           // pin to this reactor (must be Up)
  std::optional<PlacementPolicy> placement;  // default: RuntimeOptions'
  LogLevel log_level = LogLevel::kInfo;
  FailurePolicy failure_policy = FailurePolicy::kRetain;
  // The group the actor joins; null = the runtime's default group. An actor of a manual group
  // in a free-running runtime is placed on the group's home reactor (`reactor` must be that
  // one or unset; placement and liveness do not apply).
  std::shared_ptr<ActorGroup> group;
  // Kept with the actor in a durable group's records and given back by Restore (the program
  // runtime's unit and instance); at most kMaxTagBytes.
  std::string tag;
};
inline constexpr size_t kMaxTagBytes = 4096;

// A moment's view of one mailbox, read without a reactor round trip.
struct MailboxUsage {
  uint32_t used = 0;      // messages queued + the reserved one + sends in flight to it
  uint32_t capacity = 0;  // messages
  ActorStatus status = ActorStatus::kIdle;
  uint32_t incarnation = 1;
};

// Whether Runtime::Call needs the handler to reply.
enum class ReplyPolicy : uint8_t {
  kRequired,  // a handler that commits without replying fails the call
  kOptional,  // ... answers null instead
};

// What a host-side send did. On any failure the message is handed back in `returned`.
struct SendOutcome {
  Status status;
  std::optional<Value> returned;
};

struct ReactorInfo {
  uint32_t id = 0;
  ReactorLiveness liveness = ReactorLiveness::kUp;
  uint64_t actors = 0;
  // Host work (Runtime::Post: steps of command executions, projectors' and effects' guest
  // calls, their timers) waiting to run on this reactor now, and run on it so far.
  uint64_t tasks_waiting = 0;
  uint64_t tasks_run = 0;
};

// A host-provided state migration for InstallWithMigration: gets a copy of the committed
// state, returns the replacement or an error (then nothing changes).
using Migration = std::function<Result<Value>(Value state)>;

}  // namespace reef::actor
