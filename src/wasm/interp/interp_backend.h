// The interpreter tier: wabt 1.0.32's interpreter behind Reef's engine interface. Internal
// types shared by interp_backend.cc and interp_invocation.cc.
//
// Thread ownership: reactor-owned, like the Engine that owns the backend.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "wabt/interp/interp.h"
#include "wasm/detail/backend.h"
#include "wasm/detail/linear_memory.h"
#include "wasm/detail/memory_image.h"
#include "wasm/detail/meter.h"
#include "wasm/detail/wabt_types.h"
#include "wasm/engine.h"

namespace reef::wasm {

class InterpInvocation;

// A module compiled into one engine's store.
struct CompiledModule {
  std::shared_ptr<const Module> module;
  wabt::interp::Module::Ptr code;  // of the metered module (wasm/detail/meter.h)
  detail::MeterLayout meter;
  // (engine code offset of a function's first instruction, function index), sorted.
  std::vector<std::pair<uint32_t, uint32_t>> function_starts;
  // State right after instantiation, taken from the first instance (instantiation is
  // deterministic: start functions may not call the host). Used by Instance::Reset.
  bool has_snapshot = false;
  detail::MemoryImage initial_memory;
  std::vector<wabt::interp::Value> initial_globals;  // one per global; mutable ones restored

  // Name of the function whose code contains `code_offset`.
  std::string FunctionAt(uint32_t code_offset, uint32_t* function_start) const;
};

// The interpreter store of one Engine, its compiled modules, host functions and threads.
struct InterpBackend final : detail::Backend, std::enable_shared_from_this<InterpBackend> {
  InterpBackend(const HostRegistry& registry, const EngineLimits& limits);
  ~InterpBackend() override;

  Tier tier() const override { return Tier::kInterp; }
  Result<std::unique_ptr<Instance>> Instantiate(const std::shared_ptr<const Module>& module,
                                                std::span<const size_t> import_rows) override;

  // Compiles (or finds in the cache) `module` with limits applied to its declarations.
  Result<CompiledModule*> Compile(const std::shared_ptr<const Module>& module);
  // The store-side function for registry row `row`, created on first use.
  wabt::interp::HostFunc::Ptr HostFuncFor(size_t row);
  // The out-of-fuel function every instance's meter table holds, created on first use.
  wabt::interp::HostFunc::Ptr OutOfFuelFunc();

  // A thread whose call stack holds exactly limits.max_call_depth frames.
  std::unique_ptr<wabt::interp::Thread> AcquireThread();
  // Clears the thread's stacks and keeps it for reuse.
  void ReleaseThread(std::unique_ptr<wabt::interp::Thread> thread);
  // Runs the store's garbage collector once enough garbage may have accumulated.
  void NoteGarbage(uint32_t amount = 1);

  const HostRegistry& registry;
  const EngineLimits limits;
  // Declared first so it is destroyed last: every RefPtr and Thread below refers to it.
  wabt::interp::Store store;
  std::unordered_map<std::string, std::unique_ptr<CompiledModule>> compiled;  // by module id
  std::vector<wabt::interp::HostFunc::Ptr> host_funcs;                        // by registry row
  wabt::interp::HostFunc::Ptr out_of_fuel;
  std::vector<std::unique_ptr<wabt::interp::Thread>> thread_pool;
  // The invocation inside Thread::Run, if any: the innermost one while a host function runs
  // another instance's invocation. Each Run saves the outer one and restores it.
  InterpInvocation* running = nullptr;
  uint32_t run_depth = 0;  // Runs active on this engine's stack (limit max_nested_invocations)
  uint32_t garbage = 0;
};

class InterpInstance final : public Instance, public detail::LinearMemory {
 public:
  InterpInstance(std::shared_ptr<InterpBackend> state, CompiledModule* compiled,
                 wabt::interp::Instance::Ptr instance);
  ~InterpInstance() override;

  // Instance
  const Module& module() const override { return *compiled_->module; }
  GuestMemory& memory() override { return *this; }
  Tier tier() const override { return Tier::kInterp; }
  Result<std::unique_ptr<Invocation>> Start(std::string_view name, std::span<const WasmValue> args,
                                            void* context) override;
  // Starts a call of function `index` (any function, exported or not).
  // `host_calls_allowed` is false for the start function, which has no invocation context.
  Result<std::unique_ptr<Invocation>> StartFunction(uint32_t index, std::span<const WasmValue> args,
                                                    void* context, bool host_calls_allowed);

