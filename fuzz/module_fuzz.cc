// libFuzzer target: module loading. Arbitrary bytes first go through the pre-pass
// (wasm/binary_scan.h), then Module::FromBinary (parse + validate); a module that loads is
// instantiated against the ABI v1 registry and each nullary export runs for a small budget.
// Nothing may crash, leak or hang. Two properties of the pre-pass are checked on the way:
//   - a shape it accepts fits the input (no count beyond the bytes) and the load memory bound;
//   - it never refuses as malformed what wabt 1.0.32's reader accepts: for refusals that are
//     not about a count or size (which wabt may trust and allocate for) nor where the scan is
//     deliberately stricter, following the spec (see kNotCompared), wabt reads the same bytes
//     and must refuse them too.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "actor/guest_abi.h"
#include "wabt/binary-reader.h"
#include "wabt/interp/binary-reader-interp.h"
#include "wasm/binary_scan.h"
#include "wasm/engine.h"

namespace {

bool Contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

bool WabtAccepts(const uint8_t* data, size_t size) {
  wabt::Errors errors;
  wabt::Features features;
  wabt::ReadBinaryOptions options(features, nullptr, /*read_debug_names=*/false,
                                  /*stop_on_first_error=*/true,
                                  /*fail_on_custom_section_error=*/false);
  wabt::interp::ModuleDesc desc;
  return wabt::Succeeded(
      wabt::interp::ReadBinaryInterp("fuzz.wasm", data, size, options, &errors, &desc));
}

// Checks the pre-pass's properties; true when the module should go on to load.
bool CheckScan(std::span<const uint8_t> bytes, const reef::wasm::ModuleLimits& limits) {
  using namespace reef;
  auto shape = wasm::ScanBinary(bytes, "fuzz.wasm", limits);
  if (shape.ok()) {
    const uint64_t size = bytes.size();
    const uint64_t budget =
        uint64_t{limits.load_memory_factor} * size + limits.load_memory_allowance;
    if (shape->functions > size || shape->types > size || shape->data_segments > size ||
        shape->code_bytes > size || shape->load_bytes_estimate > budget) {
      __builtin_trap();
    }
    return true;
  }
  if (shape.status().code() != Code::kInvalidArgument) return false;
  // Refusals wabt's reader is not asked about: counts and sizes (it may allocate for them),
  // and where the scan follows the spec more strictly than wabt 1.0.32 (custom section
  // framing; multi-byte value types; data segment flags above 2; a DataCount without data;
  // a constant expression cut off before its `end`).
  constexpr std::string_view kNotCompared[] = {"declares",
                                               "length out of bounds",
                                               "bytes needed",
                                               "custom section",
                                               "a value type is one byte",
                                               "expected 0 to 2",
                                               "inconsistent lengths",
                                               "needs its `end`"};
  const std::string why = shape.status().message();
  for (std::string_view part : kNotCompared) {
    if (Contains(why, part)) return false;
  }
  if (WabtAccepts(bytes.data(), bytes.size())) __builtin_trap();  // refused a module wabt reads
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace reef;
  wasm::ModuleLimits module_limits;
  module_limits.max_module_bytes = 1 << 20;
  if (size > module_limits.max_module_bytes) return 0;
  const std::span<const uint8_t> bytes(data, size);
  if (!CheckScan(bytes, module_limits)) return 0;
  auto module = wasm::Module::FromBinary(bytes, "fuzz.wasm", module_limits);
  if (!module.ok()) return 0;
  wasm::EngineLimits limits;
  limits.max_memory_pages = 16;
  limits.max_call_depth = 256;
  limits.max_value_stack = 1 << 16;
  limits.max_start_instructions = 10'000;
  wasm::Engine engine(actor::AbiV1Registry(), limits);
  auto instance = engine.Instantiate(*module);
  if (!instance.ok()) return 0;
  actor::ActorCallContext context{*ActorRef::Parse("fuzzActorRef000000000")};
  for (const wasm::ExportInfo& e : (*module)->exports()) {
    if (e.kind != wasm::ExternKind::kFunc || !e.signature.params.empty()) continue;
    auto invocation = (*instance)->Start(e.name, {}, &context);
    if (!invocation.ok()) continue;
    (*invocation)->Run(10'000);
  }
  return 0;
}
