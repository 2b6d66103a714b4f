#include "actor/guest_abi.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "core/cbor.h"
#include "core/utf8.h"

namespace reef::actor {

using wasm::HostCall;
using wasm::HostCallOutcome;
using wasm::TrapKind;
using wasm::ValType;

namespace {

constexpr std::array<std::string_view, 6> kLevelNames = {"trace", "debug", "info",
                                                         "warn",  "error", "fatal"};

ActorCallContext& ContextOf(HostCall& call) {
  return *static_cast<ActorCallContext*>(call.context());
}

// The guest buffer (ptr, len) given as i32 arguments `index` and `index + 1`.
Result<std::span<const uint8_t>> Buffer(HostCall& call, size_t index) {
  return call.memory().View(static_cast<uint32_t>(call.i32(index)),
                            static_cast<uint32_t>(call.i32(index + 1)));
}

int32_t CodeFor(const Status& status) {
  return status.code() == Code::kLimitExceeded ? kAbiLimit : kAbiInvalid;
}

// Decodes a value argument; on failure stores the ABI code in *code.
std::optional<Value> DecodeArg(std::span<const uint8_t> bytes, const ValueLimits& limits,
                               int32_t* code) {
  auto value = DecodeCbor(bytes, limits);
  if (!value.ok()) {
    *code = CodeFor(value.status());
    return std::nullopt;
  }
  return std::move(*value);
}

// Checks a message argument, kept as bytes; on failure stores the ABI code in *code.
std::optional<CborValue> MessageArg(std::span<const uint8_t> bytes, const ValueLimits& limits,
                                    int32_t* code) {
  auto message = CborValue::FromBytes(bytes, limits);
  if (!message.ok()) {
    *code = CodeFor(message.status());
    return std::nullopt;
  }
  return std::move(*message);
}

// An actor ref argument; nullopt with *code set when it is not one. A ref in its deterministic
// encoding (what every SDK writes) is read in place.
std::optional<ActorRef> RefArg(std::span<const uint8_t> bytes, const ValueLimits& limits,
                               int32_t* code) {
  if (bytes.size() == kCborActorRefBytes) {
    std::string_view id(reinterpret_cast<const char*>(bytes.data()) + 6, kNanoIdLength);
    if (auto ref = ActorRef::Parse(id); ref.ok()) {
      const auto expected = EncodeCborRef(*ref);
      if (std::equal(expected.begin(), expected.end(), bytes.begin())) return *ref;
    }
  }
  auto value = DecodeArg(bytes, limits, code);
  if (!value) return std::nullopt;
  if (!value->is_actor_ref()) {
    *code = kAbiInvalid;
    return std::nullopt;
  }
  return value->as_actor_ref();
}

// Shared body of send and send_from; `sender_index` is the first argument of the explicit
// sender buffer, or -1 for `send` (the actor itself sends).
HostCallOutcome Send(HostCall& call, int sender_index) {
  ActorCallContext& ctx = ContextOf(call);
  size_t first = sender_index < 0 ? 0 : 2;
  std::optional<ActorRef> sender = ctx.self;
  auto reply = [&](int32_t code) {
    call.results()[0] = code;
    return HostCallOutcome::kComplete;
  };

  // Buffers in argument order: [sender,] target, message.
  std::array<std::span<const uint8_t>, 3> buffers;
  for (size_t index = 0; index < call.args().size(); index += 2) {
    auto buffer = Buffer(call, index);
    if (!buffer.ok()) return call.Fail(TrapKind::kHostBounds, buffer.status().message());
    buffers[index / 2] = *buffer;
  }
  std::span<const uint8_t> target_bytes = buffers[first / 2];
  std::span<const uint8_t> message_bytes = buffers[first / 2 + 1];
  int32_t code = kAbiOk;
  if (sender_index >= 0) {
    const bool null = buffers[0].size() == 1 && buffers[0][0] == 0xf6;
    if (null) {
      sender.reset();
    } else {
      sender = RefArg(buffers[0], ctx.value_limits, &code);
      if (!sender) return reply(code);
    }
  }
  auto target = RefArg(target_bytes, ctx.value_limits, &code);
  if (!target) return reply(code);
  auto message = MessageArg(message_bytes, ctx.value_limits, &code);
  if (!message) return reply(code);
  if (ctx.effects.sends.size() >= ctx.transition_limits.max_sends_per_transition) {
    return reply(kAbiLimit);
  }
  ctx.effects.sends.push_back({sender, *target, std::move(*message)});
  return reply(kAbiOk);
}

// The (buf_ptr, buf_cap) convention of `self` and `call_reply`: writes `bytes` to the
// buffer (arguments 0 and 1, already bounds-checked) when they fit, and returns their length.
HostCallOutcome CopyOut(HostCall& call, std::span<const uint8_t> bytes) {
  if (bytes.size() <= static_cast<uint32_t>(call.i32(1))) {
    Status written = call.memory().Write(static_cast<uint32_t>(call.i32(0)), bytes);
    if (!written.ok()) return call.Fail(TrapKind::kHostBounds, written.message());
  }
  call.results()[0] = static_cast<int32_t>(bytes.size());
  return HostCallOutcome::kComplete;
}

// call(target_ptr, target_len, msg_ptr, msg_len, timeout_ms) -> i32: starts a call and
// suspends the invocation until the runtime completes it with the reply's length or a code.
HostCallOutcome Call(HostCall& call) {
  ActorCallContext& ctx = ContextOf(call);
  auto reply = [&](int32_t code) {
    call.results()[0] = code;
    return HostCallOutcome::kComplete;
  };
  auto target_bytes = Buffer(call, 0);
  if (!target_bytes.ok()) return call.Fail(TrapKind::kHostBounds, target_bytes.status().message());
  auto message_bytes = Buffer(call, 2);
  if (!message_bytes.ok()) {
    return call.Fail(TrapKind::kHostBounds, message_bytes.status().message());
  }
  int32_t timeout_ms = call.i32(4);
  if (timeout_ms <= 0 || timeout_ms > kMaxCallTimeoutMs) return reply(kAbiInvalid);
  int32_t code = kAbiOk;
  auto target = RefArg(*target_bytes, ctx.value_limits, &code);
  if (!target) return reply(code);
  auto message = MessageArg(*message_bytes, ctx.value_limits, &code);
  if (!message) return reply(code);
  ctx.call_reply.clear();
  if (!ctx.on_call) return reply(kCallUnavailable);
  code = ctx.on_call(*target, std::move(*message), std::chrono::milliseconds(timeout_ms));
  if (code < 0) return reply(code);
  return HostCallOutcome::kSuspend;
}

// call_reply(buf_ptr, buf_cap) -> i32: copies the last reply, as `self` copies the ref.
HostCallOutcome CallReply(HostCall& call) {
  ActorCallContext& ctx = ContextOf(call);
  auto buffer = Buffer(call, 0);
  if (!buffer.ok()) return call.Fail(TrapKind::kHostBounds, buffer.status().message());
  if (ctx.call_reply.empty()) {
    call.results()[0] = kAbiInvalid;
    return HostCallOutcome::kComplete;
  }
  return CopyOut(call, ctx.call_reply);
}

HostCallOutcome Log(HostCall& call) {
  ActorCallContext& ctx = ContextOf(call);
  int32_t level = call.i32(0);
  auto buffer = Buffer(call, 1);
  if (!buffer.ok()) return call.Fail(TrapKind::kHostBounds, buffer.status().message());
  std::string_view text(reinterpret_cast<const char*>(buffer->data()), buffer->size());
  int32_t code = kAbiOk;
  if (level < 0 || level >= static_cast<int32_t>(kLevelNames.size())) {
    code = kAbiInvalid;
  } else if (level < static_cast<int32_t>(ctx.min_log_level)) {
    // Below the actor's minimum level: neither stored nor checked further (spec 001).
  } else if (!IsValidUtf8(text)) {
    code = kAbiInvalid;
  } else if (text.size() > ctx.transition_limits.max_log_message_bytes) {
    code = kAbiLimit;
  } else {
    ctx.effects.logs.push_back({static_cast<LogLevel>(level), std::string(text)});
    if (ctx.on_log) ctx.on_log(static_cast<LogLevel>(level), ctx.effects.logs.back().message);
  }
  call.results()[0] = code;
  return HostCallOutcome::kComplete;
}

HostCallOutcome Self(HostCall& call) {
  ActorCallContext& ctx = ContextOf(call);
  const auto encoded = EncodeCborRef(ctx.self);
  // The whole buffer must lie in memory, even when the ref does not fit and nothing is written.
  auto buffer = Buffer(call, 0);
  if (!buffer.ok()) return call.Fail(TrapKind::kHostBounds, buffer.status().message());
  return CopyOut(call, encoded);
}

HostCallOutcome Fail(HostCall& call) {
  ActorCallContext& ctx = ContextOf(call);
  auto buffer = Buffer(call, 0);
  if (!buffer.ok()) return call.Fail(TrapKind::kHostBounds, buffer.status().message());
  std::string reason(reinterpret_cast<const char*>(buffer->data()), buffer->size());
  if (!IsValidUtf8(reason)) reason = "(the guest's failure reason was not valid UTF-8)";
  ctx.effects.failure = reason;
  return call.Fail(TrapKind::kGuestFailure, std::move(reason));
}

wasm::HostRegistry BuildRegistry() {
  wasm::HostRegistry registry(std::string(kAbiName), kAbiVersion);
  const ValType i32 = ValType::kI32;
  const wasm::HostFunction rows[] = {
      {"reef",
       "send",
       {{i32, i32, i32, i32}, {i32}},
       [](HostCall& c) { return Send(c, -1); },
       "queue a message to an actor, sent by this actor; delivered if the transition commits"},
      {"reef",
       "send_from",
       {{i32, i32, i32, i32, i32, i32}, {i32}},
       [](HostCall& c) { return Send(c, 0); },
       "queue a message with an explicit sender (an actor ref, or null for the host)"},
      {"reef",
       "call",
       {{i32, i32, i32, i32, i32}, {i32}},
       Call,
       "send a message now and wait (awaiting) for the reply, up to a timeout in ms; returns the "
       "reply's length or an error code"},
      {"reef",
       "call_reply",
       {{i32, i32}, {i32}},
       CallReply,
       "copy the last call's reply (CBOR) to a buffer; returns its length"},
      {"reef",
       "log",
       {{i32, i32, i32}, {i32}},
       Log,
       "log a UTF-8 message (at most 512 bytes) at level 0..5 (trace..fatal)"},
      {"reef", "self", {{i32, i32}, {i32}}, Self, "write this actor's ref (CBOR) to a buffer"},
      {"reef", "fail", {{i32, i32}, {}}, Fail, "end the invocation as a failure with a reason"},
  };
  for (const auto& row : rows) {
    Status added = registry.Add(row);
    (void)added;  // rows are distinct and use i32 only: cannot fail
  }
  return registry;
}

// Runs a small guest export that returns one value to completion within `budget` instructions.
Result<wasm::WasmValue> CallBounded(wasm::Instance& instance, std::string_view name,
                                    std::span<const wasm::WasmValue> args,
                                    ActorCallContext& context, uint64_t budget) {
  // One step, not resumable: the native tier runs it without a fiber.
  std::vector<wasm::WasmValue>& results = context.export_results;
  Status called = instance.CallInto(name, args, results, &context, budget);
  if (called.ok()) {
    if (results.size() != 1) {
      return Status::FailedPrecondition(
          fmt::format("{} returned {} values, not one", name, results.size()));
    }
    return results[0];
  }
  switch (called.code()) {
    case Code::kTrapped:
      return Status::FailedPrecondition(fmt::format("{} trapped: {}", name, called.message()));
    case Code::kLimitExceeded:
      return Status::FailedPrecondition(
          fmt::format("{} did not finish within {} instructions", name, budget));
    default:
      return called;  // it did not start: the export or its arguments
  }
}

// The (ptr, len) argument pairs of up to three inputs placed in guest memory.
struct PlacedInputs {
  std::array<wasm::WasmValue, 6> values;
  size_t count = 0;
  std::span<const wasm::WasmValue> args() const { return {values.data(), count}; }
};

// Places the encoded `inputs` (at most three) in one reef_alloc buffer and returns their
// (ptr, len) pairs.
Result<PlacedInputs> PlaceInputs(wasm::Instance& instance, ActorCallContext& context,
                                 std::initializer_list<std::span<const uint8_t>> inputs) {
  uint64_t total = 0;
  for (std::span<const uint8_t> bytes : inputs) total += bytes.size();
  if (total > UINT32_MAX) return Status::LimitExceeded("the inputs exceed 4 GiB");
  const wasm::WasmValue len[] = {static_cast<int32_t>(total)};
  REEF_ASSIGN_OR_RETURN(wasm::WasmValue allocated,
                        CallBounded(instance, "reef_alloc", len, context, kAllocBudget));
  uint32_t ptr = static_cast<uint32_t>(std::get<int32_t>(allocated));
  if (ptr == 0) {
    return Status::FailedPrecondition(
        fmt::format("reef_alloc({}) returned 0: the guest is out of memory", total));
  }
  // Check the whole allocation before writing any of it.
  if (!instance.memory().View(ptr, static_cast<uint32_t>(total)).ok()) {
    return Status::FailedPrecondition(
        fmt::format("reef_alloc({}) returned [{}, {}), outside memory of {} bytes", total, ptr,
                    uint64_t{ptr} + total, instance.memory().size()));
  }
  PlacedInputs placed;
  for (std::span<const uint8_t> bytes : inputs) {
    Status written = instance.memory().Write(ptr, bytes);
    if (!written.ok()) {
      return Status::FailedPrecondition("reef_alloc returned a buffer outside memory: " +
                                        written.message());
    }
    placed.values.at(placed.count++) = static_cast<int32_t>(ptr);
    placed.values.at(placed.count++) = static_cast<int32_t>(bytes.size());
    ptr += static_cast<uint32_t>(bytes.size());
  }
  return placed;
}

}  // namespace

std::string_view LogLevelName(LogLevel level) {
  return kLevelNames[static_cast<size_t>(level)];
}

Result<LogLevel> ParseLogLevel(std::string_view name) {
  for (size_t i = 0; i < kLevelNames.size(); ++i) {
    if (kLevelNames[i] == name) return static_cast<LogLevel>(i);
  }
  return Status::InvalidArgument(fmt::format(
      "unknown log level '{}'; expected trace, debug, info, warn, error or fatal", name));
}

const wasm::HostRegistry& AbiV1Registry() {
  static const wasm::HostRegistry registry = BuildRegistry();
  return registry;
}

Status CheckActorExports(const wasm::Module& module, std::string_view handler) {
  struct Required {
    std::string_view name;
    wasm::ExternKind kind;
    wasm::FuncSignature signature;
  };
  const ValType i32 = ValType::kI32;
  const Required required[] = {
      {"memory", wasm::ExternKind::kMemory, {}},
      {"reef_abi_version", wasm::ExternKind::kFunc, {{}, {i32}}},
      {"reef_alloc", wasm::ExternKind::kFunc, {{i32}, {i32}}},
      {handler, wasm::ExternKind::kFunc, {{i32, i32, i32, i32, i32, i32}, {ValType::kI64}}},
  };
  std::string problems;
  for (const Required& r : required) {
    const wasm::ExportInfo* e = module.FindExport(r.name);
    bool fits = e != nullptr && e->kind == r.kind &&
                (r.kind != wasm::ExternKind::kFunc || e->signature == r.signature);
    if (fits) continue;  // the common case formats nothing
    std::string want = r.kind == wasm::ExternKind::kFunc ? "function " + r.signature.ToString()
                                                         : std::string("memory");
    if (e == nullptr) {
      problems +=
          fmt::format("{}missing export `{}` ({})", problems.empty() ? "" : "; ", r.name, want);
    } else {
      problems +=
          fmt::format("{}export `{}` must be {}", problems.empty() ? "" : "; ", r.name, want);
    }
  }
  if (const wasm::ExportInfo* hook = module.FindExport("reef_on_shutdown");
      hook != nullptr && !(hook->signature == wasm::FuncSignature{{i32, i32}, {ValType::kI64}})) {
    problems += fmt::format("{}export `reef_on_shutdown` must be function (i32, i32) -> (i64)",
                            problems.empty() ? "" : "; ");
  }
  if (problems.empty()) return Status::Ok();
  return Status::InvalidArgument("not a reef v1 actor module: " + problems);
}

bool HasShutdownHook(const wasm::Module& module) {
  return module.FindExport("reef_on_shutdown") != nullptr;
}

Status CheckAbiVersion(wasm::Instance& instance, ActorCallContext& context) {
  REEF_ASSIGN_OR_RETURN(wasm::WasmValue version,
                        CallBounded(instance, "reef_abi_version", {}, context, kAllocBudget));
  int32_t v = std::get<int32_t>(version);
  if (v != static_cast<int32_t>(kAbiVersion)) {
    return Status::FailedPrecondition(fmt::format(
        "module speaks ABI reef version {}; this host speaks version {}", v, kAbiVersion));
  }
  return Status::Ok();
}

Result<std::unique_ptr<wasm::Invocation>> StartHandle(
    wasm::Instance& instance, ActorCallContext& context, const CborValue& state,
    const std::optional<ActorRef>& sender, const CborValue& message, std::string_view handler,
    StartChecks checks) {
  if (checks == StartChecks::kAll) {
    REEF_RETURN_IF_ERROR(CheckActorExports(instance.module(), handler));
    REEF_RETURN_IF_ERROR(CheckAbiVersion(instance, context));
  }
  static constexpr uint8_t kNull[] = {0xf6};
  std::array<uint8_t, kCborActorRefBytes> sender_ref{};
  std::span<const uint8_t> sender_bytes = kNull;
  if (sender) {
    sender_ref = EncodeCborRef(*sender);
    sender_bytes = sender_ref;
  }
  REEF_ASSIGN_OR_RETURN(
      PlacedInputs placed,
      PlaceInputs(instance, context, {state.bytes(), sender_bytes, message.bytes()}));
  return instance.Start(handler, placed.args(), &context);
}

Result<std::unique_ptr<wasm::Invocation>> StartHandle(wasm::Instance& instance,
                                                      ActorCallContext& context, const Value& state,
                                                      const Value& sender, const Value& message,
                                                      std::string_view handler,
                                                      StartChecks checks) {
  if (!sender.is_null() && !sender.is_actor_ref()) {
    return Status::InvalidArgument(
        fmt::format("sender must be null or an actor ref, not {}", sender.kind_name()));
  }
  REEF_ASSIGN_OR_RETURN(CborValue encoded_state, CborValue::Encode(state, context.value_limits));
  REEF_ASSIGN_OR_RETURN(CborValue encoded_message,
                        CborValue::Encode(message, context.value_limits));
  std::optional<ActorRef> from;
  if (sender.is_actor_ref()) from = sender.as_actor_ref();
  return StartHandle(instance, context, encoded_state, from, encoded_message, handler, checks);
}

Result<std::unique_ptr<wasm::Invocation>> StartShutdown(wasm::Instance& instance,
                                                        ActorCallContext& context,
                                                        const CborValue& state,
                                                        std::string_view handler,
                                                        StartChecks checks) {
  if (checks == StartChecks::kAll) {
    REEF_RETURN_IF_ERROR(CheckActorExports(instance.module(), handler));
  }
  if (!HasShutdownHook(instance.module())) {
    return Status::NotFound("module has no reef_on_shutdown export");
  }
  if (checks == StartChecks::kAll) REEF_RETURN_IF_ERROR(CheckAbiVersion(instance, context));
  REEF_ASSIGN_OR_RETURN(PlacedInputs placed, PlaceInputs(instance, context, {state.bytes()}));
  return instance.Start("reef_on_shutdown", placed.args(), &context);
}

Result<CborValue> ReadNewState(wasm::Instance& instance, const wasm::Invocation& invocation,
                               const ValueLimits& limits) {
  uint64_t packed = static_cast<uint64_t>(std::get<int64_t>(invocation.results().at(0)));
  uint32_t ptr = static_cast<uint32_t>(packed);
  uint32_t len = static_cast<uint32_t>(packed >> 32);
  auto bytes = instance.memory().View(ptr, len);
  if (!bytes.ok()) return bytes.status().WithContext("new state");
  auto state = CborValue::FromBytes(*bytes, limits);
  if (!state.ok()) return state.status().WithContext("new state");
  return std::move(*state);
}

Result<Value> DecodeNewState(wasm::Instance& instance, const wasm::Invocation& invocation,
                             const ValueLimits& limits) {
  REEF_ASSIGN_OR_RETURN(CborValue state, ReadNewState(instance, invocation, limits));
  return state.ToValue();
}

}  // namespace reef::actor
