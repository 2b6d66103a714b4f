// The load memory estimate of the pre-pass (wasm/binary_scan.h): what loading a module
// costs per declared item, and the optional count of its code's instructions.
//
// Thread ownership: pure functions; any thread.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "core/status.h"
#include "wasm/binary_scan.h"

namespace reef::wasm::detail {

// Decodes `bytes` with wabt's own reader and a delegate that only counts, and fills in
// shape->instructions, br_table_targets, max_block_depth and code_counted. The reader
// allocates only for counts it checks against the bytes left.
// Errors: InvalidArgument "<name>:<offset>: error: <wabt's reason>" when wabt cannot read it.
Status CountCode(std::span<const uint8_t> bytes, std::string_view name, ModuleShape* shape);

// "1000000 functions (about 350 bytes each)": the item of `shape` that costs most.
std::string LargestCost(const ModuleShape& shape, uint64_t module_bytes);

}  // namespace reef::wasm::detail
