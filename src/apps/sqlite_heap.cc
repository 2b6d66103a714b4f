#include "apps/sqlite_heap.h"

#include <malloc.h>
#include <sqlite3.h>

#include <algorithm>
#include <atomic>

namespace reef::apps {
namespace {

thread_local SqlHeapBudget* t_budget = nullptr;
std::atomic<int64_t> g_total{0};  // what every open budget holds

}  // namespace

// The allocator's functions see SqlHeapBudget's counters through this friend.
struct SqlHeapAllocator {
  static inline sqlite3_mem_methods base{};  // SQLite's own allocator, wrapped
  static inline bool installed = false;

  static int Size(void* p) { return base.xSize(p); }

  // False (and the budget marked) when `budget` may not grow by `more` bytes.
  static bool Admit(SqlHeapBudget* budget, int64_t more) {
    if (budget->used_ + more > budget->limit_) {
      budget->exceeded_ = true;
      return false;
    }
    if (g_total.load(std::memory_order_relaxed) + more > kMaxSqlHeapBytesTotal) {
      budget->crowded_ = true;
      return false;
    }
    return true;
  }

  static void Charge(SqlHeapBudget* budget, int64_t bytes) {
    budget->used_ += bytes;
    budget->peak_ = std::max(budget->peak_, budget->used_);
    g_total.fetch_add(bytes, std::memory_order_relaxed);
  }

  static void* Malloc(int n) {
    SqlHeapBudget* budget = t_budget;
    if (budget != nullptr && !Admit(budget, n)) return nullptr;
    void* p = base.xMalloc(n);
    if (p != nullptr && budget != nullptr) Charge(budget, Size(p));
    return p;
  }

  static void Free(void* p) {
    if (SqlHeapBudget* budget = t_budget; budget != nullptr && p != nullptr) {
      Charge(budget, -static_cast<int64_t>(Size(p)));
    }
    base.xFree(p);
  }

  static void* Realloc(void* p, int n) {
    SqlHeapBudget* budget = t_budget;
    int64_t before = budget != nullptr && p != nullptr ? Size(p) : 0;
    if (budget != nullptr && !Admit(budget, n - before)) {
      return nullptr;  // SQLite keeps `p`, as after any failed realloc
    }
    void* q = base.xRealloc(p, n);
    if (q != nullptr && budget != nullptr) Charge(budget, Size(q) - before);
    return q;
  }

  static void Close(SqlHeapBudget* budget) {
    g_total.fetch_sub(budget->used_, std::memory_order_relaxed);
    if (budget->peak_ >= kTrimAfterBytes) ::malloc_trim(0);
  }

  static int Roundup(int n) { return base.xRoundup(n); }
  static int Init(void* app) { return base.xInit(app); }
  static void Shutdown(void* app) { base.xShutdown(app); }

  // Wraps SQLite's allocator; fails (leaving SQLite as it was) once SQLite has initialized.
  static bool Install() {
    if (sqlite3_config(SQLITE_CONFIG_GETMALLOC, &base) != SQLITE_OK) return false;
    sqlite3_mem_methods wrapped = base;
    wrapped.xMalloc = Malloc;
    wrapped.xFree = Free;
    wrapped.xRealloc = Realloc;
    wrapped.xSize = Size;
    wrapped.xRoundup = Roundup;
    wrapped.xInit = Init;
    wrapped.xShutdown = Shutdown;
    return sqlite3_config(SQLITE_CONFIG_MALLOC, &wrapped) == SQLITE_OK;
  }
};

namespace {
// Runs before main, before anything opens a database.
const bool kInstalled = (SqlHeapAllocator::installed = SqlHeapAllocator::Install());
}  // namespace

bool SqlHeapBudgetsEnforced() {
  return kInstalled && SqlHeapAllocator::installed;
}

SqlHeapBudget::SqlHeapBudget(int64_t limit_bytes) : limit_(limit_bytes), outer_(t_budget) {
  t_budget = this;
}

SqlHeapBudget::~SqlHeapBudget() {
  t_budget = outer_;
  SqlHeapAllocator::Close(this);
}

}  // namespace reef::apps
