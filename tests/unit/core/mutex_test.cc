// The annotated locks of core/mutex.h: they lock and wait exactly as the std types they wrap
// (the thread-safety analysis they feed is checked by scripts/thread_safety.sh, not here).
#include "core/mutex.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

namespace reef {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

// Whether another thread can take `mu` now (try_lock, given back at once).
bool FreeForOthers(Mutex& mu) {
  return std::async(std::launch::async,
                    [&mu] {
                      if (!mu.try_lock()) return false;
                      mu.unlock();
                      return true;
                    })
      .get();
}

// Whether another thread can take `mu` shared now (given back at once).
bool OthersMayRead(SharedMutex& mu) {
  return std::async(std::launch::async,
                    [&mu] {
                      if (!mu.try_lock_shared()) return false;
                      mu.unlock_shared();
                      return true;
                    })
      .get();
}

// Whether another thread can take `mu` exclusively now (given back at once).
bool OthersMayWrite(SharedMutex& mu) {
  return std::async(std::launch::async,
                    [&mu] {
                      if (!mu.try_lock()) return false;
                      mu.unlock();
                      return true;
                    })
      .get();
}

struct Counter {
  Mutex mu;
  CondVar changed;
  int value GUARDED_BY(mu) = 0;
};

TEST(MutexTest, MutexLockHoldsTheMutexUntilItsScopeEnds) {
  Mutex mu;
  {
    MutexLock lock(mu);
    EXPECT_FALSE(FreeForOthers(mu));
  }
  EXPECT_TRUE(FreeForOthers(mu));
}

TEST(MutexTest, UnlockLetsOthersInAndLockTakesTheMutexBack) {
  Mutex mu;
  MutexLock lock(mu);
  lock.Unlock();
  EXPECT_TRUE(FreeForOthers(mu));
  lock.Lock();
  EXPECT_FALSE(FreeForOthers(mu));
}

TEST(MutexTest, WaitReturnsAfterANotifyWithTheMutexHeld) {
  Counter counter;
  std::thread bumper([&counter] {
    std::this_thread::sleep_for(milliseconds(20));
    MutexLock lock(counter.mu);
    counter.value = 1;
    counter.changed.NotifyAll();
  });
  {
    MutexLock lock(counter.mu);
    while (counter.value == 0) counter.changed.Wait(counter.mu);
    EXPECT_EQ(counter.value, 1);
    EXPECT_FALSE(FreeForOthers(counter.mu));
  }
  bumper.join();
}

TEST(MutexTest, WaitUntilTimesOutAtItsDeadlineWithTheMutexHeld) {
  Counter counter;
  MutexLock lock(counter.mu);
  const auto start = steady_clock::now();
  const auto deadline = start + milliseconds(50);
  std::cv_status status = std::cv_status::no_timeout;
  while (counter.value == 0 && status == std::cv_status::no_timeout) {
    status = counter.changed.WaitUntil(counter.mu, deadline);
  }
  EXPECT_EQ(status, std::cv_status::timeout);
  EXPECT_GE(steady_clock::now(), deadline);
  EXPECT_FALSE(FreeForOthers(counter.mu));
}

TEST(MutexTest, WaitForWakesEarlyWhenNotified) {
  Counter counter;
  std::thread bumper([&counter] {
    MutexLock lock(counter.mu);
    counter.value = 1;
    counter.changed.NotifyOne();
  });
  const auto start = steady_clock::now();
  {
    MutexLock lock(counter.mu);
    while (counter.value == 0) counter.changed.WaitFor(counter.mu, std::chrono::seconds(30));
  }
  EXPECT_LT(steady_clock::now() - start, std::chrono::seconds(10));
  bumper.join();
}

TEST(MutexTest, ReadersShareASharedMutexAndAWriterExcludesThem) {
  SharedMutex mu;
  {
    ReaderLock reader(mu);
    EXPECT_TRUE(OthersMayRead(mu));
    EXPECT_FALSE(OthersMayWrite(mu));
    reader.Unlock();
    EXPECT_TRUE(OthersMayWrite(mu));
  }
  {
    WriterLock writer(mu);
    EXPECT_FALSE(OthersMayRead(mu));
    writer.Unlock();
    EXPECT_TRUE(OthersMayRead(mu));
  }
  EXPECT_TRUE(OthersMayWrite(mu));
}

}  // namespace
}  // namespace reef
