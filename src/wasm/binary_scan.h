// ScanBinary: the pre-pass every wasm binary goes through before wabt's reader sees it.
//
// wabt 1.0.32 trusts some declared counts (a DataCount of 2^32-1 reserves that many segments,
// a local declaration may claim 2^32-1 locals) and allocates per declared item far more than
// the item's bytes. The scan walks the section framing and every vector the module declares,
// without decoding function bodies, and refuses the module before anything is allocated for
// it when:
//   - a count or size claims more entries or bytes than remain (each entry takes at least one
//     byte): InvalidArgument "<name>:<offset>: error: malformed <section> section: ...";
//   - a count passes a ModuleLimits limit, or the load's estimated memory passes
//     load_memory_factor * size + load_memory_allowance: LimitExceeded naming the limit;
//   - a custom section's name is not valid UTF-8 or runs past its section (the spec's rule:
//     a custom section's framing and name are checked, its contents are not).
// Offsets are byte offsets in the binary, printed as 7 hex digits like wabt's.
//
// Cost: one pass over the section headers and the non-code sections; function bodies are
// skipped by their declared size. It reads only `bytes` and allocates O(functions + types).
// Only when the code is large enough that its flat per-byte charge would pass the load memory
// bound (a few hundred KiB) is it decoded once more, with wabt's reader and a delegate that
// only counts, to estimate from its actual instructions.
//
// Thread ownership: a pure function; any thread.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"
#include "wasm/module_limits.h"

namespace reef::wasm {

// What a binary declares, as counted by ScanBinary.
struct ModuleShape {
  uint32_t types = 0;
  uint64_t type_arity = 0;  // params + results over all types
  uint32_t imports = 0;
  uint32_t functions = 0;  // imported + defined
  uint32_t imported_functions = 0;
  uint32_t tables = 0;    // imported + defined
  uint32_t memories = 0;  // imported + defined
  uint32_t globals = 0;   // imported + defined
  uint32_t exports = 0;
  uint32_t elem_segments = 0;
  uint64_t elem_entries = 0;  // function indices or expressions over all element segments
  uint32_t data_segments = 0;
  uint64_t data_bytes = 0;   // payload bytes over all data segments
  uint64_t code_bytes = 0;   // bytes of function bodies
  uint64_t local_decls = 0;  // (count, type) local declarations over all functions
  uint64_t name_bytes = 0;   // bytes of import, export and function names
  // Counted by decoding the code, only when the flat rate per code byte does not fit the
  // load memory bound (code_counted); else 0.
  bool code_counted = false;
  uint64_t instructions = 0;      // instructions, constant expressions included
  uint64_t br_table_targets = 0;  // over all br_table instructions
  uint32_t max_block_depth = 0;   // deepest block/loop/if nesting in one function
  // Function names from the "name" custom section, (function index, name) in section order.
  // Empty when there is none or it is malformed (the spec never refuses a module for it).
  std::vector<std::pair<uint32_t, std::string>> function_names;
  // Bytes the interpreter's reader and Reef's metadata are estimated to allocate.
  uint64_t load_bytes_estimate = 0;
};

// Checks `bytes` as described above. `name` only labels error messages.
// Errors: InvalidArgument (malformed: counts, sizes, LEB128 encodings, section framing,
// custom section names); LimitExceeded naming the ModuleLimits field.
Result<ModuleShape> ScanBinary(std::span<const uint8_t> bytes, std::string_view name,
                               const ModuleLimits& limits);

// The load memory estimate for `shape` read from a binary of `module_bytes` bytes: per-item
// costs measured on wabt 1.0.32 (docs/engine.md), in bytes.
uint64_t EstimateLoadBytes(const ModuleShape& shape, uint64_t module_bytes);

}  // namespace reef::wasm
