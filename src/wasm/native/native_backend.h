// The native tier behind Reef's engine interface: modules compiled ahead of time to machine
// code (native_module.h), metered like the interpreter's (wasm/detail/meter.h), each
// invocation running on a fiber of its own (fiber.h) so it can stop in the middle (out of
// fuel, a host call that suspends) and go on later exactly there. Internal types shared by
// native_backend.cc and native_invocation.cc.
//
// Thread ownership: reactor-owned, like the Engine that owns the backend. A fiber is resumed
// only on the thread that started it.
#pragma once

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
  detail::MeterLayout meter;
  // State right after instantiation (segments applied, start function run), taken from the
  // first instance: instantiation is deterministic (start functions may not call the host).
  bool has_snapshot = false;
  detail::MemoryImage initial_memory;
  std::vector<std::string> initial_globals;  // each global's bytes; mutable ones restored
};

struct NativeBackend final : detail::Backend, std::enable_shared_from_this<NativeBackend> {
  NativeBackend(const HostRegistry& host_registry, const EngineLimits& engine_limits,
                std::shared_ptr<CodeSource> code_source);

  Tier tier() const override { return Tier::kNative; }
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
};

class NativeInstance final : public Instance, public detail::LinearMemory {
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

  struct HostBlock;  // reef_rt_host + back pointer: every import module's instance pointer

 private:
  // detail::LinearMemory (memory 0)
  bool has_memory() const override { return memory_ != nullptr; }
  uint8_t* base() const override;
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
                   std::string function, void* context, bool host_calls_allowed);
  ~NativeInvocation() override;

  RunState Run(uint64_t budget) override;
  Status CompleteHostCall(std::span<const WasmValue> results) override;
  Status FailHostCall(TrapKind kind, std::string message) override;
  RunState state() const override { return state_; }
  const std::vector<WasmValue>& results() const override { return results_; }
  const Trap& trap() const override { return trap_; }
  const std::string& suspended_in() const override { return suspended_in_; }
  Telemetry telemetry() const override;

  // Makes this the start function's invocation: it runs `start` instead of a thunk.
  void set_start(void (*start)(void* instance)) { start_ = start; }

  // From the guest, on this invocation's fiber: the fuel ran out at a check. Returns 0 when
  // resumed, else the code the caller unwinds with: rt::kCancelled, or call_stack_exhausted
  // when the check is at max_call_depth frames (the interpreter's out-of-fuel call is a
  // frame of its own and traps there, so this one does too).
  int OnOutOfFuel();
  // From the guest, on this invocation's fiber: function import `index` was called. Returns
  // 0, or 1 + TrapKind to trap (call_import's contract); never unwinds.
  uint32_t OnHostCall(uint32_t index, const ::reef_rt_value* args, ::reef_rt_value* results);

 private:
  static void Body(void* self);  // the guest call, inside RunGuarded on the fiber
  void Resume();                 // switches to the fiber until it suspends or ends
  void Cancel();                 // ends a started fiber without running more guest code
  void TrapWith(Trap trap);

  NativeInstance* instance_;
  NativeBackend& backend_;
  GlueEntryPoints::Thunk thunk_;
  void (*start_)(void* instance) = nullptr;
  std::vector<reef_rt_value> args_;
  std::vector<reef_rt_value> rt_results_;
  const FuncSignature& signature_;
  std::string function_;
  void* context_;
  bool host_calls_allowed_;

  std::unique_ptr<Fiber> fiber_;
  rt::ThreadState fiber_state_;  // the runtime's thread state while the fiber is switched out
  RunState state_ = RunState::kBudgetExhausted;
  bool in_run_ = false;
  bool out_of_fuel_ = false;  // the fiber is suspended in the out-of-fuel function
  uint64_t instructions_ = 0;
  std::vector<WasmValue> results_;
  Trap trap_;
  std::optional<Trap> host_trap_;  // set by a host function before its trap unwinds
  // While suspended in a host call: the import and, once completed, its results.
  std::string suspended_in_;
  const HostFunction* suspended_function_ = nullptr;
  std::vector<WasmValue> host_results_;
};

}  // namespace reef::wasm::native
