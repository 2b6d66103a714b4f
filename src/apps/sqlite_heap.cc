#include "apps/sqlite_heap.h"

#include <sqlite3.h>

namespace reef::apps {
namespace {

thread_local SqlHeapBudget* t_budget = nullptr;

}  // namespace

// The allocator's functions see SqlHeapBudget's counters through this friend.
struct SqlHeapAllocator {
  static inline sqlite3_mem_methods base{};  // SQLite's own allocator, wrapped
  static inline bool installed = false;

  static int Size(void* p) { return base.xSize(p); }

  static void* Malloc(int n) {
    SqlHeapBudget* budget = t_budget;
    if (budget != nullptr && budget->used_ + n > budget->limit_) {
      budget->exceeded_ = true;
      return nullptr;
    }
    void* p = base.xMalloc(n);
    if (p != nullptr && budget != nullptr) budget->used_ += Size(p);
    return p;
  }

  static void Free(void* p) {
    if (SqlHeapBudget* budget = t_budget; budget != nullptr && p != nullptr) {
      budget->used_ -= Size(p);
    }
    base.xFree(p);
  }

  static void* Realloc(void* p, int n) {
    SqlHeapBudget* budget = t_budget;
    int64_t before = budget != nullptr && p != nullptr ? Size(p) : 0;
    if (budget != nullptr && budget->used_ - before + n > budget->limit_) {
      budget->exceeded_ = true;
      return nullptr;  // SQLite keeps `p`, as after any failed realloc
    }
    void* q = base.xRealloc(p, n);
    if (q != nullptr && budget != nullptr) budget->used_ += Size(q) - before;
    return q;
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

bool SqlHeapBudgetsEnforced() { return kInstalled && SqlHeapAllocator::installed; }

SqlHeapBudget::SqlHeapBudget(int64_t limit_bytes) : limit_(limit_bytes), outer_(t_budget) {
  t_budget = this;
}

SqlHeapBudget::~SqlHeapBudget() { t_budget = outer_; }

}  // namespace reef::apps
