// The native tier behind Reef's engine interface: modules compiled ahead of time to machine
// code (native_module.h), metered like the interpreter's (wasm/detail/meter.h), each
// invocation running on a fiber of its own (fiber.h) so it can stop in the middle (out of
// fuel, a host call that suspends) and go on later exactly there. Internal types shared by
// native_backend.cc and native_invocation.cc.
//
// Thread ownership: reactor-owned, like the Engine that owns the backend. A fiber is resumed
// only on the thread that started it.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "wasm/detail/backend.h"
#include "wasm/detail/linear_memory.h"
#include "wasm/detail/memory_image.h"
#include "wasm/detail/meter.h"
#include "wasm/engine.h"
#include "wasm/native/code_source.h"
#include "wasm/native/fiber.h"
#include "wasm/native/native_module.h"
#include "wasm/native/rt/runtime.h"

extern "C" {
struct reef_rt_host;
union reef_rt_value;
}

namespace reef::wasm::native {

class NativeInvocation;

// A module compiled for the native tier, with what instances of it share.
struct CompiledNative {
  std::shared_ptr<const NativeModule> code;  // of the metered module
  wasm::detail::MeterLayout meter;
  // The glue's thunk of each of the module's exports (Module::exports() order); null for
  // exports that are not host-callable functions.
  std::vector<GlueEntryPoints::Thunk> thunks;
  // State right after instantiation (segments applied, start function run), taken from the
  // first instance: instantiation is deterministic (start functions may not call the host).
  bool has_snapshot = false;
  wasm::detail::MemoryImage initial_memory;
  std::vector<std::string> initial_globals;  // each global's bytes; mutable ones restored
};

// A fiber that runs invocations one after another and parks between them, so starting an
// invocation costs two stack switches and no allocation (NativeBackend keeps parked ones).
class InvocationFiber {
 public:
  // A new fiber on a stack of `pool` (REQUIRES: the pool outlives it). Errors: those of
  // StackPool::Acquire.
  static Result<std::unique_ptr<InvocationFiber>> Create(StackPool& pool);
  // Gives the parked fiber the invocation its next Resume starts (null: none).
  void Assign(NativeInvocation* job) { job_ = job; }
  // Runs the assigned invocation until it suspends, or ends and the fiber parks.
  void Resume() { fiber_->Resume(); }
  // From inside the invocation: back to Resume's caller. False when the fiber is being
  // destroyed (the invocation must end without suspending again).
  [[nodiscard]] bool Suspend() { return fiber_->Suspend(); }
  const StackPool::Stack& stack() const { return fiber_->stack(); }

 private:
  InvocationFiber() = default;
  std::unique_ptr<Fiber> fiber_;
  NativeInvocation* job_ = nullptr;
};

// Vectors an invocation borrows from its instance and gives back when it ends, so a call
// allocates none once the instance has run one of the same shape.
struct InvocationBuffers {
  std::vector<reef_rt_value> args;        // the thunk's arguments
  std::vector<reef_rt_value> rt_results;  // the thunk's results
  std::vector<WasmValue> results;         // Invocation::results()
  std::vector<WasmValue> host_in;         // a host call's arguments
  std::vector<WasmValue> host_out;        // a host call's results
};

struct NativeBackend final : wasm::detail::Backend, std::enable_shared_from_this<NativeBackend> {
  NativeBackend(const HostRegistry& host_registry, const EngineLimits& engine_limits,
                std::shared_ptr<CodeSource> code_source);

  Tier tier() const override { return Tier::kNative; }
  void ReleaseThreadResources() override { idle_fibers.clear(); }
  Result<std::unique_ptr<Instance>> Instantiate(const std::shared_ptr<const Module>& module,
                                                std::span<const size_t> import_rows) override;

  // The compiled form of `module`, from the code source (compiled there on first use).
  Result<std::shared_ptr<CompiledNative>> Compile(const std::shared_ptr<const Module>& module);

  const HostRegistry& registry;
  const EngineLimits limits;
  const std::shared_ptr<CodeSource> code;
  StackPool stacks;
  // The registered function-type id of `() -> ()`, the out-of-fuel function's type.
  const uint32_t out_of_fuel_type;
  std::unordered_map<std::string, std::shared_ptr<CompiledNative>> compiled;  // by module id
  // The invocation whose fiber runs now, if any (the innermost when host functions nest
  // invocations), and how many Runs are active on this engine's thread.
  NativeInvocation* running = nullptr;
  uint32_t run_depth = 0;

