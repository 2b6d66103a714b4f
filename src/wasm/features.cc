// Supported and refused WebAssembly proposals (detail/features.h).
#include "wasm/detail/features.h"

#include <fmt/format.h>

#include <string_view>

#include "wabt/binary-reader-ir.h"
#include "wabt/binary-reader.h"
#include "wabt/ir.h"

namespace reef::wasm::detail {
namespace {

struct Proposal {
  std::string_view name;
  void (wabt::Features::*enable)();
};

// The proposals wabt can read and Reef refuses, most common first.
constexpr Proposal kRefused[] = {
    {"SIMD (v128)", &wabt::Features::enable_simd},
    {"tail calls", &wabt::Features::enable_tail_call},
    {"exception handling", &wabt::Features::enable_exceptions},
    {"threads (atomics, shared memory)", &wabt::Features::enable_threads},
    {"memory64", &wabt::Features::enable_memory64},
    {"multiple memories", &wabt::Features::enable_multi_memory},
    {"extended constant expressions", &wabt::Features::enable_extended_const},
    {"relaxed SIMD", &wabt::Features::enable_relaxed_simd},
    {"typed function references", &wabt::Features::enable_function_references},
    {"garbage collection", &wabt::Features::enable_gc},
};

bool Readable(std::span<const uint8_t> bytes, const wabt::Features& features, wabt::Module* ir) {
  wabt::Errors errors;
  const wabt::ReadBinaryOptions options(features, /*log_stream=*/nullptr,
                                        /*read_debug_names=*/false,
                                        /*stop_on_first_error=*/true,
                                        /*fail_on_custom_section_error=*/false);
  return wabt::Succeeded(
      wabt::ReadBinaryIr("module.wasm", bytes.data(), bytes.size(), options, &errors, ir));
}

}  // namespace

wabt::Features SupportedFeatures() {
  wabt::Features features;
  features.disable_simd();
  return features;
}

std::optional<std::string> RefusedFeature(std::span<const uint8_t> bytes) {
  wabt::Module ir;
  if (Readable(bytes, SupportedFeatures(), &ir)) {
    // wabt's reader takes a second memory without multi-memory; its validator refuses it.
    if (ir.memories.size() > 1) return "multiple memories";
    return std::nullopt;  // invalid, not a proposal
  }
  for (const Proposal& proposal : kRefused) {
    wabt::Features features = SupportedFeatures();
    (features.*proposal.enable)();
    wabt::Module scratch;
    if (Readable(bytes, features, &scratch)) return std::string(proposal.name);
  }
  return std::nullopt;
}

std::string RefusedFeatureMessage(std::string_view module_name, std::string_view feature) {
  return fmt::format(
      "{}: error: the module uses {}, which Reef does not support (on either "
      "engine tier)",
      module_name, feature);
}

}  // namespace reef::wasm::detail
