// NativeInvocation (native_backend.h): one guest call on a fiber, run in budgeted slices.
//
// The guest runs on the invocation's fiber inside rt::RunGuarded, so a trap unwinds to the
// fiber's own frame. It leaves the fiber in three ways: it returns or traps (the body ends),
// its fuel runs out at a check (the meter table's function suspends the fiber), or a host
// function suspends (OnHostCall suspends the fiber). The next Run resumes it exactly there.
// Destroying or failing a suspended invocation cancels its fiber: resumed once more, the
// suspension point unwinds with rt::kCancelled through generated C frames only.
#include <fmt/format.h>

#include <algorithm>
#include <exception>

#include "wasm/native/native_backend.h"
#include "wasm/native/rt/wasm-rt.h"

namespace reef::wasm::native {
namespace {

// The most fuel one Run adds (a larger budget means "run until done"), so the i64 fuel never
// overflows.
constexpr uint64_t kMaxSliceBudget = uint64_t{1} << 62;
// Stack a host function needs below it on the fiber: with less left, the call traps
// call_stack_exhausted instead of running C++ code that could reach the guard page.
constexpr size_t kHostStackBytes = 256 * 1024;

WasmValue FromRt(const reef_rt_value& v, ValType type) {
  switch (type) {
    case ValType::kI64:
      return static_cast<int64_t>(v.i64);
    case ValType::kF32:
      return v.f32;
    case ValType::kF64:
      return v.f64;
    default:
      return static_cast<int32_t>(v.i32);
  }
}

reef_rt_value ToRt(const WasmValue& value) {
  reef_rt_value out{};
  std::visit(
      [&out](auto v) {
        using T = decltype(v);
        if constexpr (std::is_same_v<T, int32_t>) out.i32 = static_cast<uint32_t>(v);
        if constexpr (std::is_same_v<T, int64_t>) out.i64 = static_cast<uint64_t>(v);
        if constexpr (std::is_same_v<T, float>) out.f32 = v;
        if constexpr (std::is_same_v<T, double>) out.f64 = v;
      },
      value);
  return out;
}

// Counts a host function's frame toward the invocation's depth while it runs.
class HostFrame {
 public:
  HostFrame() : entered_(rt::EnterHostFrame(kHostStackBytes)) {}
  ~HostFrame() {
    if (entered_) rt::LeaveHostFrame();
  }
  HostFrame(const HostFrame&) = delete;
  HostFrame& operator=(const HostFrame&) = delete;
  bool entered() const { return entered_; }

 private:
  bool entered_;
};

// Freed invocations kept for reuse on this thread (Start allocates none in steady state).
// Set when this thread's cache is destroyed (thread exit): invocations freed later (by other
// thread-locals' destructors) go straight back to the heap.
thread_local bool t_invocation_cache_gone = false;

class InvocationCache {
 public:
  static constexpr size_t kMaxKept = 16;
  ~InvocationCache() {
    t_invocation_cache_gone = true;
    for (void* block : blocks_) ::operator delete(block);
  }
  void* Take() {
    if (blocks_.empty()) return nullptr;
    void* block = blocks_.back();
    blocks_.pop_back();
    return block;
  }
  bool Keep(void* block) {
    if (blocks_.size() >= kMaxKept) return false;
    blocks_.push_back(block);
    return true;
  }

