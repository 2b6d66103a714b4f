#include "apps/runners.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>

namespace reef::apps {

uint64_t Fnv1a64(std::string_view bytes) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  return h;
}

Result<sqlite3*> OpenModuleDatabase(const std::filesystem::path& path) {
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  if (ec) {
    return Status::Unavailable(
        fmt::format("cannot create {}: {}", path.parent_path().string(), ec.message()));
  }
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(
      path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close_v2(db);
    return Status::Unavailable(fmt::format("cannot open {}: {}", path.string(), message));
  }
  sqlite3_busy_timeout(db, 5'000);
  // WAL with synchronous=NORMAL: a commit survives a process crash (SIGKILL); an OS crash may
  // lose the last commits, and then the module redoes them from its stored position.
  // No single string or blob a module's SQL builds may pass 32 MiB (what sql_query may answer
  // at most): printf('%.*c', 900000000, 'x') fails at once instead of allocating.
  sqlite3_limit(db, SQLITE_LIMIT_LENGTH, 32 << 20);
  Status configured = ExecSql(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;");
  if (!configured.ok()) {
    sqlite3_close_v2(db);
    return Status::Unavailable(
        fmt::format("cannot configure {}: {}", path.string(), configured.message()));
  }
  return db;
}

Status ExecSql(sqlite3* db, const char* sql) {
  char* error = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &error) != SQLITE_OK) {
    std::string message = error != nullptr ? error : sqlite3_errmsg(db);
    sqlite3_free(error);
    return Status::Internal(fmt::format("{} (in: {})", message, sql));
  }
  return Status::Ok();
}

Result<uint64_t> LoadRunnerPosition(sqlite3* db, const char* table, const char* column) {
  std::string create = fmt::format(
      "CREATE TABLE IF NOT EXISTS {} (id INTEGER PRIMARY KEY CHECK (id = 1), {} INTEGER NOT NULL, "
      "version TEXT NOT NULL)",
      table, column);
  REEF_RETURN_IF_ERROR(ExecSql(db, create.c_str()));
  std::string select = fmt::format("SELECT {} FROM {} WHERE id = 1", column, table);
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db, select.c_str(), -1, &s, nullptr) != SQLITE_OK) {
    return Status::Internal(sqlite3_errmsg(db));
  }
  uint64_t position = 0;
  if (sqlite3_step(s) == SQLITE_ROW) position = static_cast<uint64_t>(sqlite3_column_int64(s, 0));
  sqlite3_finalize(s);
  return position;
}

Status SaveRunnerPosition(sqlite3* db, const char* table, const char* column, uint64_t position,
                          const std::string& version) {
  std::string upsert = fmt::format(
      "INSERT INTO {0} (id, {1}, version) VALUES (1, ?1, ?2) "
      "ON CONFLICT (id) DO UPDATE SET {1} = ?1, version = ?2",
      table, column);
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db, upsert.c_str(), -1, &s, nullptr) != SQLITE_OK) {
    return Status::Internal(sqlite3_errmsg(db));
  }
  sqlite3_bind_int64(s, 1, static_cast<int64_t>(position));
  sqlite3_bind_text(s, 2, version.c_str(), -1, SQLITE_TRANSIENT);
  int rc = sqlite3_step(s);
  sqlite3_finalize(s);
  if (rc != SQLITE_DONE) return Status::Internal(sqlite3_errmsg(db));
  return Status::Ok();
}

RunnerStatus::RunnerStatus(const RunnerSpec& spec) {
  status_.kind = spec.kind;
  status_.name = spec.name;
  status_.version = spec.version;
  status_.restarts = spec.restarts;
  status_.position = spec.initial_position;
  status_.state = "starting";
}

void RunnerStatus::SetState(std::string state) {
  MutexLock lock(mu_);
  if (status_.state == "failed") return;  // a failure is final for this run
  status_.state = std::move(state);
  status_.up = status_.state != "stopped";
}

void RunnerStatus::Fail(std::string error) {
  MutexLock lock(mu_);
  status_.state = "failed";
  status_.error = std::move(error);
  status_.up = false;
  ++status_.failures;
}

void RunnerStatus::CountFailure(std::string error) {
  MutexLock lock(mu_);
  status_.error = std::move(error);
  ++status_.failures;
}

void RunnerStatus::SetPosition(uint64_t position) {
  MutexLock lock(mu_);
  status_.position = position;
}

void RunnerStatus::SetBackoff(double seconds) {
  MutexLock lock(mu_);
  status_.backoff_seconds = seconds;
}

void RunnerStatus::SetTier(uint32_t slot, wasm::Tier tier) {
  MutexLock lock(mu_);
  tiers_[slot] = tier;
  const bool all_native = std::all_of(
      tiers_.begin(), tiers_.end(), [](const auto& t) { return t.second == wasm::Tier::kNative; });
  status_.tier = wasm::TierName(all_native ? wasm::Tier::kNative : wasm::Tier::kInterp);
}

void RunnerStatus::SetQuery(events::Query query) {
  MutexLock lock(mu_);
  status_.query = std::move(query);
}

ModuleStatus RunnerStatus::Get() const {
  MutexLock lock(mu_);
  return status_;
}

}  // namespace reef::apps
