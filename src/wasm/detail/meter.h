// Metering: the instruction count every engine tier charges, inserted into the module itself.
//
// Both tiers run the metered module, so an invocation's count is the same on every tier, run
// and machine (docs/engine.md "Metering"). The pass, on wabt's IR of a validated module:
// - appends a mutable i64 global, the fuel, which the host fills before a slice runs;
// - appends a one-element funcref table whose element the host sets to its out-of-fuel
//   function (`() -> ()`, appended as a type), so nothing is renumbered: every other index
//   stays what it was;
// - charges each basic block its cost before it runs (`fuel -= cost`) and checks at every
//   loop header and at the entry of every function that calls a function (`if fuel < 0:
//   call_indirect out-of-fuel`), so a slice stops only there;
// - charges bulk operations by their size before they run, then checks.
//
// Cost of a basic block: one per instruction in it (block, loop and if count one each where
// they open; else and end count nothing), the metering code itself none. A basic block ends
// after a branch (br, br_if, br_table, return, unreachable) and at each nested block, loop or
// if; the rest of the sequence is a new block. Bulk cost: memory.fill/copy/init one per
// kBulkMemoryBytesPerInstruction bytes, table.fill/copy/init/grow one per
// kBulkTableElementsPerInstruction elements, memory.grow kGrowPageInstructions per page.
//
// Thread ownership: stateless; any thread.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"
#include "wabt/ir.h"

namespace reef::wasm::detail {

// Bump this whenever the cost model or the inserted code changes: it is part of every
// compiled artifact's cache key.
inline constexpr uint32_t kMeterVersion = 1;

inline constexpr uint32_t kBulkMemoryBytesPerInstruction = 64;
inline constexpr uint32_t kBulkTableElementsPerInstruction = 8;
inline constexpr uint32_t kGrowPageInstructions = 65536 / kBulkMemoryBytesPerInstruction;

// Where the pass put its fields (indices in the metered module's index spaces).
struct MeterLayout {
  uint32_t fuel_global = 0;  // mutable i64; a slice stops at a check that finds it below 0
  uint32_t meter_table = 0;  // funcref table of one element: the out-of-fuel function
  uint32_t meter_type = 0;   // the type index of `() -> ()`
};

// Meters `module` in place. REQUIRES: `module` is valid (as read from a validated binary).
// Errors: InvalidArgument when the module uses an instruction the pass does not meter
// (exception handling).
Result<MeterLayout> MeterModule(wabt::Module& module);

// A module's binary with metering inserted, and where the pass put its fields.
struct MeteredBinary {
  std::vector<uint8_t> bytes;
  MeterLayout layout;
};

// Reads `bytes` (a module Module::FromBinary accepted), meters it and encodes it again.
// Errors: InvalidArgument when the module cannot be read or metered.
Result<MeteredBinary> MeterBinary(std::span<const uint8_t> bytes);

}  // namespace reef::wasm::detail
