// SqlHeapBudget (src/apps/sqlite_heap.h): SQLite's allocations on a thread are charged to the
// budget open on it, and an allocation past the budget fails.
#include "apps/sqlite_heap.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace reef::apps {
namespace {

TEST(SqlHeapBudgetTest, TheCountingAllocatorIsInstalledBeforeSqliteInitializes) {
  EXPECT_TRUE(SqlHeapBudgetsEnforced());
}

TEST(SqlHeapBudgetTest, AnAllocationPastTheBudgetFailsAndIsReported) {
  SqlHeapBudget budget(1 << 20);
  void* small = sqlite3_malloc64(100'000);
  ASSERT_NE(small, nullptr);
  EXPECT_GE(budget.used_bytes(), 100'000);
  EXPECT_FALSE(budget.exceeded());

  EXPECT_EQ(sqlite3_malloc64(2 << 20), nullptr);
  EXPECT_TRUE(budget.exceeded());
  // A realloc past the budget fails too, and leaves the block as it was.
  EXPECT_EQ(sqlite3_realloc64(small, 2 << 20), nullptr);
  sqlite3_free(small);
  EXPECT_EQ(budget.used_bytes(), 0);
}

TEST(SqlHeapBudgetTest, OnlyTheInnermostBudgetOfTheThreadIsCharged) {
  SqlHeapBudget outer(64 << 20);
  void* a = nullptr;
  {
    SqlHeapBudget inner(1 << 20);
    EXPECT_EQ(sqlite3_malloc64(2 << 20), nullptr);
    EXPECT_TRUE(inner.exceeded());
    a = sqlite3_malloc64(1000);
    ASSERT_NE(a, nullptr);
  }
  EXPECT_FALSE(outer.exceeded());
  EXPECT_EQ(outer.used_bytes(), 0);
  void* b = sqlite3_malloc64(2 << 20);  // the outer budget is back in force, and has room
  EXPECT_NE(b, nullptr);
  sqlite3_free(b);
  sqlite3_free(a);  // allocated under the inner budget, freed under the outer: credited to it
  EXPECT_LT(outer.used_bytes(), 0);
}

TEST(SqlHeapBudgetTest, AnotherThreadsAllocationsAreNotCharged) {
  SqlHeapBudget budget(1 << 20);
  std::thread other([] {
    void* p = sqlite3_malloc64(4 << 20);
    EXPECT_NE(p, nullptr);
    sqlite3_free(p);
  });
  other.join();
  EXPECT_FALSE(budget.exceeded());
  EXPECT_EQ(budget.used_bytes(), 0);
}

TEST(SqlHeapBudgetTest, AllBudgetsTogetherStopAtTheServerWideTotal) {
  // Budgets on other threads hold most of the total...
  constexpr int kHolders = 4;
  constexpr int64_t kEach = kMaxSqlHeapBytesTotal / kHolders - (1 << 20);
  std::mutex mu;
  std::condition_variable cv;
  int held = 0;
  bool release = false;
  std::vector<std::thread> holders;
  for (int i = 0; i < kHolders; ++i) {
    holders.emplace_back([&] {
      SqlHeapBudget budget(kMaxSqlHeapBytesTotal);
      void* p = sqlite3_malloc64(kEach);
      EXPECT_NE(p, nullptr);
      std::unique_lock lock(mu);
      ++held;
      cv.notify_all();
      cv.wait(lock, [&] { return release; });
      sqlite3_free(p);
    });
  }
  {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return held == kHolders; });
  }
  // ...so one more statement within its own limit is refused as crowded, not as exceeded
  {
    SqlHeapBudget budget(64 << 20);
    EXPECT_EQ(sqlite3_malloc64(8 << 20), nullptr);
    EXPECT_TRUE(budget.crowded());
    EXPECT_FALSE(budget.exceeded());
  }
  {
    std::lock_guard lock(mu);
    release = true;
  }
  cv.notify_all();
  for (auto& holder : holders) holder.join();
  // and once they are done it has room again
  SqlHeapBudget budget(64 << 20);
  void* p = sqlite3_malloc64(8 << 20);
  EXPECT_NE(p, nullptr);
  sqlite3_free(p);
}

TEST(SqlHeapBudgetTest, AStatementThatOutgrowsItsBudgetFailsWithNoMemory) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(":memory:", &db), SQLITE_OK);
  {
    SqlHeapBudget budget(8 << 20);
    // One aggregate growing a 20 MB buffer (every value is under SQLITE_LIMIT_LENGTH).
    const char* sql =
        "SELECT length(json_group_array(hex(zeroblob(1000)))) FROM "
        "(WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM r LIMIT 10000) "
        "SELECT i FROM r)";
    EXPECT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_NOMEM);
    EXPECT_TRUE(budget.exceeded());
  }
  // Without a budget the same statement runs.
  EXPECT_EQ(sqlite3_exec(db,
                         "SELECT length(json_group_array(hex(zeroblob(1000)))) FROM "
                         "(WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM r "
                         "LIMIT 10000) SELECT i FROM r)",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
}

}  // namespace
}  // namespace reef::apps
