// Invocation: one call of a guest export, resumable across budgeted slices.
//
// Run(budget) runs a slice of about `budget` instructions, counted by the metering every tier
// shares (docs/engine.md "Metering": one per wasm instruction of each basic block entered,
// plus bulk costs), and ends in exactly one RunState. Between slices the invocation's frames
// and values are kept intact, so slicing changes neither a result nor the count.
//
// Thread ownership: reactor-owned, like the Instance that started it. The instance must
// outlive the invocation.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "wasm/trap.h"
#include "wasm/types.h"

namespace reef::wasm {

enum class RunState : uint8_t {
  kFinished,         // results() holds the export's results
  kBudgetExhausted,  // call Run again to continue
  kSuspended,        // waiting in a host call; CompleteHostCall, then Run
  kTrapped,          // trap() says why; the invocation is over
};

std::string_view RunStateName(RunState state);

// Diagnostics while an invocation is active (not finished or trapped).
struct Telemetry {
  uint64_t instructions = 0;  // instructions charged so far (see Run)
  uint32_t call_depth = 0;    // active frames, host frames included
  std::string function;       // function executing now (or the host import suspended in)
  uint32_t offset = 0;        // position in that function's engine code
};

class Invocation {
 public:
  virtual ~Invocation() = default;

  // Runs a slice with `budget` instructions of fuel plus the last slice's debt. REQUIRES:
  // budget > 0 and state() is kBudgetExhausted (a fresh invocation starts so) — not
  // suspended, finished or trapped. The slice stops at the first check (a loop header,
  // or the entry of a function that calls others) that finds the fuel below 0 and is then charged
  // exactly `budget`; a slice that ends early (finish, trap, host call) is charged what it ran
  // (docs/engine.md "Metering"). A host function may run other invocations of the same engine; one
  // that would nest deeper than EngineLimits::max_nested_invocations traps host_error instead of
  // running. Called from inside this invocation's own host function, it returns the current state
  // without running.
  virtual RunState Run(uint64_t budget) = 0;

  // Resumes a suspended invocation with the host call's results (typed as the import's
  // signature declares). Errors: FailedPrecondition if not suspended; InvalidArgument if the
  // results do not match the signature.
  virtual Status CompleteHostCall(std::span<const WasmValue> results) = 0;
  // Resumes a suspended invocation by trapping it (the host call failed).
  virtual Status FailHostCall(TrapKind kind, std::string message) = 0;

  virtual RunState state() const = 0;
  // REQUIRES: state() == kFinished.
  virtual const std::vector<WasmValue>& results() const = 0;
  // REQUIRES: state() == kTrapped.
  virtual const Trap& trap() const = 0;
  // "module.name" of the import this invocation is suspended in. REQUIRES: kSuspended.
  virtual const std::string& suspended_in() const = 0;
  virtual Telemetry telemetry() const = 0;
  // telemetry().instructions without the rest (no frame walk, no strings): what the
  // schedulers read around every slice.
  virtual uint64_t instructions() const = 0;
};

}  // namespace reef::wasm
