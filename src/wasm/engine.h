// Engine: instantiates modules against a host registry and enforces the sandbox limits.
//
// An Engine runs on one tier (wasm/tier.h): the interpreter (src/wasm/interp/, wabt 1.0.32's
// interpreter, pinned) or native code (src/wasm/native/: C through wabt's C writer and the
// system C compiler, loaded as a shared object). Both run the same metered module and keep
// the same promises (docs/engine.md). An Engine owns its tier's backend; every Instance and
// Invocation it creates keeps that backend alive, so they may be destroyed in any order.
//
// Thread ownership: reactor-owned. An Engine and everything it creates stay on the thread
// that created them; only Module and HostRegistry (const) are shared across threads.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "wasm/host.h"
#include "wasm/invocation.h"
#include "wasm/module.h"
#include "wasm/tier.h"

namespace reef::wasm {

// Sandbox limits, checked against a module's declarations before instantiation and enforced
// while it runs. Growing past a limit fails the way the wasm spec allows (memory.grow and
// table.grow return -1); nothing ever exceeds it.
struct EngineLimits {
  uint32_t max_memory_pages = 256;       // 64 KiB pages per memory: 256 = 16 MiB
  uint32_t max_table_elements = 10'000;  // elements per table
  uint32_t max_call_depth = 1'024;       // wasm frames per invocation (host frames count too)
  uint32_t max_value_stack = 1u << 20;   // values (16 bytes each) per invocation: 16 MiB;
                                         // traps before any instruction could pass it
  uint64_t max_start_instructions = 100'000'000;  // engine instructions for a start function
  // Invocations running at once on one engine: a host function may run an invocation of
  // another instance, which may call a host function that runs another... An invocation
  // whose Run would pass this depth traps host_error before it runs.
  uint32_t max_nested_invocations = 16;
};

namespace native {
class CodeSource;
}

// How an Engine runs guest code: which tier each module gets, and where native code comes
// from (null: native::CodeSource::Default(), which compiles on the calling thread).
struct EngineOptions {
  TierChoice tier = TierChoice::kInterp;
  std::shared_ptr<native::CodeSource> native_code;
};

struct EngineStats {
  uint64_t instances_created = 0;
};

class Instance;
namespace detail {
class Backend;
}

class Engine {
 public:
  // REQUIRES: `registry` outlives the engine and every instance it creates. Without
  // `options`, the process's defaults (SetDefaultOptions).
  explicit Engine(const HostRegistry& registry, EngineLimits limits = {});
  Engine(const HostRegistry& registry, EngineLimits limits, EngineOptions options);
  Engine(const HostRegistry& registry, EngineLimits limits, Tier tier)
      : Engine(registry, limits,
               EngineOptions{.tier = tier == Tier::kNative ? TierChoice::kNative
                                                           : TierChoice::kInterp}) {}
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Checks the module's declared limits and resolves its imports, then instantiates it
  // (running its start function, if any, to completion).
  // Errors: LimitExceeded naming the limit ("memory 0 declares 300 initial pages; limit
  // max_memory_pages=256"); NotFound listing every unknown import and every signature
  // mismatch ("unknown import reef.sned (i32) -> (); ..."); Trapped if the start function
  // or a segment initialisation traps. On the native tier the first instantiation of a
  // module compiles it (about a second of CPU): also InvalidArgument, Unimplemented,
  // LimitExceeded or Internal from native/c_gen.h, compiler.h and native_module.h.
  Result<std::unique_ptr<Instance>> Instantiate(std::shared_ptr<const Module> module);

  // The options of engines made without any: `reef serve` sets them once at startup
  // (--engine, REEF_ENGINE) so every face (actors, commands, projectors, effects, program
  // units) runs on the chosen tier. Initially TierChoice::kInterp with the default code
  // source. Any thread; engines made earlier keep theirs.
  static void SetDefaultOptions(EngineOptions options);
  static EngineOptions DefaultOptions();

  // True when a new instance of `instance`'s module would run on another tier than
  // `instance` does (auto: its native code is ready now). Callers that keep instances for
  // reuse drop such ones at a handler boundary, so the module moves to native code.
  bool Outdated(const Instance& instance) const;
  // The tier a new instance of `module` runs on now (auto: native once its code is loaded,
  // else the interpreter). Does not request a compile, nor count as a use of the code.
  Tier TierOf(const Module& module) const;

  // Ends, on the calling thread, what the engine keeps for the thread that runs its
  // invocations: the native tier's parked fibers, which were started on that thread and must
  // unwind there. Call it from that thread when it stops running the engine, if the engine is
  // destroyed on another. The engine stays usable.
  void ReleaseThreadResources();

