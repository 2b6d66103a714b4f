// SpinBriefly: a waiting thread's short spin before it blocks on a condition variable.
//
// A hand-off between two threads that sleep in between costs a futex wake and a context switch
// on each side (5-20 us on this project's 2-core VM, docs/benchmarks.md); while work goes back
// and forth (a projector's guest on its reactor and its statements on the SQLite thread, a
// command's reads and its fold), the next item usually arrives within a few microseconds. A
// thread that just finished an item therefore polls for the next one for at most `budget`
// before it sleeps. A poster whose consumer is spinning pays no system call either: notifying a
// condition variable nobody waits on is a user-space check. The budget is short (20 us) so a
// saturated machine loses little to it: 64-client deposits over HTTP measured the same with and
// without the spin, a projector's catch-up ran 2.2x faster with it (docs/benchmarks.md).
//
// Thread ownership: none; `ready` is called on the spinning thread and must be cheap and
// thread-safe (an atomic load).
#pragma once

#include <chrono>

namespace reef {

// How long a thread that just ran an item polls before it blocks.
inline constexpr std::chrono::microseconds kSpinBeforeSleep{20};

// The processor's hint that this thread is spinning (frees the core's shared resources for a
// sibling hyperthread, saves power).
inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Polls `ready` until it returns true (then true) or `budget` passed (then false).
template <typename Ready>
bool SpinBriefly(Ready&& ready, std::chrono::steady_clock::duration budget = kSpinBeforeSleep) {
  const auto deadline = std::chrono::steady_clock::now() + budget;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (ready()) return true;
      CpuRelax();
    }
    if (std::chrono::steady_clock::now() >= deadline) return false;
  }
}

}  // namespace reef
