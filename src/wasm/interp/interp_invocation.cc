#include <fmt/format.h>

#include <algorithm>

#include "wasm/interp/interp_backend.h"
#include "wasm/interp/wabt_access.h"

namespace reef::wasm {

namespace interp = wabt::interp;

namespace {
// The interpreter runs in chunks of at most this many of its own instructions (fewer near the
// value stack limit); between chunks the engine checks the value stack. Chunks do not count:
// the metering code in the module decides where a slice ends (wasm/detail/meter.h).
constexpr uint64_t kChunk = 4096;
// The most fuel one Run adds (a larger budget means "run until done"), so the i64 fuel never
// overflows.
constexpr uint64_t kMaxSliceBudget = uint64_t{1} << 62;
}  // namespace

InterpInvocation::InterpInvocation(std::shared_ptr<InterpBackend> state, InterpInstance* instance,
                                   std::unique_ptr<interp::Thread> thread,
                                   const interp::ValueTypes& results, void* context,
                                   bool host_calls)
    : engine_(std::move(state)),
      instance_(instance),
      thread_(std::move(thread)),
      result_types_(&results),
      context_(context),
      host_calls_allowed_(host_calls) {}

InterpInvocation::~InterpInvocation() {
  if (thread_) engine_->ReleaseThread(std::move(thread_));
  instance_->EndInvocation();
}

RunState InterpInvocation::Run(uint64_t budget) {
  if (state_ != RunState::kBudgetExhausted || budget == 0 || in_run_) return state_;
  const uint32_t max_depth = engine_->limits.max_nested_invocations;
  if (engine_->run_depth >= max_depth) {
    Trap trap =
        TrapFromFrames(detail::TooManyNestedInvocationsMessage(engine_->run_depth, max_depth));
    trap.kind = TrapKind::kHostError;
    TrapWith(std::move(trap));
    return state_;
  }
  // A slice gets its budget plus any debt of the last one (fuel left over by a slice that
  // ended in a host call is not carried).
  budget = std::min(budget, kMaxSliceBudget);
  instance_->set_fuel(std::min<int64_t>(instance_->fuel(), 0) + static_cast<int64_t>(budget));
  if (instance_->fuel() < 0) {  // blocks charged before the last check still owe more
    instructions_ += budget;
    return state_;
  }
  if (in_meter_) {  // leave the out-of-fuel function: the guest goes on after its check
    detail::PopCall(*thread_);
    in_meter_ = false;
  }
  // A host function of an outer invocation may run this one: restore the outer one after.
  InterpInvocation* const outer = engine_->running;
  engine_->running = this;
  ++engine_->run_depth;
  in_run_ = true;
  RunChunks();
  in_run_ = false;
  --engine_->run_depth;
  engine_->running = outer;
  // A slice that ran out of fuel is charged its budget; its debt is charged by the slices
  // that pay it. Any other slice is charged what it ran: the budget minus the fuel left
  // (more than the budget when the blocks after the last check overshot it).
  const int64_t left = instance_->fuel();
  const bool out_of_fuel = state_ == RunState::kBudgetExhausted && in_meter_;
  instructions_ += out_of_fuel ? budget : budget - left;
  // A slice that suspended in a host call was charged its overshoot already: it is no debt
  // of the next slice (that would count it twice).
  if (state_ == RunState::kSuspended && left < 0) instance_->set_fuel(0);
  return state_;
}

void InterpInvocation::RunChunks() {
  // One instruction adds at most one operand, or a whole frame of locals when it enters a
  // call; chunks are sized so that even the worst case stays within max_value_stack.
  const uint64_t growth = uint64_t{instance_->module().max_frame_values()} + 8;
  const uint64_t limit = engine_->limits.max_value_stack;
  while (state_ == RunState::kBudgetExhausted) {
    uint64_t used = detail::Values(*thread_).size();
    uint64_t headroom = used < limit ? limit - used : 0;
    if (headroom < growth) {
      TrapWith(TrapFromFrames(fmt::format(
          "value stack exhausted: {} of {} values in use and the next instruction may need {} "
          "(limit max_value_stack)",
          used, limit, growth)));
      return;
    }
    uint64_t chunk = std::min(kChunk, headroom / growth);
    interp::Trap::Ptr trap;
    interp::RunResult result = thread_->Run(static_cast<int>(chunk), &trap);
    if (result == interp::RunResult::Ok && !trap) continue;
    if (result == interp::RunResult::Return && !trap) {
      Finish();
    } else if (out_of_fuel_) {
      out_of_fuel_ = false;
      in_meter_ = true;
      engine_->NoteGarbage();  // the "out of fuel" trap object wabt left in the store
      return;
    } else if (suspend_requested_) {
      suspend_requested_ = false;
      state_ = RunState::kSuspended;
      engine_->NoteGarbage();  // the trap object that stopped the thread
    } else if (host_trap_) {
      Trap t = std::move(*host_trap_);
      host_trap_.reset();
      TrapWith(std::move(t));
    } else {
      // Includes wabt 1.0.32's call_indirect path, which records "call stack exhausted" in
      // the trap but keeps running: any recorded trap ends the invocation.
      std::string message = trap ? trap->message() : "uncaught exception";
      TrapWith(TrapFromFrames(std::move(message)));
    }
  }
}

wabt::Result InterpInvocation::OnOutOfFuel(interp::Trap::Ptr* out_trap) {
  out_of_fuel_ = true;
  *out_trap = interp::Trap::New(engine_->store, "out of fuel");
  return wabt::Result::Error;
}

void InterpInvocation::Finish() {
  interp::Values values;
  detail::PopValues(*thread_, *result_types_, &values);
  results_.clear();
  for (size_t i = 0; i < values.size(); ++i) {
    results_.push_back(FromInterpValue(values[i], (*result_types_)[i]));
  }
  state_ = RunState::kFinished;
  engine_->ReleaseThread(std::move(thread_));
}

void InterpInvocation::TrapWith(Trap trap) {
  trap_ = std::move(trap);
  state_ = RunState::kTrapped;
  suspended_in_.clear();
  engine_->ReleaseThread(std::move(thread_));
  engine_->NoteGarbage();
}

void InterpInvocation::TrapBeforeRun(const interp::Trap::Ptr& trap) {
  TrapWith(TrapFromFrames(trap ? trap->message() : "trap"));
}

std::pair<std::string, uint32_t> InterpInvocation::TopFrame() const {
  const auto& frames = detail::Frames(*thread_);
  if (frames.empty()) return {"", 0};
  // Paused out of fuel, the top frame is the out-of-fuel function's: report its caller.
  const interp::Frame& top =
      in_meter_ && frames.size() > 1 ? frames[frames.size() - 2] : frames.back();
  if (top.inst == nullptr) return {suspended_in_, 0};  // a host frame
  uint32_t start = 0;
  std::string name = instance_->compiled().FunctionAt(top.offset, &start);
  return {std::move(name), top.offset - start};
}

Trap InterpInvocation::TrapFromFrames(std::string message) const {
  Trap trap;
  trap.kind = ClassifyTrapMessage(message);
  trap.message = std::move(message);
  std::tie(trap.function, trap.offset) = TopFrame();
  return trap;
}

Telemetry InterpInvocation::telemetry() const {
  Telemetry t;
  t.instructions = instructions_;
  if (thread_) {
    // Paused out of fuel, the out-of-fuel function's frame is not the guest's.
    t.call_depth = static_cast<uint32_t>(detail::Frames(*thread_).size()) - (in_meter_ ? 1 : 0);
    std::tie(t.function, t.offset) = TopFrame();
  }
  return t;
}

wabt::Result InterpInvocation::OnHostCall(size_t row, const interp::Values& params,
                                          interp::Values& results, interp::Trap::Ptr* out_trap) {
  const HostFunction& f = engine_->registry.functions()[row];
  std::string qualified = f.module + "." + f.name;
  if (!host_calls_allowed_) {
    host_trap_ =
        Trap{TrapKind::kHostError, detail::HostCallFromStartMessage(qualified), qualified, 0};
    *out_trap = interp::Trap::New(engine_->store, host_trap_->message);
    return wabt::Result::Error;
  }
  std::vector<WasmValue> args;
  for (size_t i = 0; i < params.size(); ++i) {
    args.push_back(FromInterpValue(params[i], detail::ToWabtType(f.signature.params[i])));
  }
  std::vector<WasmValue> outs;
  for (ValType t : f.signature.results) {
    outs.push_back(FromInterpValue(interp::Value::Make(uint64_t{0}), detail::ToWabtType(t)));
  }
  HostCall call(args, outs, *instance_, context_);
  switch (f.handler(call)) {
    case HostCallOutcome::kComplete:
      for (size_t i = 0; i < outs.size(); ++i) results[i] = ToInterpValue(outs[i]);
      return wabt::Result::Ok;
    case HostCallOutcome::kSuspend:
      suspend_requested_ = true;
      suspended_in_ = qualified;
      suspended_function_ = &f;
      *out_trap = interp::Trap::New(engine_->store, "suspended in host call " + qualified);
      return wabt::Result::Error;
    case HostCallOutcome::kTrap:
      host_trap_ = call.trap();
      host_trap_->function = qualified;
      *out_trap = interp::Trap::New(engine_->store, host_trap_->message);
      return wabt::Result::Error;
  }
  return wabt::Result::Error;
}

Status InterpInvocation::CompleteHostCall(std::span<const WasmValue> results) {
  REEF_RETURN_IF_ERROR(
      detail::CheckHostCallResults(state_, suspended_function_, suspended_in_, results));
  const FuncSignature& sig = suspended_function_->signature;
  // Pop the host frame (the caller's pc is already past the call), then push the results
  // as if the host function had returned them.
  detail::PopCall(*thread_);
  interp::ValueTypes types;
  interp::Values values;
  for (size_t i = 0; i < results.size(); ++i) {
    types.push_back(detail::ToWabtType(sig.results[i]));
    values.push_back(ToInterpValue(results[i]));
  }
  detail::PushValues(*thread_, types, values);
  suspended_in_.clear();
  suspended_function_ = nullptr;
  state_ = RunState::kBudgetExhausted;
  return Status::Ok();
}

Status InterpInvocation::FailHostCall(TrapKind kind, std::string message) {
  REEF_RETURN_IF_ERROR(detail::CheckSuspended(state_));
  std::string function = suspended_in_;
  TrapWith(Trap{kind, std::move(message), std::move(function), 0});
  return Status::Ok();
}

}  // namespace reef::wasm
