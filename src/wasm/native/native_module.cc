// NativeModule: dlopen, entry-point resolution, dlclose (native_module.h).
#include "wasm/native/native_module.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <system_error>
#include <unordered_map>

#include "core/mutex.h"
#include "wasm/native/rt/wasm-rt.h"

namespace reef::wasm::native {
namespace {

std::string DlError() {
  const char* error = dlerror();
  return error != nullptr ? error : "unknown dl error";
}

template <typename Fn>
Status Resolve(void* handle, const char* symbol, Fn* out) {
  dlerror();
  void* address = dlsym(handle, symbol);
  if (address == nullptr) {
    return Status::Internal(fmt::format("native library lacks `{}`: {}", symbol, DlError()));
  }
  *out = reinterpret_cast<Fn>(address);
  return Status::Ok();
}

// NativeModules per loaded library (dlopen handle), so each library is initialised once.
struct LoadedLibraries {
  Mutex mu;
  std::unordered_map<void*, int> counts GUARDED_BY(mu);
};

LoadedLibraries& Libraries() {
  static auto* libraries = new LoadedLibraries();  // never destroyed: modules may outlive exit
  return *libraries;
}

}  // namespace

Result<std::shared_ptr<const NativeModule>> NativeModule::Compile(
    std::shared_ptr<const Module> module, const CompileOptions& options, const IrPass& pass) {
  REEF_ASSIGN_OR_RETURN(GeneratedC c, GenerateC(*module, pass));
  REEF_ASSIGN_OR_RETURN(SharedObject library, native::Compile(c, options));
  return Load(std::move(module), std::move(library), c);
}

Result<std::shared_ptr<const NativeModule>> NativeModule::Load(std::shared_ptr<const Module> module,
                                                               SharedObject library,
                                                               const GeneratedC& c) {
  std::shared_ptr<NativeModule> loaded(new NativeModule());
  loaded->module_ = std::move(module);
  loaded->exports_ = c.exports;
  loaded->imports_ = c.imports;
  loaded->globals_ = c.globals;
  loaded->has_start_ = c.has_start;
  loaded->stats_ = library.stats;
  REEF_RETURN_IF_ERROR(loaded->Open(library.library));

  // Only the library stays on disk while loaded: its unique path keeps dlopen from ever
  // mistaking another library for it.
  if (!library.directory.path().empty() && !library.directory.kept()) {
    std::error_code ec;
    for (const auto& file : std::filesystem::directory_iterator(library.directory.path(), ec)) {
      if (file.path() != library.library) std::filesystem::remove(file.path(), ec);
    }
  }
  loaded->directory_ = std::make_unique<TempDir>(std::move(library.directory));
  return std::shared_ptr<const NativeModule>(std::move(loaded));
}

Result<std::shared_ptr<const NativeModule>> NativeModule::LoadFile(
    std::shared_ptr<const Module> module, const std::filesystem::path& library,
    NativeInterface interface, const CompileStats& stats) {
  std::shared_ptr<NativeModule> loaded(new NativeModule());
  loaded->module_ = std::move(module);
  loaded->exports_ = std::move(interface.exports);
  loaded->imports_ = std::move(interface.imports);
  loaded->globals_ = std::move(interface.globals);
  loaded->has_start_ = interface.has_start;
  loaded->stats_ = stats;
  REEF_RETURN_IF_ERROR(loaded->Open(library));
  return std::shared_ptr<const NativeModule>(std::move(loaded));
}

Status NativeModule::Open(const std::filesystem::path& library) {
  handle_ = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle_ == nullptr) {
    return Status::Internal(fmt::format(
        "cannot load native library {}: {} (a missing wasm_rt_* or reef_rt_* symbol means the "
        "executable does not export Reef's runtime: link it with reef_wasm_native)",
        library.string(), DlError()));
  }
  uint32_t (*abi)() = nullptr;
  void (*init_module)() = nullptr;
  REEF_RETURN_IF_ERROR(Resolve(handle_, "reef_glue_abi", &abi));
  if (abi() != kGlueAbiVersion) {
    return Status::Internal(
        fmt::format("native library glue ABI {}; this build expects {}", abi(), kGlueAbiVersion));
  }
  REEF_RETURN_IF_ERROR(Resolve(handle_, "reef_glue_instance_size", &entry_.instance_size));
  REEF_RETURN_IF_ERROR(Resolve(handle_, "reef_glue_init_module", &init_module));
  REEF_RETURN_IF_ERROR(Resolve(handle_, "reef_glue_instantiate", &entry_.instantiate));
  REEF_RETURN_IF_ERROR(Resolve(handle_, "reef_glue_free", &entry_.free));
  REEF_RETURN_IF_ERROR(Resolve(handle_, "reef_glue_memory", &entry_.memory));
  REEF_RETURN_IF_ERROR(Resolve(handle_, "reef_glue_start", &entry_.start));
  REEF_RETURN_IF_ERROR(Resolve(handle_, "reef_glue_global", &entry_.global));
  REEF_RETURN_IF_ERROR(Resolve(handle_, "reef_glue_funcref_table", &entry_.funcref_table));
  REEF_RETURN_IF_ERROR(Resolve(handle_, "reef_glue_out_of_fuel", &entry_.out_of_fuel));
  int (*registers)() = nullptr;
  REEF_RETURN_IF_ERROR(Resolve(handle_, "reef_glue_registers", &registers));
  entry_.fuel_in_register = registers() != 0;
  for (const NativeExport& e : exports_) {
    GlueEntryPoints::Thunk thunk = nullptr;
    REEF_RETURN_IF_ERROR(Resolve(handle_, e.thunk.c_str(), &thunk));
    entry_.exports.push_back(thunk);
  }
  LoadedLibraries& libraries = Libraries();
  MutexLock lock(libraries.mu);
  // Registers the module's function types (process-wide registry); never traps. Once per
  // loaded library: instances of an earlier NativeModule may be reading them.
  if (libraries.counts[handle_]++ == 0) init_module();
  counted_ = true;
  return Status::Ok();
}

NativeModule::~NativeModule() {
  if (handle_ == nullptr) return;
  if (!counted_) {
    dlclose(handle_);
    return;
  }
  LoadedLibraries& libraries = Libraries();
  MutexLock lock(libraries.mu);
  if (--libraries.counts[handle_] == 0) libraries.counts.erase(handle_);
  // Under the lock: a concurrent dlopen of the same file sees either the library still
  // counted or a fresh one to initialise.
  dlclose(handle_);
}

int NativeModule::FindExport(std::string_view name) const {
  for (size_t i = 0; i < exports_.size(); ++i) {
    if (exports_[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace reef::wasm::native
