// Traps: why a wasm invocation stopped abnormally, as one table of kinds.
//
// Thread ownership: plain values; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace reef::wasm {

// The trap kinds, one row each: enumerator, stable name (CLI, protocol, logs), summary.
#define REEF_TRAP_KINDS(X)                                                                         \
  X(kUnreachable, "unreachable", "the guest executed `unreachable`")                               \
  X(kMemoryOutOfBounds, "memory_out_of_bounds", "a load, store or bulk memory op left memory")     \
  X(kTableOutOfBounds, "table_out_of_bounds",                                                      \
    "a table access or call_indirect index left the table")                                        \
  X(kIndirectCallMismatch, "indirect_call_mismatch",                                               \
    "call_indirect reached a null entry or a function of another type")                            \
  X(kIntegerDivideByZero, "integer_divide_by_zero", "integer division or remainder by zero")       \
  X(kIntegerOverflow, "integer_overflow", "signed division overflow or float-to-int out of range") \
  X(kInvalidConversion, "invalid_conversion", "float-to-int conversion of NaN")                    \
  X(kCallStackExhausted, "call_stack_exhausted", "call depth reached the configured limit")        \
  X(kValueStackExhausted, "value_stack_exhausted", "value stack reached the configured limit")     \
  X(kHostBounds, "host_bounds", "a host import got a buffer outside guest memory")                 \
  X(kHostError, "host_error", "a host import rejected its call")                                   \
  X(kGuestFailure, "guest_failure", "the guest reported a failure through the `fail` import")      \
  X(kOther, "other", "a trap the engine could not classify")

enum class TrapKind : uint8_t {
#define REEF_X(name, text, summary) name,
  REEF_TRAP_KINDS(REEF_X)
#undef REEF_X
};

std::string_view TrapKindName(TrapKind kind);
std::string_view TrapKindSummary(TrapKind kind);

// A trap report. `function` names the wasm function that was executing (export name, name
// section entry, or "func[N]"), or "module.name" of the host import that trapped.
// `offset` is the position in the engine's internal code of that function (engine
// instructions, stable for one module and engine version), not a .wasm file offset.
struct Trap {
  TrapKind kind = TrapKind::kOther;
  std::string message;
  std::string function;
  uint32_t offset = 0;

  // "integer_divide_by_zero in `div` at +12: integer divide by zero".
  std::string ToString() const;
};

// Maps an interpreter trap message to its kind (table-driven on the message prefix).
TrapKind ClassifyTrapMessage(std::string_view message);

}  // namespace reef::wasm
