// NativeInstance: one instantiation of a NativeModule, with its memory, tables, globals and
// host imports.
//
// Host imports are Reef's HostHandler functions (wasm/host.h), one per function import, so a
// HostRegistry's handlers run unchanged: they get typed arguments, the instance's memory
// (bounds-checked GuestMemory) and the context pointer given to Call. A handler that
// returns kSuspend traps host_error: suspending needs a separate stack (later: fibers).
//
// Traps end the call cleanly (wasm_rt_trap unwinds to Call); the instance stays usable, as
// in the interpreter. The call depth limit is EngineLimits::max_call_depth wasm frames per
// call; growing memory or a table past the EngineLimits maximum returns -1.
//
// Thread ownership: one thread at a time (caller synchronizes); different instances, of the
// same module or not, run on different threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "wasm/engine.h"
#include "wasm/host.h"
#include "wasm/native/native_module.h"
#include "wasm/trap.h"

namespace reef::wasm::native {

class NativeInstance {
 public:
  // Instantiates `module` with `imports[i]` serving function import i; runs the start
  // function. REQUIRES: handlers (and what they capture) outlive the instance.
  // Errors: InvalidArgument when imports.size() differs from module->imports().size();
  // LimitExceeded when a memory or table declares more initial pages/elements than
  // `limits` allow; Trapped "instantiation trapped: <message>" when a segment or the start
  // function traps (the interpreter's wording; ClassifyTrapMessage(<message>) is the kind).
  static Result<std::unique_ptr<NativeInstance>> Create(std::shared_ptr<const NativeModule> module,
                                                        std::vector<HostHandler> imports,
                                                        const EngineLimits& limits = {});
  // As above, each import resolved by module.name in `registry` (REQUIRES: it outlives the
  // instance). Errors: also NotFound listing every unknown import and signature mismatch.
  static Result<std::unique_ptr<NativeInstance>> Create(std::shared_ptr<const NativeModule> module,
                                                        const HostRegistry& registry,
                                                        const EngineLimits& limits = {});
  ~NativeInstance();
  NativeInstance(const NativeInstance&) = delete;
  NativeInstance& operator=(const NativeInstance&) = delete;

  // Calls export `name` with `args` to completion. `context` reaches host handlers as
  // HostCall::context() (lifetime: the call).
  // Errors: NotFound (no host-callable function export `name`); InvalidArgument (argument
  // count or types differ); FailedPrecondition (a call of this instance is running: a host
  // handler called back into it); Trapped with Trap::ToString() (details in last_trap()).
  Result<std::vector<WasmValue>> Call(std::string_view name, std::span<const WasmValue> args,
                                      void* context = nullptr);

  // The trap that ended the last Call, if it trapped. `function` is the export
  // called (the native tier has no frame map), or "module.name" of the import that trapped.
  const std::optional<Trap>& last_trap() const { return last_trap_; }

  // Memory 0 (size 0 and every access failing when the module has none). Lifetime: this.
  GuestMemory& memory();
  const NativeModule& module() const { return *module_; }

 private:
  struct HostBlock;  // reef_rt_host + back pointer, handed to the generated code
  class Memory;      // GuestMemory over wasm_rt_memory_t
  struct CallFrame;  // one Call's thunk, arguments and results for RunGuarded

  NativeInstance(std::shared_ptr<const NativeModule> module, std::vector<HostHandler> imports,
                 const EngineLimits& limits);
  static uint32_t CallImport(::reef_rt_host* host, uint32_t index, const ::reef_rt_value* args,
                             ::reef_rt_value* results);
  uint32_t DispatchImport(uint32_t index, const ::reef_rt_value* args, ::reef_rt_value* results);
  Trap MakeTrap(int code, std::string_view function);

  std::shared_ptr<const NativeModule> module_;
  std::vector<HostHandler> imports_;
  EngineLimits limits_;
  std::unique_ptr<HostBlock> host_;
  std::unique_ptr<Memory> memory_;
  void* instance_ = nullptr;  // the generated instance struct (calloc'ed)
  bool instantiated_ = false;
  bool running_ = false;
  void* context_ = nullptr;           // of the running call
  std::optional<Trap> pending_trap_;  // set by a host handler before its trap unwinds
  std::optional<Trap> last_trap_;
};

}  // namespace reef::wasm::native
