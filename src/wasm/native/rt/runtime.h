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

// The per-thread state the generated code reads and writes, and the stack it runs on.
struct ThreadState {
  void* unwind_target = nullptr;  // jmp_buf* of the innermost invocation; null outside one
  uint32_t call_stack_depth = 0;  // wasm_rt_call_stack_depth (ceiling-relative)
  // The guard page below the fiber stack the guest runs on ([guard_begin, guard_end), the
  // usable stack starting at guard_end); both null when it runs on a thread's own stack.
  const char* guard_begin = nullptr;
  const char* guard_end = nullptr;
  uint32_t host_frames = 0;       // host functions running (EnterHostFrame) on that stack
  void* host = nullptr;           // the running invocation's reef_rt_host (reef_rt_current_host)
  int64_t* fuel_home = nullptr;   // reef_rt_fuel_home: the running invocation's fuel
  bool fuel_in_register = false;  // its code keeps the fuel in r15 (REEF_RT_REGISTERS)
  int fuel_stored = 1;            // reef_rt_fuel_stored: r15 does not hold the fuel now
};

// Installs `next` as this thread's state and returns the previous one.
ThreadState ExchangeThreadState(ThreadState next);

// The state a fiber starts with: no invocation yet, running on a stack whose guard page is
// [guard_begin, guard_end), for the instance whose reef_rt_host is `host`. Before the first
// switch to such a fiber, call PrepareStackOverflowTraps on the switching thread.
ThreadState FiberThreadState(const char* guard_begin, const char* guard_end, void* host);

// Makes a fault in the current fiber's guard page (ThreadState) trap call_stack_exhausted
// instead of killing the process: installs a SIGSEGV/SIGBUS handler once per process (it
// passes every other fault on to the handler it replaced, or the default action) and gives
// this thread an alternate signal stack if it has none. Idempotent; any thread.
void PrepareStackOverflowTraps();

// Wasm frames the running invocation has active: its depth counter relative to the start
// RunGuarded gave it. `state` is the invocation's thread state (0 outside one).
uint32_t ActiveFrames(const ThreadState& state, uint32_t max_call_depth);

// Counts a host frame toward the running invocation's call depth, as a wasm frame counts.
// Returns false, counting nothing, when that frame would pass the depth limit or the fiber
// stack has less than `stack_bytes` left below the caller (host C++ code must never reach
// the guard page: it cannot be unwound from there). Pair a true with LeaveHostFrame.
bool EnterHostFrame(size_t stack_bytes);
void LeaveHostFrame();

// Limits applied to memories and tables while an instance is created on this thread
// (wasm_rt_allocate_* clamp the declared maximum to these).
struct AllocationLimits {
  uint32_t max_memory_pages = 256;       // 64 KiB pages per memory (at most 65,535)
  uint32_t max_table_elements = 10'000;  // elements per table
};

// longjmp codes at and above this carry a Reef TrapKind raised by a host import.
inline constexpr int kHostTrapBase = 0x100;
// The longjmp code of an invocation cancelled while suspended (its fiber is being destroyed):
// not a trap of the guest's, only a way off the fiber's stack.
inline constexpr int kCancelled = 0x200;

// Unwinds the running invocation to its RunGuarded with `code`. REQUIRES: inside RunGuarded
// on this thread; no frame between here and there has a non-trivial destructor.
[[noreturn]] void Unwind(int code);

// Where a guarded run's metering fuel lives (rt/wasm-rt.h, "Registers of the generated
// code"): `home` is the fuel the host fills and reads (null: no fuel, e.g. instantiation);
// `in_register` says the code keeps it in r15 while it runs, so a stack overflow fault
// takes the fuel from the faulting context.
struct FuelHome {
  int64_t* home = nullptr;
  bool in_register = false;
};

// How a guarded run ended. `code` 0 means it returned normally.
struct RunOutcome {
  int code = 0;  // 0, a wasm_rt_trap_t, or kHostTrapBase + TrapKind
  bool trapped() const { return code != 0; }
  bool cancelled() const { return code == kCancelled; }
  // The Reef kind of the trap. REQUIRES: trapped().
  TrapKind kind() const;
  // wasm_rt_strerror's text, or the host trap kind's summary. REQUIRES: trapped().
  std::string_view message() const;
};

// Runs `fn(arg)` as one invocation: traps inside unwind back here. The call depth counter
// starts so that the generated prologue traps (call_stack_exhausted) on the
// `max_call_depth + 1`-th nested wasm frame. `limits`, when not null, applies to memories
// and tables allocated during the run (instantiation); `fuel` is the run's fuel. Restores
// the thread's previous state before returning, trap or not.
// REQUIRES: 0 < max_call_depth < 2^31; `fn` and what it calls are C code or C++ frames with
// trivial destructors only (a trap skips them); a host import's C++ work happens inside
// reef_rt_host::call_import, which returns before any trap unwinds.
RunOutcome RunGuarded(void (*fn)(void*), void* arg, uint32_t max_call_depth,
                      const AllocationLimits* limits = nullptr, FuelHome fuel = {});

// True when CallOnStack is available: x86-64 builds without sanitizers (ASan and TSan must be
// told of every stack switch; their builds use fibers for every run).
bool CanCallOnStack();

// Calls fn(arg) with the stack pointer at `stack_top` (the top end of a pooled stack, 16-byte
// aligned) and returns on the caller's stack: for a run that never suspends, two stack-pointer
// moves instead of a fiber's two context switches. Nothing may unwind across it (RunGuarded
// inside `fn` keeps traps on the new stack). REQUIRES: CanCallOnStack().
void CallOnStack(char* stack_top, void (*fn)(void*), void* arg);

// Number of distinct function types registered so far (process-wide).
uint32_t RegisteredFuncTypeCount();

}  // namespace reef::wasm::native::rt
