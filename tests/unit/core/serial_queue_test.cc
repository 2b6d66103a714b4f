// SerialQueue on a real IoPool: items of one queue run one at a time and in order, queues
// share the pool's threads, the bounds refuse, and the destructor waits for the running item
// and drops the rest. In the TSan run.
#include "core/serial_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <thread>
#include <vector>

namespace reef {
namespace {

TEST(SerialQueueTest, ItemsOfOneQueueRunOneAtATimeInOrderAcrossPoolThreads) {
  // Declared before the pool and the queue: their items use it until the queue is gone.
  std::atomic<int> running{0};
  std::atomic<bool> overlapped{false};
  std::vector<int> order;  // touched only by the queue's items, one at a time
  std::promise<void> done;
  constexpr int kItems = 2'000;
  IoPool pool("test", 4, 1'000);
  SerialQueue queue(pool, 10'000);
  for (int i = 0; i < kItems; ++i) {
    ASSERT_TRUE(queue.TrySubmit([&, i] {
      if (running.fetch_add(1) != 0) overlapped = true;
      order.push_back(i);
      running.fetch_sub(1);
      if (i == kItems - 1) done.set_value();
    }));
  }
  ASSERT_EQ(done.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_FALSE(overlapped.load());
  ASSERT_EQ(order.size(), static_cast<size_t>(kItems));
  for (int i = 0; i < kItems; ++i) ASSERT_EQ(order[i], i);
}

TEST(SerialQueueTest, ManyQueuesShareAFewThreadsAndABusyOneDoesNotStarveTheOthers) {
  // Declared before the pool and the queues: their items use it until the queues are gone.
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> busy_ran{0};
  std::promise<int> other_ran;
  IoPool pool("test", 1, 1'000);
  SerialQueue busy(pool, 10'000);
  SerialQueue other(pool, 10);
  // A queue with more items than one batch, and another queue's item submitted behind them
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(busy.TrySubmit([&, released] {
      released.wait();
      ++busy_ran;
    }));
  }
  ASSERT_TRUE(other.TrySubmit([&] { other_ran.set_value(busy_ran.load()); }));
  release.set_value();
  // The one pool thread gives the other queue its turn after one batch of the busy one
  auto future = other_ran.get_future();
  ASSERT_EQ(future.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_LE(future.get(), static_cast<int>(SerialQueue::kBatch));
}

TEST(SerialQueueTest, BoundsRefuseAndTheDestructorWaitsForTheRunningItem) {
  IoPool pool("test", 1, 1'000);
  std::promise<void> started;
  std::promise<void> finish;
  std::atomic<bool> finished{false};
  std::atomic<int> dropped_ran{0};
  std::thread finisher;
  {
    SerialQueue queue(pool, 2);
    ASSERT_TRUE(queue.TrySubmit([&] {
      started.set_value();
      finish.get_future().wait();
      finished = true;
    }));
    started.get_future().wait();
    ASSERT_TRUE(queue.TrySubmit([&] { ++dropped_ran; }));
    ASSERT_TRUE(queue.TrySubmit([&] { ++dropped_ran; }));
    EXPECT_FALSE(queue.TrySubmit([&] { ++dropped_ran; }));  // two wait already
    finisher = std::thread([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      finish.set_value();
    });
  }  // the destructor waits for the running item; the two waiting ones are dropped
  finisher.join();
  EXPECT_TRUE(finished.load());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(dropped_ran.load(), 0);
}

TEST(SerialQueueTest, APoolThatRefusesIsAnsweredFalseAndTheQueueStaysUsable) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> ran;
  IoPool pool("test", 1, 1);
  // Fill the pool: one running, one waiting
  ASSERT_TRUE(pool.TrySubmit([released] { released.wait(); }));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(pool.TrySubmit([] {}));
  SerialQueue queue(pool, 10);
  EXPECT_FALSE(queue.TrySubmit([] {}));
  release.set_value();
  for (int attempt = 0; attempt < 1000; ++attempt) {
    if (queue.TrySubmit([&] { ran.set_value(); })) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(ran.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready);
}

}  // namespace
}  // namespace reef
