// A heap budget for one SQL statement: SQLite has a process-wide heap limit
// (sqlite3_hard_heap_limit64) but none per connection or per statement, and one statement can
// allocate gigabytes without building any single large value (json_group_array over many rows
// grows one buffer that SQLite checks against SQLITE_LIMIT_LENGTH only when it is finished).
//
// Reef installs an allocator around SQLite's own (SQLITE_CONFIG_MALLOC, before SQLite
// initializes: a static initializer of sqlite_heap.cc) that charges every allocation made on
// a thread to the SqlHeapBudget open on that thread, if any. An allocation past the budget
// fails, so the statement fails with SQLITE_NOMEM and frees what it held; the budget then
// reports exceeded(). Memory freed inside a scope is credited whoever allocated it (a
// connection's page cache may shrink during a statement), so the bound is approximate by at
// most what the connection held before the scope opened.
//
// Budgets share a server-wide total as well (kMaxSqlHeapBytesTotal): what every open budget
// holds at once. An allocation that would pass it fails the same way, and the budget reports
// crowded() instead: the statement was within its own limit and may be retried later. When a
// budget closes, what it still holds stops counting (a connection's page cache lives on).
// A budget that held kTrimAfterBytes or more at some point hands freed memory back to the
// system when it closes (malloc_trim), so per-thread malloc arenas do not keep it.
//
// Thread ownership: a budget belongs to the thread that opened it and counts only that
// thread's allocations; SQLite connections opened with SQLITE_OPEN_NOMUTEX are used by one
// thread at a time, which is how Reef uses them.
#pragma once

#include <cstdint>

namespace reef::apps {

// Bytes all open budgets may hold together, and the peak after which a budget trims.
inline constexpr int64_t kMaxSqlHeapBytesTotal = 256 << 20;
inline constexpr int64_t kTrimAfterBytes = 8 << 20;

// True when the counting allocator is installed (SQLite had not initialized before this
// library's static initializers ran). Without it budgets count nothing; `reef serve` logs it.
bool SqlHeapBudgetsEnforced();

// Opens a budget of `limit_bytes` on the calling thread for its lifetime (nested budgets:
// the innermost counts; the outer one is restored when it closes). Not copyable or movable.
class SqlHeapBudget {
 public:
  explicit SqlHeapBudget(int64_t limit_bytes);
  ~SqlHeapBudget();
  SqlHeapBudget(const SqlHeapBudget&) = delete;
  SqlHeapBudget& operator=(const SqlHeapBudget&) = delete;

  // True once an allocation was refused for want of this budget.
  bool exceeded() const { return exceeded_; }
  // True once an allocation was refused because all budgets together held
  // kMaxSqlHeapBytesTotal.
  bool crowded() const { return crowded_; }
  int64_t limit_bytes() const { return limit_; }
  // Bytes allocated and not freed since the budget opened (may be negative, see above).
  int64_t used_bytes() const { return used_; }

 private:
  friend struct SqlHeapAllocator;
  int64_t limit_;
  int64_t used_ = 0;
  int64_t peak_ = 0;
  bool exceeded_ = false;
  bool crowded_ = false;
  SqlHeapBudget* outer_;
};

}  // namespace reef::apps
