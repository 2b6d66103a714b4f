// libFuzzer target: .wat text loading (parse, resolve names, validate, encode). Arbitrary
// text must give a module or an error, never a crash, leak or hang.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "wasm/module.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  reef::wasm::ModuleLimits limits;
  limits.max_module_bytes = 1 << 20;
  auto module = reef::wasm::Module::FromText(
      std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.wat", limits);
  (void)module;
  return 0;
}
