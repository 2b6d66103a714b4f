// The WebAssembly proposals Reef runs, identical on both engine tiers, and the names of the
// ones it refuses. Thread ownership: pure functions, any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "wabt/feature.h"

namespace reef::wasm::detail {

// What every reader and validator of Reef uses: wabt 1.0.32's defaults (mutable globals,
// saturating conversions, sign extension, multi-value, bulk memory, reference types) without
// SIMD, which the native tier's C writer cannot compile. Threads, tail calls, exception
// handling, memory64, multiple memories and the rest are off, as in wabt.
wabt::Features SupportedFeatures();

// For a module that SupportedFeatures cannot read: the name of the proposal it uses that Reef
// refuses ("SIMD (v128)", "tail calls", "exception handling", "threads (atomics, shared
// memory)", "memory64", "multiple memories", ...), found by reading it again with that one
// proposal enabled. nullopt when no single proposal makes it readable (it is malformed, or
// uses several). Cost: up to one more read of the module per proposal, on the error path only.
std::optional<std::string> RefusedFeature(std::span<const uint8_t> bytes);

// The error text for a module refused because it uses `feature`.
std::string RefusedFeatureMessage(std::string_view module_name, std::string_view feature);

}  // namespace reef::wasm::detail