 private:
  std::vector<void*> blocks_;
};

thread_local InvocationCache t_invocation_cache;

}  // namespace

void* NativeInvocation::operator new(size_t size) {
  if (size == sizeof(NativeInvocation) && !t_invocation_cache_gone) {
    if (void* block = t_invocation_cache.Take()) return block;
  }
  return ::operator new(size);
}

void NativeInvocation::operator delete(void* pointer) {
  if (pointer == nullptr) return;
  if (!t_invocation_cache_gone && t_invocation_cache.Keep(pointer)) return;
  ::operator delete(pointer);
}

NativeInvocation::NativeInvocation(NativeInstance* instance, GlueEntryPoints::Thunk thunk,
                                   std::span<const WasmValue> args, const FuncSignature& signature,
                                   std::string_view function, void* context,
                                   bool host_calls_allowed)
    : instance_(instance),
      backend_(instance->backend()),
      thunk_(thunk),
      buffers_(instance->buffers),
      signature_(signature),
      function_(function),
      context_(context),
      host_calls_allowed_(host_calls_allowed) {
  buffers_.args.resize(std::max<size_t>(args.size(), 1));
  buffers_.rt_results.resize(std::max<size_t>(signature.results.size(), 1));
  buffers_.results.clear();
  for (size_t i = 0; i < args.size(); ++i) buffers_.args[i] = ToRt(args[i]);
  instance_->active = this;
  instance_->fuel() = 0;
}

NativeInvocation::~NativeInvocation() {
  Cancel();
  instance_->active = nullptr;
}

void NativeInvocation::set_start(void (*start)(void* instance), std::string name) {
  start_ = start;
  start_name_ = std::move(name);
  function_ = start_name_;
}

RunState NativeInvocation::Run(uint64_t budget) {
  if (!BeginSlice(budget)) return state_;
  if (fiber_ == nullptr) {
    auto fiber = backend_.AcquireFiber();
    if (!fiber.ok()) {
      TrapWith(Trap{TrapKind::kHostError,
                    "cannot start the invocation: " + fiber.status().message(),
                    std::string(function_), 0});
      return state_;
    }
    fiber_ = std::move(*fiber);
    fiber_->Assign(this);
    const StackPool::Stack& stack = fiber_->stack();
    fiber_state_ = rt::FiberThreadState(stack.base, stack.base + stack.guard, instance_->host());
  }
  NativeInvocation* const outer = backend_.running;
  EnterSlice();
  Resume();
  LeaveSlice(outer, budget);
  if (state_ == RunState::kFinished || state_ == RunState::kTrapped) ReleaseFiber();
  return state_;
}

RunState NativeInvocation::RunOnce(uint64_t budget) {
  if (!rt::CanCallOnStack()) return Run(budget);
  if (started_ || once_ || !BeginSlice(budget)) return state_;
  backend_.PrepareOverflowTraps();
  auto stack = backend_.stacks.Acquire();
  if (!stack.ok()) {
    TrapWith(Trap{TrapKind::kHostError, "cannot start the invocation: " + stack.status().message(),
                  std::string(function_), 0});
    return state_;
  }
  once_ = true;
  started_ = true;
  // Puts the thread, the stack and the backend back however the run ends: Body may throw
  // (out of memory recording a trap or the results), and the exception crosses the
  // trampoline back to here.
  struct Restore {
    NativeInvocation* self;
    NativeInvocation* outer;
    StackPool::Stack stack;
    rt::ThreadState outer_state;
    uint64_t budget;
    ~Restore() {
      rt::ExchangeThreadState(outer_state);
      self->backend_.stacks.Release(stack);
      self->LeaveSlice(outer, budget);
    }
  };
  NativeInvocation* const outer = backend_.running;
  EnterSlice();
  const Restore restore{this, outer, *stack,
                        rt::ExchangeThreadState(rt::FiberThreadState(
                            stack->base, stack->base + stack->guard, instance_->host())),
                        budget};
  rt::CallOnStack(
      stack->base + stack->size, [](void* self) { Body(static_cast<NativeInvocation*>(self)); },
      this);
  return state_;
}

bool NativeInvocation::BeginSlice(uint64_t& budget) {
  if (state_ != RunState::kBudgetExhausted || budget == 0 || in_run_ || once_) return false;
  const uint32_t max_depth = backend_.limits.max_nested_invocations;
  if (backend_.run_depth >= max_depth) {
    Cancel();
    TrapWith(Trap{TrapKind::kHostError,
                  wasm::detail::TooManyNestedInvocationsMessage(backend_.run_depth, max_depth),
                  std::string(function_), 0});
    return false;
  }
  // A slice gets its budget plus any debt of the last one (fuel left over by a slice that
  // ended in a host call is not carried).
  budget = std::min(budget, kMaxSliceBudget);
  int64_t& fuel = instance_->fuel();
  fuel = std::min<int64_t>(fuel, 0) + static_cast<int64_t>(budget);
  if (fuel < 0) {  // blocks charged before the last check still owe more
    instructions_ += budget;
    return false;
  }
  return true;
}

void NativeInvocation::EnterSlice() {
  // A host function of an outer invocation may run this one: LeaveSlice restores the outer.
  backend_.running = this;
  ++backend_.run_depth;
  in_run_ = true;
  out_of_fuel_ = false;
}

void NativeInvocation::LeaveSlice(NativeInvocation* outer, uint64_t budget) {
  in_run_ = false;
  --backend_.run_depth;
  backend_.running = outer;
  // A slice that ran out of fuel is charged its budget; its debt is charged by the slices
  // that pay it. Any other slice is charged what it ran: the budget minus the fuel left
  // (more than the budget when the blocks after the last check overshot it).
  int64_t& fuel = instance_->fuel();
  const int64_t left = fuel;
  instructions_ += out_of_fuel_ ? budget : budget - left;
  // A slice that suspended in a host call was charged its overshoot already: it is no debt
  // of the next slice (that would count it twice).
  if (state_ == RunState::kSuspended && left < 0) fuel = 0;
}

void NativeInvocation::Resume() {
  started_ = true;
  const rt::ThreadState outer = rt::ExchangeThreadState(fiber_state_);
  fiber_->Resume();
  fiber_state_ = rt::ExchangeThreadState(outer);
}

void NativeInvocation::ReleaseFiber() {
  if (fiber_ != nullptr) backend_.ReleaseFiber(std::move(fiber_));
}

void NativeInvocation::Cancel() {
  if (fiber_ == nullptr) return;
  if (started_ && (state_ == RunState::kBudgetExhausted || state_ == RunState::kSuspended)) {
    // Suspended in the guest: its suspension point unwinds (rt::kCancelled) and the fiber
    // parks again.
    cancelling_ = true;
    Resume();
  }
  ReleaseFiber();
}

void NativeInvocation::Body(NativeInvocation* self) {
  const rt::RunOutcome outcome = rt::RunGuarded(
      [](void* p) {
        auto* invocation = static_cast<NativeInvocation*>(p);
        void* instance = invocation->instance_->instance_struct();
        if (invocation->start_ != nullptr) {
          invocation->start_(instance);
        } else {
          invocation->thunk_(instance, invocation->buffers_.args.data(),
                             invocation->buffers_.rt_results.data());
        }
      },
      self, self->backend_.limits.max_call_depth, nullptr,
      rt::FuelHome{&self->instance_->fuel(), self->instance_->fuel_in_register()});
  if (outcome.cancelled()) return;
  if (outcome.trapped()) {
    if (outcome.code >= rt::kHostTrapBase && self->host_trap_.has_value()) {
      Trap trap = std::move(*self->host_trap_);
      self->host_trap_.reset();
      self->TrapWith(std::move(trap));
    } else {
      self->TrapWith(
          Trap{outcome.kind(), std::string(outcome.message()), std::string(self->function_), 0});
    }
    return;
  }
  std::vector<WasmValue>& results = self->buffers_.results;
  results.clear();
  for (size_t i = 0; i < self->signature_.results.size(); ++i) {
    results.push_back(FromRt(self->buffers_.rt_results[i], self->signature_.results[i]));
  }
  self->state_ = RunState::kFinished;
}

void NativeInvocation::TrapWith(Trap trap) {
  trap_ = std::move(trap);
  state_ = RunState::kTrapped;
  suspended_in_.clear();
  suspended_function_ = nullptr;
}

int NativeInvocation::OnOutOfFuel() {
  if (!rt::EnterHostFrame(0)) return WASM_RT_TRAP_EXHAUSTION;
  rt::LeaveHostFrame();
  out_of_fuel_ = true;
  if (once_) return rt::kCancelled;  // RunOnce: the call ends here, out of budget
  return Resumed(fiber_->Suspend()) ? 0 : rt::kCancelled;
}

uint32_t NativeInvocation::OnHostCall(uint32_t index, const reef_rt_value* args,
                                      reef_rt_value* results) {
  const HostFunction& f = instance_->import(index);
  // "module.name", built only when a trap or a suspension needs it.
  auto qualified = [&f] { return f.module + "." + f.name; };
  auto fail = [&](TrapKind kind, std::string message) {
    host_trap_ = Trap{kind, std::move(message), qualified(), 0};
    return static_cast<uint32_t>(kind) + 1;
  };
  if (!host_calls_allowed_) {
    return fail(TrapKind::kHostError, wasm::detail::HostCallFromStartMessage(qualified()));
  }
  const HostFrame frame;
  if (!frame.entered()) return fail(TrapKind::kCallStackExhausted, "call stack exhausted");
  try {
    std::vector<WasmValue>& in = buffers_.host_in;
    std::vector<WasmValue>& out = buffers_.host_out;
    in.clear();
    for (size_t i = 0; i < f.signature.params.size(); ++i) {
      in.push_back(FromRt(args[i], f.signature.params[i]));
    }
    out.clear();
    for (ValType type : f.signature.results) out.push_back(FromRt(reef_rt_value{}, type));
    HostCall call(in, out, *instance_, context_);
    switch (f.handler(call)) {
      case HostCallOutcome::kComplete:
        break;
      case HostCallOutcome::kSuspend:
        state_ = RunState::kSuspended;
        suspended_in_ = qualified();
        suspended_function_ = &f;
        // RunOnce cannot wait: the call ends here, suspended. Otherwise CompleteHostCall
        // puts the results, checked, in `out`.
        if (once_ || !Resumed(fiber_->Suspend())) return REEF_RT_CANCELLED;
        break;
      case HostCallOutcome::kTrap:
        return fail(call.trap().kind, call.trap().message);
    }
    for (size_t i = 0; i < out.size(); ++i) {
      if (TypeOf(out[i]) != f.signature.results[i]) {
        return fail(TrapKind::kHostError, "host function wrote a result of the wrong type");
      }
      results[i] = ToRt(out[i]);
    }
    return 0;
  } catch (const std::exception& e) {
    return fail(TrapKind::kHostError, fmt::format("host function threw: {}", e.what()));
  } catch (...) {
    return fail(TrapKind::kHostError, "host function threw");
  }
}

Status NativeInvocation::CompleteHostCall(std::span<const WasmValue> results) {
  REEF_RETURN_IF_ERROR(
      wasm::detail::CheckHostCallResults(state_, suspended_function_, suspended_in_, results));
  buffers_.host_out.assign(results.begin(), results.end());
  suspended_in_.clear();
  suspended_function_ = nullptr;
  state_ = RunState::kBudgetExhausted;
  return Status::Ok();
}

Status NativeInvocation::FailHostCall(TrapKind kind, std::string message) {
  REEF_RETURN_IF_ERROR(wasm::detail::CheckSuspended(state_));
  Trap trap{kind, std::move(message), suspended_in_, 0};
  Cancel();
  TrapWith(std::move(trap));
  return Status::Ok();
}

Telemetry NativeInvocation::telemetry() const {
  Telemetry t;
  t.instructions = instructions_;
  if (state_ == RunState::kBudgetExhausted || state_ == RunState::kSuspended) {
    t.call_depth = rt::ActiveFrames(fiber_state_, backend_.limits.max_call_depth);
    t.function = suspended_in_.empty() ? std::string(function_) : suspended_in_;
  }
  return t;
}

}  // namespace reef::wasm::native
