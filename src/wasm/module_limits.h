// ModuleLimits: what a module may declare before Reef loads it (bytes, counts, load memory).
//
// Every limit is checked by the pre-pass (wasm/binary_scan.h) before the interpreter's reader
// allocates anything for the module; instantiation limits are in EngineLimits (engine.h).
// The defaults follow the JS embedding's implementation limits (the WebAssembly JS API,
// "Limits"), tightened where wabt's per-item memory makes a count expensive; docs/engine.md
// lists them with the memory they bound.
//
// Thread ownership: plain values; any thread.
#pragma once

#include <cstdint>

namespace reef::wasm {

struct ModuleLimits {
  uint64_t max_module_bytes = 64ull << 20;  // bytes of .wasm (or .wat text)

  // Declared counts. Index spaces count imports too (functions, tables, globals).
  uint32_t max_types = 100'000;           // function types
  uint32_t max_imports = 100'000;         // imports of any kind
  uint32_t max_functions = 100'000;       // imported + defined functions
  uint32_t max_tables = 100;              // imported + defined tables
  uint32_t max_globals = 100'000;         // imported + defined globals
  uint32_t max_exports = 100'000;         // exports of any kind
  uint32_t max_elem_segments = 100'000;   // element segments
  uint32_t max_data_segments = 100'000;   // data segments
  uint32_t max_type_arity = 1'000;        // params of one function type, and its results
  uint32_t max_function_locals = 50'000;  // params + locals of one function

  // Memory a load may use: the pre-pass estimates the bytes the interpreter's reader and
  // Reef's metadata will allocate from the declared counts (measured per item, see
  // docs/engine.md) and refuses a module whose estimate exceeds
  // load_memory_factor * module bytes + load_memory_allowance.
  uint32_t load_memory_factor = 16;              // bytes of memory per module byte
  uint64_t load_memory_allowance = 16ull << 20;  // bytes, whatever the module's size

  // Deepest nesting of parentheses and block/loop/if/try...end in .wat text (wabt's text
  // parser recurses per level; tens of thousands of levels overflow the stack).
  uint32_t max_text_nesting = 1'000;
};

}  // namespace reef::wasm
