#include "wasm/native/fiber.h"

#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#if defined(__SANITIZE_ADDRESS__)
#define REEF_FIBER_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__)
#define REEF_FIBER_TSAN 1
#endif
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define REEF_FIBER_ASAN 1
#endif
#if __has_feature(thread_sanitizer)
#define REEF_FIBER_TSAN 1
#endif
#endif
#ifdef REEF_FIBER_ASAN
#include <sanitizer/common_interface_defs.h>
#endif
#ifdef REEF_FIBER_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace reef::wasm::native {

namespace {

size_t RoundUp(size_t bytes, size_t page) {
  return (bytes + page - 1) / page * page;
}

// Fiber stacks mapped in the whole process. Each is two memory mappings (the stack and its
// guard page), and the kernel's vm.max_map_count (65,530 by default) bounds all of a
// process's mappings: past it, every mmap fails and so does loading a shared library, for
// every module. The stacks may use what is left after a quarter of the count (at least
// 16,384 mappings) for the rest of the process: 24,573 stacks by default.
std::atomic<size_t> g_process_stacks{0};

size_t ProcessStackLimit() {
  static const size_t limit = [] {
    size_t max_map_count = 65'530;
    if (std::FILE* f = std::fopen("/proc/sys/vm/max_map_count", "r")) {
      unsigned long value = 0;
      if (std::fscanf(f, "%lu", &value) == 1 && value > 0) max_map_count = value;
      std::fclose(f);
    }
    const size_t reserve = std::max<size_t>(max_map_count / 4, 16'384);
    return max_map_count > reserve ? (max_map_count - reserve) / 2 : 1;
  }();
  return limit;
}

void Unmap(const StackPool::Stack& stack) {
  ::munmap(stack.base, stack.size);
  g_process_stacks.fetch_sub(1, std::memory_order_relaxed);
}

// Hands Boost.Context the stack a Fiber acquired; gives it back to the pool when Boost is done
// with it (the body returned or was unwound).
struct PooledStackAllocator {
  StackPool* pool;
  StackPool::Stack stack;

  boost::context::stack_context allocate() {
    boost::context::stack_context context;
    context.size = stack.size - stack.guard;
    context.sp = stack.base + stack.size;  // stacks grow down from the top
    return context;
  }
  void deallocate(boost::context::stack_context&) noexcept { pool->Release(stack); }
};

}  // namespace

bool StackPool::Stack::InGuard(const void* address) const {
  const char* a = static_cast<const char*>(address);
  return a >= base && a < base + guard;
}

StackPool::StackPool(size_t stack_bytes, size_t max_pooled)
    : page_(static_cast<size_t>(::sysconf(_SC_PAGESIZE))), max_pooled_(max_pooled) {
  stack_bytes_ = RoundUp(stack_bytes, page_);
}

StackPool::~StackPool() {
  for (const Stack& stack : free_) Unmap(stack);
}

Result<StackPool::Stack> StackPool::Acquire() {
  if (!free_.empty()) {
    Stack stack = free_.back();
    free_.pop_back();
    return stack;
  }
  const size_t limit = ProcessStackLimit();
  if (g_process_stacks.fetch_add(1, std::memory_order_relaxed) >= limit) {
    g_process_stacks.fetch_sub(1, std::memory_order_relaxed);
    return Status::Unavailable(fmt::format(
        "too many native invocations in progress: {} fiber stacks, the most this process "
        "keeps (each takes 2 of vm.max_map_count's memory mappings)",
        limit));
  }
  Stack stack;
  stack.guard = page_;
  stack.size = stack_bytes_ + page_;
  void* mapping = ::mmap(nullptr, stack.size, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (mapping == MAP_FAILED) {
    const int error = errno;
    g_process_stacks.fetch_sub(1, std::memory_order_relaxed);
    return Status::Unavailable(
        fmt::format("cannot map a {} byte fiber stack: {}", stack.size, std::strerror(error)));
  }
  stack.base = static_cast<char*>(mapping);
  if (::mprotect(stack.base, stack.guard, PROT_NONE) != 0) {
    const int error = errno;
    Unmap(stack);
    return Status::Unavailable(
        fmt::format("cannot protect a fiber stack's guard page: {}", std::strerror(error)));
  }
  ++mapped_;
  return stack;
}

void StackPool::Release(Stack stack) {
  if (free_.size() < max_pooled_) {
    free_.push_back(stack);
    return;
  }
  Unmap(stack);
  --mapped_;
}

Result<std::unique_ptr<Fiber>> Fiber::Create(StackPool& pool, Body body) {
  REEF_ASSIGN_OR_RETURN(StackPool::Stack stack, pool.Acquire());
  return std::unique_ptr<Fiber>(new Fiber(pool, stack, std::move(body)));
}

Fiber::Fiber(StackPool& pool, StackPool::Stack stack, Body body)
    : pool_(pool), stack_(stack), body_(std::move(body)) {
#ifdef REEF_FIBER_TSAN
  tsan_fiber_ = __tsan_create_fiber(0);
#endif
}

Fiber::~Fiber() {
  if (started_ && !finished_) {
    cancelled_ = true;
    Resume();
  }
  if (!started_) pool_.Release(stack_);  // Boost never had it
#ifdef REEF_FIBER_TSAN
  __tsan_destroy_fiber(tsan_fiber_);
#endif
}

void Fiber::Resume() {
  if (!started_) {
    started_ = true;
    fiber_ = boost::context::fiber(
        std::allocator_arg, PooledStackAllocator{&pool_, stack_},
        [this](boost::context::fiber&& caller) {
          caller_ = std::move(caller);
#ifdef REEF_FIBER_ASAN
          __sanitizer_finish_switch_fiber(nullptr, &caller_stack_bottom_, &caller_stack_size_);
#endif
          if (!cancelled_) body_(*this);
          finished_ = true;
#ifdef REEF_FIBER_ASAN
          // The last switch out: the body's fake stack goes (nothing to save).
          __sanitizer_start_switch_fiber(nullptr, caller_stack_bottom_, caller_stack_size_);
#endif
          return std::move(caller_);
        });
  }
  running_ = true;
#ifdef REEF_FIBER_TSAN
  tsan_caller_ = __tsan_get_current_fiber();
  __tsan_switch_to_fiber(tsan_fiber_, 0);
#endif
#ifdef REEF_FIBER_ASAN
  void* fake_stack = nullptr;
  __sanitizer_start_switch_fiber(&fake_stack, stack_.base + stack_.guard,
                                 stack_.size - stack_.guard);
#endif
  fiber_ = std::move(fiber_).resume();
#ifdef REEF_FIBER_ASAN
  __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
#endif
#ifdef REEF_FIBER_TSAN
  // A body that suspended switched back already; one that returned could not.
  __tsan_switch_to_fiber(tsan_caller_, 0);
#endif
  running_ = false;
}

bool Fiber::Suspend() {
#ifdef REEF_FIBER_TSAN
  __tsan_switch_to_fiber(tsan_caller_, 0);
#endif
#ifdef REEF_FIBER_ASAN
  __sanitizer_start_switch_fiber(&fake_stack_, caller_stack_bottom_, caller_stack_size_);
#endif
  caller_ = std::move(caller_).resume();
#ifdef REEF_FIBER_ASAN
  __sanitizer_finish_switch_fiber(fake_stack_, &caller_stack_bottom_, &caller_stack_size_);
#endif
  return !cancelled_;
}

}  // namespace reef::wasm::native
