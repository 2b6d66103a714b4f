// ByteBudget: a server-wide count of bytes that may be held at once by some kind of work
// (request bodies being read, parsed and handled: ServerLimits::max_concurrent_body_bytes),
// with a first-in-first-out queue of work waiting for room.
//
// One piece of work larger than the whole budget is admitted when nothing else holds any, so
// every request the size limits allow can run. Waiters are resumed in arrival order; a large
// waiter at the head holds back smaller ones behind it, so it is never starved.
//
// Thread ownership: any thread; an internal mutex. `resume` callbacks run on the thread that
// released the room (or that called Acquire, when it fits at once), outside the lock: they
// should only post work to their own executor.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <utility>
#include <vector>

#include "core/mutex.h"

namespace reef::server::detail {

class ByteBudget {
 public:
  explicit ByteBudget(uint64_t capacity) : capacity_(capacity) {}

  // Takes `bytes` and calls `resume` now when they fit, or queues `resume` to be called once
  // they do (the bytes are taken for it then). Each call must be matched by Release(bytes)
  // after `resume` ran.
  void Acquire(uint64_t bytes, std::function<void()> resume) {
    {
      MutexLock lock(mu_);
      if (!waiters_.empty() || !FitsLocked(bytes)) {
        waiters_.push_back({bytes, std::move(resume)});
        return;
      }
      used_ += bytes;
    }
    resume();
  }

  // Gives back `bytes` taken by Acquire and resumes the waiters that now fit, in order.
  void Release(uint64_t bytes) {
    std::vector<std::function<void()>> ready;
    {
      MutexLock lock(mu_);
      used_ -= bytes;
      while (!waiters_.empty() && FitsLocked(waiters_.front().bytes)) {
        used_ += waiters_.front().bytes;
        ready.push_back(std::move(waiters_.front().resume));
        waiters_.pop_front();
      }
    }
    for (auto& resume : ready) resume();
  }

  // Drops every waiter without resuming it (the server is stopping; their connections go).
  // Returns the callbacks so the caller destroys them where that is safe.
  std::vector<std::function<void()>> TakeWaiters() {
    MutexLock lock(mu_);
    std::vector<std::function<void()>> out;
    for (auto& waiter : waiters_) out.push_back(std::move(waiter.resume));
    waiters_.clear();
    return out;
  }

  uint64_t used() const {
    MutexLock lock(mu_);
    return used_;
  }
  size_t waiting() const {
    MutexLock lock(mu_);
    return waiters_.size();
  }

 private:
  bool FitsLocked(uint64_t bytes) const REQUIRES(mu_) {
    return used_ == 0 || used_ + bytes <= capacity_;
  }

  struct Waiter {
    uint64_t bytes;
    std::function<void()> resume;
  };

  const uint64_t capacity_;
  mutable Mutex mu_;
  uint64_t used_ GUARDED_BY(mu_) = 0;
  std::deque<Waiter> waiters_ GUARDED_BY(mu_);
};

}  // namespace reef::server::detail
