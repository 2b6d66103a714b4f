// The host side of guest ABI v1 for actors (docs/abi.md): the `reef` import manifest and
// one handler invocation (inputs written through `reef_alloc`, `reef_handle` /
// `reef_on_shutdown` started, the packed result decoded into the new state).
//
// The imports record their effects (sends, log entries, a failure reason) in the
// ActorCallContext of the invocation; they never act on other actors. Validating targets and
// committing state is the actor runtime's job.
//
// Thread ownership: the registry is immutable after AbiV1Registry() returns (any thread);
// ActorCallContext and the invocation are reactor-owned.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/cbor.h"
#include "core/limits.h"
#include "core/status.h"
#include "core/value.h"
#include "wasm/engine.h"

namespace reef::actor {

inline constexpr std::string_view kAbiName = "reef";
inline constexpr uint32_t kAbiVersion = 1;
// The handler export of an actor. A program's unit may name another export with the same
// signature (docs/programs.md "Units").
inline constexpr std::string_view kDefaultHandler = "reef_handle";

// Log levels, in order; the `log` import takes their index (0..5).
enum class LogLevel : uint8_t { kTrace, kDebug, kInfo, kWarn, kError, kFatal };
// "trace", "debug", "info", "warn", "error", "fatal".
std::string_view LogLevelName(LogLevel level);
// Parses a lowercase level name. Errors: InvalidArgument listing the six names.
Result<LogLevel> ParseLogLevel(std::string_view name);

// One `send` / `send_from` effect. `sender` is empty for a host-originated sender.
struct SendEffect {
  std::optional<ActorRef> sender;
  ActorRef target;
  CborValue message;  // the guest's bytes, checked (and made deterministic)
};

struct LogRecord {
  LogLevel level = LogLevel::kInfo;
  std::string message;  // UTF-8, at most TransitionLimits::max_log_message_bytes bytes
};

// What the imports recorded during one invocation, in call order.
struct Effects {
  std::vector<SendEffect> sends;
  std::vector<LogRecord> logs;
  std::optional<std::string> failure;  // the reason passed to `fail`