  Status Reset() override;
  Result<WasmValue> GetGlobal(std::string_view name) const override;
  // Records the post-instantiation state in the compiled module (first instance only).
  void TakeSnapshot();

  void EndInvocation() { busy_ = false; }
  const CompiledModule& compiled() const { return *compiled_; }
  // The metering fuel (wasm/detail/meter.h): a slice stops at a check that finds it below 0.
  int64_t fuel() const { return fuel_->Get().Get<int64_t>(); }
  void set_fuel(int64_t fuel) { fuel_->UnsafeSet(wabt::interp::Value::Make(fuel)); }

 private:
  // detail::LinearMemory (memory 0)
  bool has_memory() const override { return static_cast<bool>(memory_); }
  uint8_t* base() const override { return memory_->UnsafeData(); }
  uint64_t byte_size() const override { return memory_->ByteSize(); }

  std::shared_ptr<InterpBackend> state_;  // first: outlives the RefPtrs below
  CompiledModule* compiled_;
  wabt::interp::Instance::Ptr instance_;
  wabt::interp::Memory::Ptr memory_;  // null when the module has no memory
  wabt::interp::Global::Ptr fuel_;
  bool busy_ = false;
};

class InterpInvocation final : public Invocation {
 public:
  InterpInvocation(std::shared_ptr<InterpBackend> state, InterpInstance* instance,
                   std::unique_ptr<wabt::interp::Thread> thread,
                   const wabt::interp::ValueTypes& results, void* context, bool host_calls_allowed);
  ~InterpInvocation() override;

  RunState Run(uint64_t budget) override;
  Status CompleteHostCall(std::span<const WasmValue> results) override;
  Status FailHostCall(TrapKind kind, std::string message) override;
  RunState state() const override { return state_; }
  const std::vector<WasmValue>& results() const override { return results_; }
  const Trap& trap() const override { return trap_; }
  const std::string& suspended_in() const override { return suspended_in_; }
  Telemetry telemetry() const override;
  uint64_t instructions() const override { return instructions_; }

  // Called by host functions while this invocation runs.
  wabt::Result OnHostCall(size_t row, const wabt::interp::Values& params,
                          wabt::interp::Values& results, wabt::interp::Trap::Ptr* out_trap);
  // Called by the out-of-fuel function: the slice ends at this check.
  wabt::Result OnOutOfFuel(wabt::interp::Trap::Ptr* out_trap);

  // Ends the invocation as trapped by an engine-side check before it ran.
  void TrapBeforeRun(const wabt::interp::Trap::Ptr& trap);

 private:
  // Runs the interpreter until the invocation finishes, traps, suspends or runs out of fuel.
  void RunChunks();
  void Finish();
  void TrapWith(Trap trap);
  Trap TrapFromFrames(std::string message) const;
  // (function name, offset) of the innermost frame.
  std::pair<std::string, uint32_t> TopFrame() const;

  std::shared_ptr<InterpBackend> engine_;
  InterpInstance* instance_;
  std::unique_ptr<wabt::interp::Thread> thread_;
  // Lifetime: owned by the function object, which the instance keeps alive.
  const wabt::interp::ValueTypes* result_types_;
  void* context_;
  bool host_calls_allowed_;  // false for start functions

  RunState state_ = RunState::kBudgetExhausted;
  uint64_t instructions_ = 0;  // charged so far (see telemetry())
  bool out_of_fuel_ = false;   // set by OnOutOfFuel during Run
  bool in_meter_ = false;      // paused in the out-of-fuel function's frame
  std::vector<WasmValue> results_;
  Trap trap_;
  std::string suspended_in_;  // "module.name" while suspended
  const HostFunction* suspended_function_ = nullptr;
  bool in_run_ = false;             // Run is on the stack (a handler may not re-enter it)
  bool suspend_requested_ = false;  // set by OnHostCall during Run
  std::optional<Trap> host_trap_;   // set by OnHostCall during Run
};

// Conversions between the engine interface's values and the interpreter's.
wabt::interp::ValueType detail::ToWabtType(ValType type);
ValType detail::FromWabtType(wabt::interp::ValueType type);
wabt::interp::Value ToInterpValue(const WasmValue& value);
WasmValue FromInterpValue(wabt::interp::Value value, wabt::interp::ValueType type);

}  // namespace reef::wasm