  // A parked fiber, or a new one (the first on this thread also prepares stack overflow
  // traps). Errors: those of InvocationFiber::Create.
  Result<std::unique_ptr<InvocationFiber>> AcquireFiber();
  // Parks `fiber` (its invocation ended) for the next invocation, or destroys it when
  // kMaxIdleFibers are parked already.
  void ReleaseFiber(std::unique_ptr<InvocationFiber> fiber);
  static constexpr size_t kMaxIdleFibers = 8;
  // rt::PrepareStackOverflowTraps, once per backend (thread), before its first guest stack.
  void PrepareOverflowTraps();
  bool overflow_traps_prepared = false;
  std::vector<std::unique_ptr<InvocationFiber>> idle_fibers;  // destroyed before `stacks`
};

class NativeInstance final : public Instance, public wasm::detail::LinearMemory {
 public:
  // Use Create.
  NativeInstance(std::shared_ptr<NativeBackend> backend, std::shared_ptr<CompiledNative> compiled,
                 std::vector<const HostFunction*> imports);
  ~NativeInstance() override;
  NativeInstance(const NativeInstance&) = delete;
  NativeInstance& operator=(const NativeInstance&) = delete;

  // Allocates and instantiates (segments; the start function runs separately).
  // Errors: LimitExceeded out of memory; Trapped "instantiation trapped: <message>".
  static Result<std::unique_ptr<NativeInstance>> Create(std::shared_ptr<NativeBackend> backend,
                                                        std::shared_ptr<CompiledNative> compiled,
                                                        std::vector<const HostFunction*> imports);

  // Instance
  const Module& module() const override { return compiled_->code->module(); }
  GuestMemory& memory() override { return *this; }
  Tier tier() const override { return Tier::kNative; }
  Result<std::unique_ptr<Invocation>> Start(std::string_view name, std::span<const WasmValue> args,
                                            void* context) override;
  // Runs the call to its end on a pooled stack without a fiber (NativeInvocation::RunOnce).
  Status CallInto(std::string_view name, std::span<const WasmValue> args,
                  std::vector<WasmValue>& results, void* context, uint64_t budget) override;
  Status Reset() override;
  Result<WasmValue> GetGlobal(std::string_view name) const override;

  // The start function as an invocation that may not call the host. REQUIRES: has_start().
  std::unique_ptr<Invocation> StartStartFunction();
  // Records the post-instantiation state in the compiled module (first instance only).
  void TakeSnapshot();

  NativeBackend& backend() { return *backend_; }
  const CompiledNative& compiled() const { return *compiled_; }
  void* instance_struct() { return instance_; }
  ::reef_rt_host* host();  // what reef_rt_current_host returns while this instance runs
  const HostFunction& import(uint32_t index) const { return *imports_[index]; }
  // The metering fuel (wasm/detail/meter.h): a slice stops at a check that finds it below 0.
  int64_t& fuel() { return *fuel_; }
  // The code keeps the fuel in a register while it runs (rt/runtime.h FuelHome).
  bool fuel_in_register() const { return compiled_->code->entry_points().fuel_in_register; }
  // The invocation running on this instance now (set by NativeInvocation while active).
  NativeInvocation* active = nullptr;
  // The buffers of the invocation that is active (one at a time), kept for the next one.
  InvocationBuffers buffers;

 private:
  // Export `name` checked as Start documents, with its thunk.
  struct Callable {
    const ExportInfo* info;
    GlueEntryPoints::Thunk thunk;
  };
  Result<Callable> FindCallable(std::string_view name, std::span<const WasmValue> args);
  // The last two exports FindCallable found: callers call the same few again and again (an
  // actor: reef_alloc, then its handler), so both stay found.
  struct Found {
    std::string name;
    Callable callable{nullptr, nullptr};
  };
  std::array<Found, 2> found_;
  size_t next_found_ = 0;  // the entry the next new export replaces

 public:
  struct HostBlock;  // reef_rt_host + back pointer: every import module's instance pointer

 private:
  // detail::LinearMemory (memory 0)
  bool has_memory() const override { return memory_ != nullptr; }
  uint8_t* base() const override;
  void Written(uint32_t ptr, uint32_t len) override;
  uint64_t byte_size() const override;
  static uint32_t CallImport(::reef_rt_host* host, uint32_t index, const ::reef_rt_value* args,
                             ::reef_rt_value* results);