  // Empties the record for the next invocation, keeping the vectors' capacity.
  void Clear() {
    sends.clear();
    logs.clear();
    failure.reset();
  }
};

// Return codes every i32 import shares (docs/abi.md "Imports the host provides").
inline constexpr int32_t kAbiOk = 0;
inline constexpr int32_t kAbiInvalid = -1;  // a bad argument: pointer, UTF-8, level, value
inline constexpr int32_t kAbiLimit = -2;    // a limit exceeded: value, log line, sends

// Return codes of the `call` import besides kAbiInvalid and kAbiLimit (also for a reply over
// the caller's value limits); a result >= 0 is the reply's length in bytes (docs/abi.md
// "Calling another actor").
enum CallCode : int32_t {
  kCallUnavailable = -3,  // the message was not taken: unknown target, stopped, failed, full
  kCallTimedOut = -4,     // no reply within the timeout
  kCallNoReply = -5,      // the callee failed, was killed, or committed without replying
  kCallCycle = -6,        // the target waits (directly or through others) for this actor
};
// Longest timeout a `call` may ask for, in milliseconds (10 minutes).
inline constexpr int32_t kMaxCallTimeoutMs = 600'000;

// Starts a call for the `call` import: returns 0 when the call is under way (the invocation
// suspends until the runtime resumes it with the outcome) or a negative CallCode to return
// at once. Runs on the reactor thread of the invocation.
using CallStarter =
    std::function<int32_t(const ActorRef& target, CborValue message, std::chrono::milliseconds)>;

// Per-invocation state the imports act on. Lifetime: must outlive the invocation.
struct ActorCallContext {
  ActorRef self;
  ValueLimits value_limits;
  TransitionLimits transition_limits;
  LogLevel min_log_level = LogLevel::kInfo;  // lower levels are neither stored nor counted
  Effects effects;
  // Called for every accepted log entry at the moment the guest logs it (logging is
  // immediate: it does not roll back if the invocation later fails). Optional.
  std::function<void(LogLevel, const std::string&)> on_log;
  // How the `call` import starts a call; without one, `call` returns kCallUnavailable.
  CallStarter on_call;
  // The reply of the last call that returned one (CBOR), read by `call_reply`.
  std::vector<uint8_t> call_reply;
  // Results of the small exports the host calls (reef_alloc, reef_abi_version), kept so that
  // those calls allocate nothing.
  std::vector<wasm::WasmValue> export_results;
};

// The ABI v1 manifest: send, send_from, call, call_reply, log, self, fail (module `reef`), each
// handler acting on the ActorCallContext passed to Start. One shared immutable instance.
const wasm::HostRegistry& AbiV1Registry();

// Engine instructions `reef_alloc` may take before the invocation fails.
inline constexpr uint64_t kAllocBudget = 1'000'000;

// What StartHandle and StartShutdown check before they start.
enum class StartChecks : uint8_t {
  kAll,  // the module's exports (CheckActorExports) and its reef_abi_version (CheckAbiVersion,
         // a call into the guest)
  kInstanceChecked,  // neither: the caller checked both when it created this instance (the
                     // actor runtime does, once per instance rather than per invocation)
};

// Starts `handler(state, sender, message)` (an export with reef_handle's signature; default
// `reef_handle`), `sender` empty for the host. Asks the guest for one buffer with `reef_alloc`,
// copies the encoded inputs in, and returns the started (not yet run) invocation.
// Errors: InvalidArgument (a module without the ABI exports), FailedPrecondition
// (`reef_alloc` returned 0 or an out-of-bounds buffer, did not finish within kAllocBudget, or
// trapped).
Result<std::unique_ptr<wasm::Invocation>> StartHandle(
    wasm::Instance& instance, ActorCallContext& context, const CborValue& state,
    const std::optional<ActorRef>& sender, const CborValue& message,
    std::string_view handler = kDefaultHandler, StartChecks checks = StartChecks::kAll);

// The same with Values, encoded under context.value_limits; `sender` must be null or an actor
// ref. Errors: as above; InvalidArgument (sender kind), LimitExceeded (inputs over the limits).
Result<std::unique_ptr<wasm::Invocation>> StartHandle(wasm::Instance& instance,
                                                      ActorCallContext& context, const Value& state,
                                                      const Value& sender, const Value& message,
                                                      std::string_view handler = kDefaultHandler,
                                                      StartChecks checks = StartChecks::kAll);

// Starts `reef_on_shutdown(state)`. Errors: as StartHandle; NotFound when the module has no
// shutdown hook (HasShutdownHook() is false).
// `handler` names the actor's handler export, checked with the others.
Result<std::unique_ptr<wasm::Invocation>> StartShutdown(wasm::Instance& instance,
                                                        ActorCallContext& context,
                                                        const CborValue& state,
                                                        std::string_view handler = kDefaultHandler,
                                                        StartChecks checks = StartChecks::kAll);

bool HasShutdownHook(const wasm::Module& module);

// Checks that `module` exports what ABI v1 requires of an actor (memory, reef_abi_version,
// reef_alloc, and `handler` (default reef_handle) with their signatures).
// Errors: InvalidArgument naming each gap.
Status CheckActorExports(const wasm::Module& module, std::string_view handler = kDefaultHandler);

// Calls `reef_abi_version` (within kAllocBudget instructions) and checks it returns 1.
// StartHandle and StartShutdown call it (StartChecks::kAll). Errors: FailedPrecondition naming both
// versions.
Status CheckAbiVersion(wasm::Instance& instance, ActorCallContext& context);

// Reads the new state returned by a finished reef_handle / reef_on_shutdown invocation,
// checked as CborValue::FromBytes checks.
// REQUIRES: invocation.state() == kFinished.
// Errors: InvalidArgument (buffer outside memory, not a value), LimitExceeded.
Result<CborValue> ReadNewState(wasm::Instance& instance, const wasm::Invocation& invocation,
                               const ValueLimits& limits);

// ReadNewState as a Value.
Result<Value> DecodeNewState(wasm::Instance& instance, const wasm::Invocation& invocation,
                             const ValueLimits& limits);

}  // namespace reef::actor
