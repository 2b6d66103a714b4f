// Reef's runtime for natively compiled guests: the host side of native/rt/wasm-rt.h.
//
// The generated code traps by unwinding (longjmp) to the innermost invocation on its thread
// and counts call depth in a thread-local counter. RunGuarded is the one place that sets up
// an invocation: it installs a fresh unwind target and depth counter, runs the guest, and
// restores the previous ones, so invocations nest (a host import may run another instance)
// and any number of threads run native code at once.
//
// Thread ownership: everything here is per thread, except the function-type registry
// (process-wide, mutex-protected). Whoever switches between suspended invocations on one
// thread (later: fibers) swaps the state with ExchangeThreadState.
#pragma once

#include <cstdint>
#include <string_view>

#include "wasm/trap.h"

namespace reef::wasm::native::rt {

// The per-thread state the generated code reads and writes.
struct ThreadState {
  void* unwind_target = nullptr;  // jmp_buf* of the innermost invocation; null outside one
  uint32_t call_stack_depth = 0;  // wasm_rt_call_stack_depth (ceiling-relative)
};

// Installs `next` as this thread's state and returns the previous one.
ThreadState ExchangeThreadState(ThreadState next);

// Limits applied to memories and tables while an instance is created on this thread
// (wasm_rt_allocate_* clamp the declared maximum to these).
struct AllocationLimits {
  uint32_t max_memory_pages = 256;       // 64 KiB pages per memory (at most 65,535)
  uint32_t max_table_elements = 10'000;  // elements per table
};

// How a guarded run ended. `code` 0 means it returned normally.
struct RunOutcome {
  int code = 0;  // 0, a wasm_rt_trap_t, or kHostTrapBase + TrapKind
  bool trapped() const { return code != 0; }
  // The Reef kind of the trap. REQUIRES: trapped().
  TrapKind kind() const;
  // wasm_rt_strerror's text, or the host trap kind's summary. REQUIRES: trapped().
  std::string_view message() const;
};

// longjmp codes at and above this carry a Reef TrapKind raised by a host import.
inline constexpr int kHostTrapBase = 0x100;

// Runs `fn(arg)` as one invocation: traps inside unwind back here. The call depth counter
// starts so that the generated prologue traps (call_stack_exhausted) on the
// `max_call_depth + 1`-th nested wasm frame. `limits`, when not null, applies to memories
// and tables allocated during the run (instantiation). Restores the thread's previous state
// before returning, trap or not.
// REQUIRES: 0 < max_call_depth < 2^31; `fn` and what it calls are C code or C++ frames with
// trivial destructors only (a trap skips them); a host import's C++ work happens inside
// reef_rt_host::call_import, which returns before any trap unwinds.
RunOutcome RunGuarded(void (*fn)(void*), void* arg, uint32_t max_call_depth,
                      const AllocationLimits* limits = nullptr);

// Number of distinct function types registered so far (process-wide).
uint32_t RegisteredFuncTypeCount();

}  // namespace reef::wasm::native::rt
