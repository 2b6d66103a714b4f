// NativeModule: dlopen, entry-point resolution, dlclose (native_module.h).
#include "wasm/native/native_module.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <system_error>

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
  loaded->handle_ = dlopen(library.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (loaded->handle_ == nullptr) {
    return Status::Internal(fmt::format(
        "cannot load native library {}: {} (a missing wasm_rt_* or reef_rt_* symbol means the "
        "executable does not export Reef's runtime: link it with reef_wasm_native)",
        library.library.string(), DlError()));
  }
  uint32_t (*abi)() = nullptr;
  void (*init_module)() = nullptr;
  GlueEntryPoints& entry = loaded->entry_;
  REEF_RETURN_IF_ERROR(Resolve(loaded->handle_, "reef_glue_abi", &abi));
  if (abi() != kGlueAbiVersion) {
    return Status::Internal(
        fmt::format("native library glue ABI {}; this build expects {}", abi(), kGlueAbiVersion));
  }
  REEF_RETURN_IF_ERROR(Resolve(loaded->handle_, "reef_glue_instance_size", &entry.instance_size));
  REEF_RETURN_IF_ERROR(Resolve(loaded->handle_, "reef_glue_init_module", &init_module));
  REEF_RETURN_IF_ERROR(Resolve(loaded->handle_, "reef_glue_instantiate", &entry.instantiate));
  REEF_RETURN_IF_ERROR(Resolve(loaded->handle_, "reef_glue_free", &entry.free));
  REEF_RETURN_IF_ERROR(Resolve(loaded->handle_, "reef_glue_memory", &entry.memory));
  REEF_RETURN_IF_ERROR(Resolve(loaded->handle_, "reef_glue_start", &entry.start));
  REEF_RETURN_IF_ERROR(Resolve(loaded->handle_, "reef_glue_global", &entry.global));
  REEF_RETURN_IF_ERROR(Resolve(loaded->handle_, "reef_glue_funcref_table", &entry.funcref_table));
  for (const NativeExport& e : loaded->exports_) {
    GlueEntryPoints::Thunk thunk = nullptr;
    REEF_RETURN_IF_ERROR(Resolve(loaded->handle_, e.thunk.c_str(), &thunk));
    entry.exports.push_back(thunk);
  }
  // Registers the module's function types (process-wide registry); never traps.
  init_module();

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

NativeModule::~NativeModule() {
  if (handle_ != nullptr) dlclose(handle_);
}

int NativeModule::FindExport(std::string_view name) const {
  for (size_t i = 0; i < exports_.size(); ++i) {
    if (exports_[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace reef::wasm::native
