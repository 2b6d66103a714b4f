// NativeModule: one Module compiled ahead of time to a shared object and loaded.
//
// Compile runs the whole pipeline (c_gen.h -> compiler.h -> dlopen RTLD_NOW|RTLD_LOCAL) and
// resolves the glue's entry points; the library is unloaded (dlclose) when the last
// reference goes, so every NativeInstance holds a shared_ptr to its module.
//
// dlopen returns the library already loaded when the path, or the file (device and inode),
// is the same, so two NativeModules may share one library (the code cache loads a cached
// file by its fixed path). Its module initialisation runs once per loaded library, whatever
// the number of NativeModules sharing it.
//
// The host executable must export the runtime's symbols (rt/exports.list; reef_wasm_native
// adds the link option to everything that links it), or loading fails naming the symbol.
//
// Thread ownership: immutable after Compile/Load; share it across threads freely.
#pragma once

#include <filesystem>
#include <memory>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "wasm/module.h"
#include "wasm/native/c_gen.h"
#include "wasm/native/compiler.h"

// From native/rt/wasm-rt.h, which the .cc files include (it defines C macros such as LIKELY).
extern "C" {
struct wasm_rt_memory_t;
struct wasm_rt_funcref_table_t;
struct reef_rt_host;
union reef_rt_value;
}

namespace reef::wasm::native {

// The glue's entry points in a loaded library (c_gen.h describes each).
struct GlueEntryPoints {
  size_t (*instance_size)() = nullptr;
  void (*instantiate)(void* instance, ::reef_rt_host* host) = nullptr;
  void (*free)(void* instance) = nullptr;
  ::wasm_rt_memory_t* (*memory)(void* instance) = nullptr;
  void (*start)(void* instance) = nullptr;
  void* (*global)(void* instance, uint32_t index) = nullptr;
  ::wasm_rt_funcref_table_t* (*funcref_table)(void* instance, uint32_t index) = nullptr;
  void (*out_of_fuel)(void* host) = nullptr;  // the function the meter table holds
  // The code keeps the fuel in a register while it runs (rt/wasm-rt.h REEF_RT_REGISTERS).
  bool fuel_in_register = false;
  using Thunk = void (*)(void* instance, const ::reef_rt_value* args, ::reef_rt_value* results);
  std::vector<Thunk> exports;  // parallel to NativeModule::exports()
};

class NativeModule {
 public:
  // Generates C for `module` (running `pass` on its IR), compiles it with `options`, loads
  // it. Errors: those of GenerateC, Compile and Load.
  static Result<std::shared_ptr<const NativeModule>> Compile(std::shared_ptr<const Module> module,
                                                             const CompileOptions& options = {},
                                                             const IrPass& pass = {});

  // Loads `library` built from `c` for `module`, then initialises it (function types).
  // Errors: Internal with dlerror()'s text (e.g. an undefined wasm_rt_* symbol when the host
  // does not export the runtime) or when a glue entry point is missing or its ABI differs.
  static Result<std::shared_ptr<const NativeModule>> Load(std::shared_ptr<const Module> module,
                                                          SharedObject library,
                                                          const GeneratedC& c);

  // Loads the library file `library`, which the caller has verified (the code cache's): the
  // output of CompileCommand for C whose entry points are `exports` and whose function
  // imports are `imports`, in order. The file is not owned: it must stay in place until this
  // returns (the mapping outlives its later removal or replacement). `stats` is reported
  // by compile_stats(). Errors: those of Load.
  static Result<std::shared_ptr<const NativeModule>> LoadFile(std::shared_ptr<const Module> module,
                                                              const std::filesystem::path& library,
                                                              NativeInterface interface,
                                                              const CompileStats& stats = {});

  ~NativeModule();
  NativeModule(const NativeModule&) = delete;
  NativeModule& operator=(const NativeModule&) = delete;

  const Module& module() const { return *module_; }
  const std::shared_ptr<const Module>& shared_module() const { return module_; }
  // Host-callable function exports (number types only), in the module's export order.
  const std::vector<NativeExport>& exports() const { return exports_; }
  // Function imports, in import order (reef_rt_host::call_import's index).
  const std::vector<NativeImport>& imports() const { return imports_; }
  // Every global, in index order (GlueEntryPoints::global's index).
  const std::vector<NativeGlobal>& globals() const { return globals_; }
  // True when the module has a start function (GlueEntryPoints::start runs it).
  bool has_start() const { return has_start_; }
  // Index into exports(), or -1 when there is no host-callable export `name`.
  int FindExport(std::string_view name) const;
  const GlueEntryPoints& entry_points() const { return entry_; }
  const CompileStats& compile_stats() const { return stats_; }

 private:
  NativeModule() = default;
  // dlopens `library` and resolves the entry points; module_, exports_ and imports_ are set.
  Status Open(const std::filesystem::path& library);

  std::shared_ptr<const Module> module_;
  std::vector<NativeExport> exports_;
  std::vector<NativeImport> imports_;
  std::vector<NativeGlobal> globals_;
  bool has_start_ = false;
  GlueEntryPoints entry_;
  CompileStats stats_;
  void* handle_ = nullptr;              // dlopen handle; dlclose'd last
  bool counted_ = false;                // handle_ counted in the loaded-library registry
  std::unique_ptr<TempDir> directory_;  // holds the loaded file (unique name while loaded)
};

}  // namespace reef::wasm::native
