// Fibers and their stack pool (src/wasm/native/fiber.h): a body suspends and resumes where it
// stopped, stacks are reused, a suspended fiber is cancelled when destroyed.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "wasm/native/fiber.h"

namespace reef::wasm::native {
namespace {

TEST(NativeFiberTest, ABodyGoesOnExactlyWhereItSuspended) {
  StackPool pool(64 << 10);
  std::vector<std::string> trace;
  auto fiber = Fiber::Create(pool, [&](Fiber& self) {
    for (int i = 0; i < 3; ++i) {
      trace.push_back("step " + std::to_string(i));
      ASSERT_TRUE(self.Suspend());
    }
    trace.push_back("done");
  });
  ASSERT_TRUE(fiber.ok()) << fiber.status().ToString();
  EXPECT_FALSE((*fiber)->started());
  for (int i = 0; i < 3; ++i) {
    (*fiber)->Resume();
    EXPECT_FALSE((*fiber)->finished());
    EXPECT_EQ(trace.back(), "step " + std::to_string(i));
  }
  (*fiber)->Resume();
  EXPECT_TRUE((*fiber)->finished());
  EXPECT_EQ(trace, (std::vector<std::string>{"step 0", "step 1", "step 2", "done"}));
}

TEST(NativeFiberTest, StacksAreReusedAndHaveAGuardPage) {
  StackPool pool(64 << 10, /*max_pooled=*/4);
  const void* first_base = nullptr;
  for (int round = 0; round < 10; ++round) {
    auto fiber = Fiber::Create(pool, [](Fiber&) {});
    ASSERT_TRUE(fiber.ok());
    if (first_base == nullptr) first_base = (*fiber)->stack().base;
    EXPECT_EQ((*fiber)->stack().base, first_base) << "round " << round;
    EXPECT_TRUE((*fiber)->stack().InGuard((*fiber)->stack().base));
    EXPECT_FALSE((*fiber)->stack().InGuard((*fiber)->stack().base + (*fiber)->stack().guard));
    (*fiber)->Resume();
    EXPECT_TRUE((*fiber)->finished());
  }
  EXPECT_EQ(pool.mapped(), 1u);
  EXPECT_EQ(pool.pooled(), 1u);
}

// The process keeps its fiber stacks within vm.max_map_count (two mappings each): past the
// cap Acquire says why, and nothing else in the process has lost its mappings.
TEST(NativeFiberTest, StacksStopAtTheProcessCapWithAClearError) {
  StackPool pool(4096, 0);
  std::vector<StackPool::Stack> held;
  Status refused;
  for (size_t i = 0; i < 1'000'000; ++i) {
    auto stack = pool.Acquire();
    if (!stack.ok()) {
      refused = stack.status();
      break;
    }
    held.push_back(*stack);
  }
  EXPECT_EQ(refused.code(), Code::kUnavailable);
  EXPECT_NE(refused.message().find("too many native invocations in progress"), std::string::npos)
      << refused.message();
  EXPECT_GT(held.size(), 1'000u);
  StackPool other(4096, 0);
  EXPECT_FALSE(other.Acquire().ok()) << "the cap is per process";
  for (const StackPool::Stack& stack : held) pool.Release(stack);
  auto again = other.Acquire();
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  other.Release(*again);
}

TEST(NativeFiberTest, DestroyingASuspendedFiberCancelsItsBody) {
  StackPool pool(64 << 10);
  bool resumed = false, cancelled = false;
  {
    auto fiber = Fiber::Create(pool, [&](Fiber& self) {
      if (self.Suspend()) {
        resumed = true;
      } else {
        cancelled = true;
      }
    });
    ASSERT_TRUE(fiber.ok());
    (*fiber)->Resume();
    EXPECT_FALSE((*fiber)->finished());
  }
  EXPECT_FALSE(resumed);
  EXPECT_TRUE(cancelled);
  EXPECT_EQ(pool.pooled(), 1u) << "the cancelled fiber's stack is back in the pool";
}

TEST(NativeFiberTest, AFiberNeverResumedGivesItsStackBack) {
  StackPool pool(64 << 10);
  bool ran = false;
  {
    ASSERT_TRUE(Fiber::Create(pool, [&](Fiber&) { ran = true; }).ok());
  }
  EXPECT_FALSE(ran);
  EXPECT_EQ(pool.pooled(), 1u);
}

TEST(NativeFiberTest, FibersInterleaveOnOneThread) {
  StackPool pool(64 << 10);
  std::string order;
  auto body = [&](char name) {
    return [&order, name](Fiber& self) {
      order += name;
      ASSERT_TRUE(self.Suspend());
      order += name;
    };
  };
  auto a = Fiber::Create(pool, body('a'));
  auto b = Fiber::Create(pool, body('b'));
  ASSERT_TRUE(a.ok() && b.ok());
  (*a)->Resume();
  (*b)->Resume();
  (*b)->Resume();
  (*a)->Resume();
  EXPECT_EQ(order, "abba");
  EXPECT_TRUE((*a)->finished() && (*b)->finished());
}

}  // namespace
}  // namespace reef::wasm::native
