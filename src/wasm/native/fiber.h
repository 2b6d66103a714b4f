// Fibers for resumable native invocations: a guest call runs on a stack of its own, so it
// can stop in the middle (out of fuel, a host call that waits) and go on later exactly there.
//
// A StackPool hands out fixed-size stacks, each with an inaccessible guard page below it
// (a stack overflow faults there instead of writing into other memory), and keeps released
// ones for reuse: mapping a fresh protected stack costs 140-300 us here, a pooled one nothing
// (../shared/notes/engine-facts.md). A Fiber runs one function on one pooled stack
// (Boost.Context). Every switch is told to ASan and TSan in sanitizer builds.
//
// Thread ownership: a StackPool and its Fibers belong to one thread (a reactor). A fiber
// that has started must be resumed on the thread that started it (the runtime's thread-local
// state travels with the thread, not the fiber).
#pragma once

#include <boost/context/fiber.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/status.h"

namespace reef::wasm::native {

class StackPool {
 public:
  // Stacks of `stack_bytes` usable bytes (rounded up to whole pages) plus one guard page;
  // at most `max_pooled` released stacks are kept.
  explicit StackPool(size_t stack_bytes = size_t{1} << 20, size_t max_pooled = 64);
  ~StackPool();
  StackPool(const StackPool&) = delete;
  StackPool& operator=(const StackPool&) = delete;

  struct Stack {
    char* base = nullptr;  // lowest address of the mapping (the guard page)
    size_t size = 0;       // bytes of the mapping, guard page included
    size_t guard = 0;      // bytes of the guard page at `base`
    // True when `address` lies in this stack's guard page.
    bool InGuard(const void* address) const;
  };

  // A stack from the pool, or a new mapping.
  // Errors: Unavailable when the stack cannot be mapped (address space or the mapping count
  // exhausted).
  Result<Stack> Acquire();
  // Gives a stack back (unmapped if the pool is full).
  void Release(Stack stack);

  size_t stack_bytes() const { return stack_bytes_; }
  size_t pooled() const { return free_.size(); }
  size_t mapped() const { return mapped_; }  // stacks mapped and not yet unmapped

 private:
  size_t stack_bytes_;
  size_t page_;
  size_t max_pooled_;
  size_t mapped_ = 0;
  std::vector<Stack> free_;
};

class Fiber {
 public:
  // The function a fiber runs; it receives the fiber so it can Suspend.
  using Body = std::function<void(Fiber&)>;

  // Prepares `body` on a stack of `pool` (REQUIRES: the pool outlives the fiber). Nothing
  // runs until Resume. Errors: those of StackPool::Acquire.
  static Result<std::unique_ptr<Fiber>> Create(StackPool& pool, Body body);
  // A fiber destroyed while its body is suspended is cancelled first: it is resumed once
  // more with Suspend returning false, and the body must then return without suspending
  // again (no exception crosses its frames, so generated C code may be on its stack).
  ~Fiber();
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;

  // Runs the body until it calls Suspend or returns. REQUIRES: !finished() and not called
  // from inside this fiber.
  void Resume();
  // From inside the body: returns control to Resume's caller. Returns true when resumed,
  // false when the fiber is being destroyed (the body must return without suspending).
  [[nodiscard]] bool Suspend();

  bool started() const { return started_; }
  bool finished() const { return finished_; }
  // True once the fiber is being destroyed (Suspend has returned or will return false).
  bool cancelled() const { return cancelled_; }
  bool running() const { return running_; }
  const StackPool::Stack& stack() const { return stack_; }

 private:
  Fiber(StackPool& pool, StackPool::Stack stack, Body body);

  StackPool& pool_;
  StackPool::Stack stack_;
  Body body_;
  boost::context::fiber fiber_;   // the body, while it is not running (made on first Resume)
  boost::context::fiber caller_;  // Resume's caller, while the body runs
  bool started_ = false;
  bool finished_ = false;
  bool running_ = false;
  bool cancelled_ = false;
  // Sanitizer bookkeeping (unused in other builds): the stack Resume was called on (ASan),
  // the body's fake stack while it is suspended (ASan), the fibers (TSan).
  [[maybe_unused]] const void* caller_stack_bottom_ = nullptr;
  [[maybe_unused]] size_t caller_stack_size_ = 0;
  [[maybe_unused]] void* fake_stack_ = nullptr;
  [[maybe_unused]] void* tsan_fiber_ = nullptr;
  [[maybe_unused]] void* tsan_caller_ = nullptr;
};

}  // namespace reef::wasm::native