  const EngineLimits& limits() const { return limits_; }
  const HostRegistry& registry() const { return registry_; }
  const EngineStats& stats() const { return stats_; }
  TierChoice tier_choice() const { return options_.tier; }

 private:
  // The registry row of each function import of `module`, in import order. Errors: NotFound
  // naming every unknown import, non-function import and signature mismatch.
  Result<std::vector<size_t>> ResolveImports(const Module& module) const;

  const HostRegistry& registry_;
  EngineLimits limits_;
  EngineOptions options_;
  EngineStats stats_;
  std::shared_ptr<detail::Backend> interp_;  // null with TierChoice::kNative
  std::shared_ptr<detail::Backend> native_;  // null with TierChoice::kInterp
};

// Bounds-checked access to an instance's memory 0. Every method checks that
// [ptr, ptr + len) lies inside the memory's current size before touching it.
// Errors: OutOfRange-style InvalidArgument "guest buffer [ptr, ptr+len) outside memory of N
// bytes"; FailedPrecondition when the module has no memory.
class GuestMemory {
 public:
  virtual ~GuestMemory() = default;
  // Current size in bytes (pages * 65,536); 0 without a memory.
  virtual uint64_t size() const = 0;
  // Copies guest bytes [ptr, ptr + len) out.
  virtual Result<std::vector<uint8_t>> Read(uint32_t ptr, uint32_t len) const = 0;
  // Borrowed view of guest bytes. Lifetime: valid until the guest runs again or memory grows.
  virtual Result<std::span<const uint8_t>> View(uint32_t ptr, uint32_t len) const = 0;
  // Copies `bytes` into guest memory at ptr.
  virtual Status Write(uint32_t ptr, std::span<const uint8_t> bytes) = 0;
};

// One instantiated module. Runs one invocation at a time: Start fails while another
// invocation of this instance is active. A host function may start and run invocations of
// other instances of the same engine (nested up to EngineLimits::max_nested_invocations);
// calling Run of the invocation that is running the host function returns at once.
class Instance {
 public:
  virtual ~Instance() = default;

  virtual const Module& module() const = 0;
  virtual GuestMemory& memory() = 0;
  virtual Tier tier() const = 0;

  // Starts calling export `name` with `args`; nothing runs until Invocation::Run.
  // `context` is handed to host handlers (HostCall::context()); lifetime: must outlive the
  // invocation. Errors: NotFound (no such function export), InvalidArgument (argument count
  // or types differ from the signature, or it uses non-number types), FailedPrecondition
  // (another invocation of this instance is active).
  virtual Result<std::unique_ptr<Invocation>> Start(std::string_view name,
                                                    std::span<const WasmValue> args,
                                                    void* context = nullptr) = 0;

  // Restores memory 0 and every mutable global to their values right after instantiation
  // (data segments applied, start function run), zeroing memory grown since. Memory keeps its
  // current size (wasm memories never shrink). Tables are not restored. Use it before an
  // instance serves another actor, so no actor's data is readable by another's invocation.
  // Cost: on the native tier, the 4 KiB chunks written since the last reset (by the guest or
  // through GuestMemory::Write); on the interpreter, the whole memory (it cannot tell what a
  // guest wrote). Errors: FailedPrecondition while an invocation of this instance is active.
  virtual Status Reset() = 0;

  // Current value of exported global `name` (a mutable global changes as the guest runs).
  // Errors: NotFound when there is no such export or it is not a global; InvalidArgument
  // when its type is not a number type (v128, funcref, externref).
  virtual Result<WasmValue> GetGlobal(std::string_view name) const = 0;

  // Start, then Run once with `budget` (the whole call's budget, engine instructions), in one
  // step: a tier may run it without making it resumable (the native tier runs it on a pooled
  // stack with no fiber). Returns the results. Errors: those of Start; InvalidArgument for a
  // zero budget; Trapped with Trap::ToString() as the message; LimitExceeded when the budget
  // runs out; FailedPrecondition when the call suspends in a host import (use Start/Run).
  Result<std::vector<WasmValue>> Call(std::string_view name, std::span<const WasmValue> args,
                                      void* context = nullptr, uint64_t budget = 100'000'000);
  // Call with the results written to `results` (replaced, its capacity reused: a caller that
  // keeps the vector allocates nothing per call). Errors: Call's; `results` is then cleared.
  virtual Status CallInto(std::string_view name, std::span<const WasmValue> args,
                          std::vector<WasmValue>& results, void* context = nullptr,
                          uint64_t budget = 100'000'000);
};

}  // namespace reef::wasm
