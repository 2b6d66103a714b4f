// IoPool: the bounded pool of I/O threads (core/io_pool.h).
#include "core/io_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <thread>

namespace reef {
namespace {

using std::chrono::seconds;

TEST(IoPoolTest, RunsWorkOnItsThreadsAndRefusesPastItsQueue) {
  IoPool pool("test work", 1, 2);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> started;
  // The one thread is held; two more wait; a fourth is refused.
  ASSERT_TRUE(pool.TrySubmit([&started, released] {
    started.set_value();
    released.wait();
  }));
  started.get_future().wait();
  std::atomic<int> ran{0};
  EXPECT_TRUE(pool.TrySubmit([&] { ++ran; }));
  EXPECT_TRUE(pool.TrySubmit([&] { ++ran; }));
  EXPECT_FALSE(pool.TrySubmit([&] { ++ran; })) << "a third waiting item passes max_waiting";
  release.set_value();
  std::promise<void> last;
  // Room again once the queue moves.
  for (int attempt = 0; attempt < 1000 && !pool.TrySubmit([&last] { last.set_value(); });
       ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(last.get_future().wait_for(seconds(10)), std::future_status::ready);
  EXPECT_EQ(ran.load(), 2);
}

TEST(IoPoolTest, DestroyingFinishesRunningWorkAndDropsWaitingWorkUnrun) {
  std::atomic<bool> finished{false};
  std::atomic<bool> waiting_ran{false};
  auto dropped = std::make_shared<int>(0);
  std::weak_ptr<int> watch = dropped;
  std::promise<void> started;
  {
    IoPool pool("test work", 1, 4);
    ASSERT_TRUE(pool.TrySubmit([&] {
      started.set_value();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      finished = true;
    }));
    started.get_future().wait();
    ASSERT_TRUE(pool.TrySubmit([&waiting_ran, dropped = std::move(dropped)] {
      waiting_ran = true;
      *dropped = 1;
    }));
  }
  EXPECT_TRUE(finished.load()) << "the running item ran to its end";
  EXPECT_FALSE(waiting_ran.load()) << "work still waiting is not run at destruction";
  EXPECT_TRUE(watch.expired()) << "the waiting item was destroyed, not leaked";
}

}  // namespace
}  // namespace reef
