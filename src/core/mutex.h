// Mutex, SharedMutex and CondVar: std::mutex, std::shared_mutex and std::condition_variable
// as clang thread-safety capabilities (core/thread_annotations.h), with their scoped lockers
// MutexLock, ReaderLock and WriterLock. Same behaviour and cost as the std types they wrap;
// what they add is that `clang++ -Wthread-safety` (scripts/thread_safety.sh, in `make test`)
// checks every GUARDED_BY member and REQUIRES function against them.
//
// Use the scoped lockers; Mutex and SharedMutex also meet the standard Lockable requirements
// (lock/unlock/try_lock, and lock_shared/... for SharedMutex), so std::unique_lock and
// std::shared_lock still work where a lock is taken conditionally, but the analysis does not
// see those: a member they guard cannot be GUARDED_BY.
//
// Thread ownership: any thread (they are the synchronization).
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>

#include "core/thread_annotations.h"

namespace reef {

// An exclusive lock: std::mutex as a capability.
class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() ACQUIRE() { mu_.lock(); }
  void unlock() RELEASE() { mu_.unlock(); }
  bool try_lock() TRY_ACQUIRE(true) { return mu_.try_lock(); }

  // The wrapped std::mutex, for CondVar only: locking it directly hides the lock from the
  // analysis.
  std::mutex& native() RETURN_CAPABILITY(this) { return mu_; }

 private:
  std::mutex mu_;
};

// A reader-writer lock: std::shared_mutex as a capability.
class CAPABILITY("shared_mutex") SharedMutex {
 public:
  SharedMutex() = default;
  SharedMutex(const SharedMutex&) = delete;
  SharedMutex& operator=(const SharedMutex&) = delete;

  void lock() ACQUIRE() { mu_.lock(); }
  void unlock() RELEASE() { mu_.unlock(); }
  bool try_lock() TRY_ACQUIRE(true) { return mu_.try_lock(); }
  void lock_shared() ACQUIRE_SHARED() { mu_.lock_shared(); }
  void unlock_shared() RELEASE_SHARED() { mu_.unlock_shared(); }
  bool try_lock_shared() TRY_ACQUIRE_SHARED(true) { return mu_.try_lock_shared(); }

 private:
  std::shared_mutex mu_;
};

// Holds `mu` from construction to destruction, like std::lock_guard; Unlock() and Lock() let
// go of it and take it again inside the scope (like std::unique_lock's unlock/lock).
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~MutexLock() RELEASE() {
    if (held_) mu_.unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  // REQUIRES: held (not unlocked since construction or the last Lock()).
  void Unlock() RELEASE() {
    mu_.unlock();
    held_ = false;
  }
  // REQUIRES: not held (after Unlock()).
  void Lock() ACQUIRE() {
    mu_.lock();
    held_ = true;
  }

 private:
  Mutex& mu_;
  bool held_ = true;
};

// Holds `mu` shared from construction to destruction, like std::shared_lock; Unlock() lets
// go of it early.
class SCOPED_CAPABILITY ReaderLock {
 public:
  explicit ReaderLock(SharedMutex& mu) ACQUIRE_SHARED(mu) : mu_(mu) { mu_.lock_shared(); }
  ~ReaderLock() RELEASE() {
    if (held_) mu_.unlock_shared();
  }
  ReaderLock(const ReaderLock&) = delete;
  ReaderLock& operator=(const ReaderLock&) = delete;

  // REQUIRES: held (not unlocked since construction).
  void Unlock() RELEASE() {
    mu_.unlock_shared();
    held_ = false;
  }

 private:
  SharedMutex& mu_;
  bool held_ = true;
};

// Holds `mu` exclusively from construction to destruction; Unlock() lets go of it early.
class SCOPED_CAPABILITY WriterLock {
 public:
  explicit WriterLock(SharedMutex& mu) ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~WriterLock() RELEASE() {
    if (held_) mu_.unlock();
  }
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;

  // REQUIRES: held (not unlocked since construction).
  void Unlock() RELEASE() {
    mu_.unlock();
    held_ = false;
  }

 private:
  SharedMutex& mu_;
  bool held_ = true;
};

// A condition variable waited on with a Mutex held: std::condition_variable over the Mutex's
// std::mutex. Each wait lets go of `mu` while it blocks and holds it again when it returns,
// so the caller's MutexLock and the analysis both see `mu` held throughout. Waits may wake
// spuriously: wait in a loop on the condition, e.g. `while (!done_) cv_.Wait(mu_);` (the loop
// reads the GUARDED_BY members with the lock held, which a predicate lambda could not show).
class CondVar {
 public:
  CondVar() = default;
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  // Blocks until notified (or woken spuriously).
  void Wait(Mutex& mu) REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu.native(), std::adopt_lock);
    cv_.wait(lock);
    lock.release();  // `mu` stays held: it belongs to the caller's lock
  }

  // Blocks until notified (or woken spuriously) or until `deadline`; std::cv_status::timeout
  // when the deadline passed.
  template <typename Clock, typename Duration>
  std::cv_status WaitUntil(Mutex& mu, const std::chrono::time_point<Clock, Duration>& deadline)
      REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu.native(), std::adopt_lock);
    const std::cv_status status = cv_.wait_until(lock, deadline);
    lock.release();
    return status;
  }

  // WaitUntil(mu, steady_clock::now() + timeout). A loop on a condition should compute one
  // deadline and call WaitUntil, so spurious wakeups do not extend the wait.
  template <typename Rep, typename Period>
  std::cv_status WaitFor(Mutex& mu, const std::chrono::duration<Rep, Period>& timeout)
      REQUIRES(mu) {
    return WaitUntil(mu, std::chrono::steady_clock::now() + timeout);
  }

  void NotifyOne() { cv_.notify_one(); }
  void NotifyAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace reef
