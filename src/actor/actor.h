// Public data types of the actor runtime: statuses, envelopes, implementations, snapshots.
//
// An actor is addressable state plus a bounded mailbox plus an implementation; it runs one
// invocation at a time (spec 001, "Scheduling and lifecycle"). The runtime (runtime.h) owns
// actors; these types are copies handed to callers.
//
// Thread ownership: plain values; any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "actor/guest_abi.h"
#include "core/status.h"
#include "core/value.h"
#include "wasm/invocation.h"
#include "wasm/module.h"
#include "wasm/tier.h"

namespace reef::actor {

// Actor statuses, one row each: enumerator, stable name (protocol, CLI, docs).
#define REEF_ACTOR_STATUSES(X)                                                 \
  X(kIdle, "idle")         /* no active invocation; runnable if input waits */ \
  X(kRunning, "running")   /* an invocation is active between slices */        \
  X(kAwaiting, "awaiting") /* the invocation waits in a host call */           \
  X(kPaused, "paused")     /* not scheduled; the prior status is kept */       \
  X(kStopped, "stopped")   /* takes no input until restarted */                \
  X(kFailed, "failed")     /* a handler failed; state and input are retained */

enum class ActorStatus : uint8_t {
#define REEF_X(name, text) name,
  REEF_ACTOR_STATUSES(REEF_X)
#undef REEF_X
};

std::string_view ActorStatusName(ActorStatus status);

// One message with its sender. An empty sender means the host (a client, the REPL, the
// runtime) sent it; actors see it as null.
struct Envelope {
  std::optional<ActorRef> sender;
  CborValue message;  // checked against the runtime's value limits when it was sent

  friend bool operator==(const Envelope&, const Envelope&) = default;
};

// An actor implementation: a module built against ABI reef v1, identified by its
// implementation id (implementation.h). Immutable; shared by every actor running it.
struct Implementation {
  std::string id;  // lowercase hex SHA-256, see ImplementationId
  std::shared_ptr<const wasm::Module> module;
  std::string label;   // where it came from, e.g. a source path; for people only
  std::string origin;  // the first input of its id (ModuleOrigin, or a source's origin)
  // The handler export run for each message: reef_handle, or a unit's handler (programs).
  std::string handler = std::string(kDefaultHandler);
};

// Where an implementation came from, the first input of its identity:
//   - a source: "source <SourceId>\ncompiler <fingerprint>" (code/compile_cache.h), so the
//     identity covers the exact source text and the compiler that turned it into a module;
//   - a module handed over directly (tests, `reef wasm`): "module <module id>".
// REQUIRES: no trailing newline.
std::string ModuleOrigin(const wasm::Module& module);

// The implementation identity (spec 001 "implementation identity"): lowercase hex SHA-256
// over the versioned domain "reef-implementation:v1", `origin`, the engine name and version,
// the ABI version with the host manifest fingerprint, and the target. Changes whenever any of
// them changes.
std::string ImplementationId(std::string_view origin, const wasm::HostRegistry& registry);

// Checks the module exports ABI v1's actor entry points, with `handler` as the handler
// export, and wraps it. `origin` defaults to ModuleOrigin(*module); a handler other than
// reef_handle adds "\nhandler <name>" to it, so the identity covers the entry point.
// Errors: InvalidArgument naming the missing exports (CheckActorExports).
Result<std::shared_ptr<const Implementation>> MakeImplementation(
    std::shared_ptr<const wasm::Module> module, std::string label,
    std::optional<std::string> origin = std::nullopt, std::string_view handler = kDefaultHandler);

// The call an awaiting actor waits for (the `call` import).
struct AwaitedCall {
  ActorRef target;
  uint64_t waited_ms = 0;   // since the call started
  uint64_t timeout_ms = 0;  // the call's timeout
};

// A copy of one actor's observable state, for inspect and tests.
struct ActorSnapshot {
  ActorRef ref;
  std::string implementation_id;
  std::string implementation_label;
  uint32_t incarnation = 0;  // 1 at spawn; +1 per restart
  ActorStatus status = ActorStatus::kIdle;
  std::optional<ActorStatus> paused_from;      // set while paused: the status resume restores
  Value state;                                 // committed state
  std::optional<Envelope> reserved;            // the input of the active or failed invocation
  std::vector<Envelope> queued;                // FIFO, oldest first
  uint32_t mailbox_capacity = 0;               // counts queued + reserved messages
  std::optional<wasm::Telemetry> telemetry;    // while an invocation is active
  std::optional<AwaitedCall> awaiting;         // while it waits in a call (awaiting, paused)
  bool stopping = false;                       // a graceful stop is in progress
  std::optional<std::string> pending_install;  // implementation id queued by reload/become
  std::optional<std::string> failure;          // why the last invocation failed
  LogLevel log_level = LogLevel::kInfo;
  uint32_t reactor = 0;
  // The engine tier its handlers run on: the active invocation's, else the tier its next one
  // gets (Engine::TierOf; under `--engine auto` "native" once the code is compiled).
  wasm::Tier tier = wasm::Tier::kInterp;
};

// What a failed handler, or a kill, does to an actor.
enum class FailurePolicy : uint8_t {
  // Spec 001: the actor fails (a kill stops it) and keeps its state and the failed input for
  // inspection and repair.
  kRetain,
  // Spec 003 poisoning, for program units: the failed input is dropped (a waiting Call gets
  // the error), the state goes back to the spawn state, the incarnation goes up by one, and
  // the actor goes on with its queued input. Nothing of the failed invocation survives: its
  // engine instance is discarded.
  kReset,
};

}  // namespace reef::actor
