// ByteBudget (src/server/detail/byte_budget.h): room is granted in arrival order, a piece
// larger than the budget runs alone, and dropped waiters are never resumed.
#include "server/detail/byte_budget.h"

#include <gtest/gtest.h>

#include <vector>

namespace reef::server::detail {
namespace {

TEST(ByteBudgetTest, WaitersAreResumedInArrivalOrderAsRoomFrees) {
  ByteBudget budget(100);
  std::vector<int> resumed;
  budget.Acquire(60, [&] { resumed.push_back(1); });
  budget.Acquire(60, [&] { resumed.push_back(2); });  // does not fit beside the first
  budget.Acquire(10, [&] { resumed.push_back(3); });  // would fit, but waits its turn
  EXPECT_EQ(resumed, (std::vector<int>{1}));
  EXPECT_EQ(budget.waiting(), 2u);

  budget.Release(60);
  EXPECT_EQ(resumed, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(budget.used(), 70u);
  budget.Release(60);
  budget.Release(10);
  EXPECT_EQ(budget.used(), 0u);
}

TEST(ByteBudgetTest, APieceLargerThanTheBudgetRunsWhenNothingElseHoldsAny) {
  ByteBudget budget(100);
  std::vector<int> resumed;
  budget.Acquire(10, [&] { resumed.push_back(1); });
  budget.Acquire(500, [&] { resumed.push_back(2); });
  EXPECT_EQ(resumed, (std::vector<int>{1}));
  budget.Release(10);
  EXPECT_EQ(resumed, (std::vector<int>{1, 2}));
  budget.Acquire(10, [&] { resumed.push_back(3); });  // waits while the large one runs
  EXPECT_EQ(resumed.size(), 2u);
  budget.Release(500);
  EXPECT_EQ(resumed, (std::vector<int>{1, 2, 3}));
}

TEST(ByteBudgetTest, TakenWaitersAreNeverResumed) {
  ByteBudget budget(100);
  int resumed = 0;
  budget.Acquire(100, [&] { ++resumed; });
  budget.Acquire(50, [&] { ++resumed; });
  EXPECT_EQ(budget.TakeWaiters().size(), 1u);
  budget.Release(100);
  EXPECT_EQ(resumed, 1);
  EXPECT_EQ(budget.used(), 0u);
}

}  // namespace
}  // namespace reef::server::detail