  std::shared_ptr<NativeBackend> backend_;
  std::shared_ptr<CompiledNative> compiled_;
  std::vector<const HostFunction*> imports_;
  std::unique_ptr<HostBlock> host_;
  void* instance_ = nullptr;  // the generated instance struct (calloc'ed)
  bool instantiated_ = false;
  struct wasm_rt_memory_t* memory_ = nullptr;  // memory 0, or null
  int64_t* fuel_ = nullptr;
};

class NativeInvocation final : public Invocation {
 public:
  // One call of `thunk` with `args` (typed as `signature` says). `host_calls_allowed` is false
  // for the start function. `function` names the call in traps and telemetry.
  NativeInvocation(NativeInstance* instance, GlueEntryPoints::Thunk thunk,
                   std::span<const WasmValue> args, const FuncSignature& signature,
                   std::string_view function, void* context, bool host_calls_allowed);
  ~NativeInvocation() override;
  NativeInvocation(const NativeInvocation&) = delete;
  NativeInvocation& operator=(const NativeInvocation&) = delete;

  // Invocations are allocated from a small per-thread cache of freed ones.
  static void* operator new(size_t size);
  static void operator delete(void* pointer);

  RunState Run(uint64_t budget) override;
  // Runs a fresh invocation to its end with `budget` in one go, on a pooled stack with no
  // fiber (rt::CallOnStack; on a fiber where that is unavailable). It cannot suspend: running
  // out of fuel leaves it kBudgetExhausted, a host call that suspends leaves it kSuspended,
  // and either way it is over (Instance::Call's errors). Charged like Run.
  RunState RunOnce(uint64_t budget);
  Status CompleteHostCall(std::span<const WasmValue> results) override;
  Status FailHostCall(TrapKind kind, std::string message) override;
  RunState state() const override { return state_; }
  const std::vector<WasmValue>& results() const override { return buffers_.results; }
  const Trap& trap() const override { return trap_; }
  const std::string& suspended_in() const override { return suspended_in_; }
  Telemetry telemetry() const override;
  uint64_t instructions() const override { return instructions_; }

  // Makes this the start function's invocation: it runs `start` instead of a thunk, and is
  // named `name` in traps and telemetry.
  void set_start(void (*start)(void* instance), std::string name);

  // The invocation, on its fiber: runs the guest inside RunGuarded until it returns or traps.
  static void Body(NativeInvocation* self);

  // From the guest, on this invocation's fiber: the fuel ran out at a check. Returns 0 when
  // resumed, else the code the caller unwinds with: rt::kCancelled, or call_stack_exhausted
  // when the check is at max_call_depth frames (the interpreter's out-of-fuel call is a
  // frame of its own and traps there, so this one does too).
  int OnOutOfFuel();
  // From the guest, on this invocation's fiber: function import `index` was called. Returns
  // 0, or 1 + TrapKind to trap (call_import's contract); never unwinds.
  uint32_t OnHostCall(uint32_t index, const ::reef_rt_value* args, ::reef_rt_value* results);

 private:
  // Run's steps around the guest: BeginSlice checks and fills the fuel (false: return
  // state_ without running); EnterSlice and LeaveSlice keep the backend's running invocation
  // and charge the slice.
  bool BeginSlice(uint64_t& budget);
  void EnterSlice();
  void LeaveSlice(NativeInvocation* outer, uint64_t budget);
  void Resume();  // switches to the fiber until the invocation suspends or ends
  void Cancel();  // ends a started invocation without running more guest code
  void ReleaseFiber();
  void TrapWith(Trap trap);
  // The suspension point's answer once the fiber is back: false when the invocation is being
  // cancelled (it must unwind).
  bool Resumed(bool fiber_resumed) const { return fiber_resumed && !cancelling_; }

  NativeInstance* instance_;
  NativeBackend& backend_;
  GlueEntryPoints::Thunk thunk_;
  void (*start_)(void* instance) = nullptr;
  InvocationBuffers& buffers_;  // the instance's (one invocation at a time)
  const FuncSignature& signature_;
  std::string_view function_;  // the export's name (the module owns it) or start_name_
  std::string start_name_;
  void* context_;
  bool host_calls_allowed_;

  std::unique_ptr<InvocationFiber> fiber_;  // from the backend, while the invocation runs
  rt::ThreadState fiber_state_;  // the runtime's thread state while the fiber is switched out
  RunState state_ = RunState::kBudgetExhausted;
  bool in_run_ = false;
  bool started_ = false;      // the fiber has started running this invocation
  bool once_ = false;         // RunOnce runs it: it never suspends
  bool cancelling_ = false;   // Cancel resumed the fiber to unwind the invocation
  bool out_of_fuel_ = false;  // the fiber is suspended in the out-of-fuel function
  uint64_t instructions_ = 0;
  Trap trap_;
  std::optional<Trap> host_trap_;  // set by a host function before its trap unwinds
  // While suspended in a host call: the import and, once completed, its results (in
  // buffers_.host_out).
  std::string suspended_in_;
  const HostFunction* suspended_function_ = nullptr;
};

}  // namespace reef::wasm::native
