#include "store/module_store.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <system_error>
#include <utility>

#include "core/clock.h"
#include "core/ids.h"
#include "core/utf8.h"
#include "store/detail/module_rules.h"
#include "store/detail/sqlite_module_store.h"
#include "store/detail/sqlite_stmt.h"

namespace reef::store {

using namespace detail;  // NOLINT: this file is the detail backend

namespace {

constexpr int kBusyTimeoutMs = 5000;

// Spec 000, "Module store schema", with created_at in milliseconds, a foreign key from
// active_modules to modules, crypto_keys.created_at, and at most one live key per scope.
constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS modules (
  id INTEGER PRIMARY KEY,
  module_type TEXT NOT NULL,
  name TEXT NOT NULL,
  version TEXT NOT NULL,
  wasm_bytes BLOB NOT NULL,
  sha256 TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  UNIQUE (module_type, name, version)
);
CREATE TABLE IF NOT EXISTS active_modules (
  module_type TEXT NOT NULL,
  name TEXT NOT NULL,
  module_id INTEGER NOT NULL REFERENCES modules (id),
  PRIMARY KEY (module_type, name)
);
CREATE INDEX IF NOT EXISTS active_modules_by_module ON active_modules (module_id);
CREATE TABLE IF NOT EXISTS module_env_vars (
  module_type TEXT NOT NULL,
  name TEXT NOT NULL,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (module_type, name, key)
);
CREATE TABLE IF NOT EXISTS crypto_keys (
  id TEXT PRIMARY KEY,
  scope TEXT NOT NULL,
  key BLOB,
  deleted_at INTEGER,
  created_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS crypto_keys_live_by_scope ON crypto_keys (scope)
  WHERE deleted_at IS NULL;
)sql";

Result<ModuleKind> KindColumn(const Stmt& stmt, int column) {
  auto kind = ParseModuleKindName(stmt.ColumnText(column));
  if (!kind.ok()) return Status::DataLoss("module store: stored " + kind.status().message());
  return *kind;
}

}  // namespace

// --- open ------------------------------------------------------------------------------------

Result<std::unique_ptr<ModuleStore>> ModuleStore::Open(const std::filesystem::path& data_dir,
                                                       ModuleStoreOptions options) {
  REEF_RETURN_IF_ERROR(CreateCacheDir(data_dir));
  std::string file = (data_dir / "reef.sqlite").string();
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(
      file.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    Status status = Status::Unavailable(fmt::format("module store: cannot open '{}': {}", file,
                                                    db ? sqlite3_errmsg(db) : "out of memory"));
    sqlite3_close(db);
    return status;
  }
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  auto store = std::make_unique<SqliteModuleStore>(data_dir, options, db);
  REEF_RETURN_IF_ERROR(store->Init(file));
  return std::unique_ptr<ModuleStore>(std::move(store));
}

ModuleStore::~ModuleStore() = default;

Result<std::unique_ptr<ModuleLease>> ModuleStore::TryLease(ModuleKind, std::string_view) {
  // One process: the lease is always this one's.
  struct Always final : ModuleLease {
    bool held() const override { return true; }
  };
  return std::unique_ptr<ModuleLease>(new Always());
}

Result<ModuleStore::EffectWatermark> ModuleStore::LoadWatermark(std::string_view) {
  return Status::Unimplemented("the embedded module store keeps no effect watermark");
}
Result<bool> ModuleStore::SaveWatermark(std::string_view, uint64_t, std::string_view, int64_t) {
  return Status::Unimplemented("the embedded module store keeps no effect watermark");
}
Status ModuleStore::ResetWatermark(std::string_view) {
  return Status::Unimplemented("the embedded module store keeps no effect watermark");
}

Status SqliteModuleStore::Init(const std::string& file) {
  MutexLock lock(mu_);
  Status status = ExecLocked("PRAGMA journal_mode=WAL;");
  if (status.ok()) status = ExecLocked("PRAGMA foreign_keys=ON; PRAGMA secure_delete=ON;");
  if (status.ok()) status = ExecLocked(kSchema);
  if (status.code() == Code::kUnavailable) return status;  // locked by another process
  if (!status.ok()) {
    return Status::DataLoss(
        fmt::format("module store: '{}' is not usable: {}", file, status.message()));
  }
  return Status::Ok();
}

SqliteModuleStore::~SqliteModuleStore() {
  sqlite3_close(db_);
}

Status SqliteModuleStore::ExecLocked(const char* sql) {
  char* error = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &error) == SQLITE_OK) return Status::Ok();
  sqlite3_free(error);  // the same text as sqlite3_errmsg
  std::string_view what(sql);
  return SqlError(db_, what.size() <= 40 ? what : "create schema");
}

Status SqliteModuleStore::InTransactionLocked(const char* begin,
                                              const std::function<Status()>& body) {
  REEF_RETURN_IF_ERROR(ExecLocked(begin));
  Status status = body();
  if (status.ok()) status = ExecLocked("COMMIT");
  if (!status.ok()) (void)ExecLocked("ROLLBACK");
  return status;
}

Result<std::optional<int64_t>> SqliteModuleStore::FindVersionIdLocked(ModuleKind kind,
                                                                      std::string_view name,
                                                                      std::string_view version) {
  Stmt stmt(db_, "SELECT id FROM modules WHERE module_type = ?1 AND name = ?2 AND version = ?3");
  REEF_RETURN_IF_ERROR(stmt.prepared());
  stmt.Kind(1, kind).Text(2, name).Text(3, version);
  int rc = stmt.Step();
  if (rc == SQLITE_DONE) return std::optional<int64_t>();
  if (rc != SQLITE_ROW) return SqlError(db_, "find version");
  return std::optional<int64_t>(stmt.ColumnInt(0));
}

Result<bool> SqliteModuleStore::ModuleExistsLocked(ModuleKind kind, std::string_view name) {
  Stmt stmt(db_, "SELECT 1 FROM modules WHERE module_type = ?1 AND name = ?2 LIMIT 1");
  REEF_RETURN_IF_ERROR(stmt.prepared());
  stmt.Kind(1, kind).Text(2, name);
  int rc = stmt.Step();
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return SqlError(db_, "find module");
  return rc == SQLITE_ROW;
}

// --- versions --------------------------------------------------------------------------------

Result<UploadResult> SqliteModuleStore::Upload(ModuleKind kind, std::string_view name,
                                               std::string_view version,
                                               std::span<const uint8_t> wasm) {
  REEF_RETURN_IF_ERROR(ValidateUpload(kind, name, version, wasm, options_));
  UploadResult result{ModuleVersion{kind, std::string(name), std::string(version), Sha256Hex(wasm),
                                    wasm.size(), UnixNowMs()},
                      true};
  MutexLock lock(mu_);
  Status status = InTransactionLocked("BEGIN IMMEDIATE", [&]() REQUIRES(mu_) -> Status {
    Stmt find(db_,
              "SELECT sha256, length(wasm_bytes), created_at FROM modules "
              "WHERE module_type = ?1 AND name = ?2 AND version = ?3");
    REEF_RETURN_IF_ERROR(find.prepared());
    find.Kind(1, kind).Text(2, name).Text(3, version);
    int rc = find.Step();
    if (rc == SQLITE_ROW) {
      std::string stored = find.ColumnText(0);
      if (stored != result.version.sha256) return OtherBytes(kind, name, version, stored);
      result.version.size_bytes = static_cast<uint64_t>(find.ColumnInt(1));
      result.version.created_at_ms = find.ColumnInt(2);
      result.created = false;
      return Status::Ok();
    }
    if (rc != SQLITE_DONE) return SqlError(db_, "upload");
    Stmt insert(db_,
                "INSERT INTO modules (module_type, name, version, wasm_bytes, sha256, created_at) "
                "VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
    REEF_RETURN_IF_ERROR(insert.prepared());
    insert.Kind(1, kind).Text(2, name).Text(3, version).Blob(4, wasm);
    insert.Text(5, result.version.sha256).Int(6, result.version.created_at_ms);
    rc = insert.Step();
    if (rc == SQLITE_TOOBIG) {
      return Status::LimitExceeded(
          fmt::format("module of {} bytes exceeds SQLite's blob limit ({} bytes)", wasm.size(),
                      sqlite3_limit(db_, SQLITE_LIMIT_LENGTH, -1)));
    }
    return rc == SQLITE_DONE ? Status::Ok() : SqlError(db_, "upload");
  });
  if (!status.ok()) return status;
  return result;
}

Result<std::vector<ModuleInfo>> SqliteModuleStore::ListLocked(
    ModuleKind kind, std::optional<std::string_view> name) {
  // ?2 IS NULL selects every module of the kind; otherwise only module ?2.
  std::map<std::string, ModuleInfo> modules;
  Status status = InTransactionLocked("BEGIN", [&]() REQUIRES(mu_) -> Status {
    Stmt versions(db_,
                  "SELECT name, version, sha256, length(wasm_bytes), created_at FROM modules "
                  "WHERE module_type = ?1 AND (?2 IS NULL OR name = ?2)");
    Stmt active(db_,
                "SELECT a.name, m.version FROM active_modules a JOIN modules m ON m.id = "
                "a.module_id WHERE a.module_type = ?1 AND (?2 IS NULL OR a.name = ?2)");
    Stmt env(db_,
             "SELECT name, key, value FROM module_env_vars "
             "WHERE module_type = ?1 AND (?2 IS NULL OR name = ?2)");
    for (Stmt* stmt : {&versions, &active, &env}) {
      REEF_RETURN_IF_ERROR(stmt->prepared());
      stmt->Kind(1, kind);
      if (name) stmt->Text(2, *name);
    }
    int rc;
    while ((rc = versions.Step()) == SQLITE_ROW) {
      std::string module = versions.ColumnText(0);
      ModuleInfo& info = modules[module];
      info.kind = kind;
      info.name = module;
      info.versions.push_back(
          ModuleVersion{kind, module, versions.ColumnText(1), versions.ColumnText(2),
                        static_cast<uint64_t>(versions.ColumnInt(3)), versions.ColumnInt(4)});
    }
    if (rc != SQLITE_DONE) return SqlError(db_, "list versions");
    while ((rc = active.Step()) == SQLITE_ROW) {
      auto it = modules.find(active.ColumnText(0));
      if (it != modules.end()) it->second.active_version = active.ColumnText(1);
    }
    if (rc != SQLITE_DONE) return SqlError(db_, "list active");
    while ((rc = env.Step()) == SQLITE_ROW) {
      auto it = modules.find(env.ColumnText(0));
      if (it != modules.end()) it->second.env[env.ColumnText(1)] = env.ColumnText(2);
    }
    return rc == SQLITE_DONE ? Status::Ok() : SqlError(db_, "list env");
  });
  if (!status.ok()) return status;

  return SortedModules(std::move(modules));
}

Result<std::vector<ModuleInfo>> SqliteModuleStore::List(ModuleKind kind) {
  REEF_RETURN_IF_ERROR(ValidateModuleKind(kind));
  MutexLock lock(mu_);
  return ListLocked(kind, std::nullopt);
}

Result<ModuleInfo> SqliteModuleStore::Get(ModuleKind kind, std::string_view name) {
  REEF_RETURN_IF_ERROR(ValidateModule(kind, name));
  MutexLock lock(mu_);
  REEF_ASSIGN_OR_RETURN(std::vector<ModuleInfo> list, ListLocked(kind, name));
  if (list.empty()) return NoSuchModule(kind, name);
  return std::move(list.front());
}

Result<std::vector<uint8_t>> SqliteModuleStore::LoadBytes(ModuleKind kind, std::string_view name,
                                                          std::string_view version) {
  REEF_RETURN_IF_ERROR(ValidateModule(kind, name));
  REEF_RETURN_IF_ERROR(ValidateVersion(version));
  std::vector<uint8_t> bytes;
  std::string stored_sha256;
  {
    MutexLock lock(mu_);
    Stmt stmt(db_,
              "SELECT wasm_bytes, sha256 FROM modules "
              "WHERE module_type = ?1 AND name = ?2 AND version = ?3");
    REEF_RETURN_IF_ERROR(stmt.prepared());
    stmt.Kind(1, kind).Text(2, name).Text(3, version);
    int rc = stmt.Step();
    if (rc == SQLITE_DONE) return NoSuchVersion(kind, name, version);
    if (rc != SQLITE_ROW) return SqlError(db_, "load bytes");
    bytes = stmt.ColumnBlob(0);
    stored_sha256 = stmt.ColumnText(1);
  }
  REEF_RETURN_IF_ERROR(CheckIntegrity(kind, name, version, bytes, stored_sha256));
  return bytes;
}

Status SqliteModuleStore::DeleteVersion(ModuleKind kind, std::string_view name,
                                        std::string_view version) {
  REEF_RETURN_IF_ERROR(ValidateModule(kind, name));
  REEF_RETURN_IF_ERROR(ValidateVersion(version));
  MutexLock lock(mu_);
  return InTransactionLocked("BEGIN IMMEDIATE", [&]() REQUIRES(mu_) -> Status {
    REEF_ASSIGN_OR_RETURN(std::optional<int64_t> id, FindVersionIdLocked(kind, name, version));
    if (!id) return NoSuchVersion(kind, name, version);
    Stmt active(db_, "SELECT 1 FROM active_modules WHERE module_id = ?1");
    REEF_RETURN_IF_ERROR(active.prepared());
    active.Int(1, *id);
    int rc = active.Step();
    if (rc == SQLITE_ROW) return VersionIsActive(kind, name, version);
    if (rc != SQLITE_DONE) return SqlError(db_, "delete version");
    Stmt remove(db_, "DELETE FROM modules WHERE id = ?1");
    REEF_RETURN_IF_ERROR(remove.prepared());
    REEF_RETURN_IF_ERROR(remove.Int(1, *id).Run("delete version"));
    REEF_ASSIGN_OR_RETURN(bool exists, ModuleExistsLocked(kind, name));
    if (exists) return Status::Ok();
    // That was the last version: the module is gone, and its environment with it.
    Stmt env(db_, "DELETE FROM module_env_vars WHERE module_type = ?1 AND name = ?2");
    REEF_RETURN_IF_ERROR(env.prepared());
    return env.Kind(1, kind).Text(2, name).Run("delete env");
  });
}

Status SqliteModuleStore::DeleteModule(ModuleKind kind, std::string_view name) {
  REEF_RETURN_IF_ERROR(ValidateModule(kind, name));
  MutexLock lock(mu_);
  return InTransactionLocked("BEGIN IMMEDIATE", [&]() REQUIRES(mu_) -> Status {
    REEF_ASSIGN_OR_RETURN(bool exists, ModuleExistsLocked(kind, name));
    if (!exists) return NoSuchModule(kind, name);
    Stmt active(db_,
                "SELECT m.version FROM active_modules a JOIN modules m ON m.id = a.module_id "
                "WHERE a.module_type = ?1 AND a.name = ?2");
    REEF_RETURN_IF_ERROR(active.prepared());
    active.Kind(1, kind).Text(2, name);
    int rc = active.Step();
    if (rc == SQLITE_ROW) return ModuleIsActive(kind, name, active.ColumnText(0));
    if (rc != SQLITE_DONE) return SqlError(db_, "delete module");
    for (const char* sql : {"DELETE FROM modules WHERE module_type = ?1 AND name = ?2",
                            "DELETE FROM module_env_vars WHERE module_type = ?1 AND name = ?2"}) {
      Stmt remove(db_, sql);
      REEF_RETURN_IF_ERROR(remove.prepared());
      REEF_RETURN_IF_ERROR(remove.Kind(1, kind).Text(2, name).Run("delete module"));
    }
    return Status::Ok();
  });
}

// --- activation ------------------------------------------------------------------------------

Status SqliteModuleStore::SetActive(ModuleKind kind, std::string_view name,
                                    std::string_view version) {
  REEF_RETURN_IF_ERROR(ValidateModule(kind, name));
  REEF_RETURN_IF_ERROR(ValidateVersion(version));
  MutexLock lock(mu_);
  return InTransactionLocked("BEGIN IMMEDIATE", [&]() REQUIRES(mu_) -> Status {
    REEF_ASSIGN_OR_RETURN(std::optional<int64_t> id, FindVersionIdLocked(kind, name, version));
    if (!id) return NoSuchVersion(kind, name, version);
    Stmt stmt(db_,
              "INSERT INTO active_modules (module_type, name, module_id) VALUES (?1, ?2, ?3) "
              "ON CONFLICT (module_type, name) DO UPDATE SET module_id = excluded.module_id");
    REEF_RETURN_IF_ERROR(stmt.prepared());
    return stmt.Kind(1, kind).Text(2, name).Int(3, *id).Run("activate");
  });
}

Status SqliteModuleStore::ClearActive(ModuleKind kind, std::string_view name) {
  REEF_RETURN_IF_ERROR(ValidateModule(kind, name));
  MutexLock lock(mu_);
  Stmt stmt(db_, "DELETE FROM active_modules WHERE module_type = ?1 AND name = ?2");
  REEF_RETURN_IF_ERROR(stmt.prepared());
  REEF_RETURN_IF_ERROR(stmt.Kind(1, kind).Text(2, name).Run("deactivate"));
  if (sqlite3_changes(db_) == 0) return NoActiveVersion(kind, name);
  return Status::Ok();
}

Result<std::optional<ActiveModule>> SqliteModuleStore::Active(ModuleKind kind,
                                                              std::string_view name) {
  REEF_RETURN_IF_ERROR(ValidateModule(kind, name));
  MutexLock lock(mu_);
  Stmt stmt(db_,
            "SELECT m.version, m.sha256 FROM active_modules a JOIN modules m ON m.id = "
            "a.module_id WHERE a.module_type = ?1 AND a.name = ?2");
  REEF_RETURN_IF_ERROR(stmt.prepared());
  stmt.Kind(1, kind).Text(2, name);
  int rc = stmt.Step();
  if (rc == SQLITE_DONE) return std::optional<ActiveModule>();
  if (rc != SQLITE_ROW) return SqlError(db_, "active");
  return std::optional<ActiveModule>(
      ActiveModule{kind, std::string(name), stmt.ColumnText(0), stmt.ColumnText(1)});
}

Result<std::vector<ActiveModule>> SqliteModuleStore::ListActive() {
  MutexLock lock(mu_);
  Stmt stmt(db_,
            "SELECT a.module_type, a.name, m.version, m.sha256 FROM active_modules a "
            "JOIN modules m ON m.id = a.module_id");
  REEF_RETURN_IF_ERROR(stmt.prepared());
  std::vector<ActiveModule> active;
  int rc;
  while ((rc = stmt.Step()) == SQLITE_ROW) {
    REEF_ASSIGN_OR_RETURN(ModuleKind kind, KindColumn(stmt, 0));
    active.push_back(
        ActiveModule{kind, stmt.ColumnText(1), stmt.ColumnText(2), stmt.ColumnText(3)});
  }
  if (rc != SQLITE_DONE) return SqlError(db_, "list active");
  std::sort(active.begin(), active.end(), [](const ActiveModule& a, const ActiveModule& b) {
    return a.kind != b.kind ? a.kind < b.kind : a.name < b.name;
  });
  return active;
}

// --- environment -----------------------------------------------------------------------------

Status SqliteModuleStore::SetEnv(ModuleKind kind, std::string_view name, std::string_view key,
                                 std::string_view value) {
  REEF_RETURN_IF_ERROR(ValidateModule(kind, name));
  REEF_RETURN_IF_ERROR(ValidateEnv(key, value, options_));
  MutexLock lock(mu_);
  return InTransactionLocked("BEGIN IMMEDIATE", [&]() REQUIRES(mu_) -> Status {
    REEF_ASSIGN_OR_RETURN(bool exists, ModuleExistsLocked(kind, name));
    if (!exists) return NoSuchModule(kind, name);
    Stmt count(db_,
               "SELECT count(*), sum(key = ?3) FROM module_env_vars "
               "WHERE module_type = ?1 AND name = ?2");
    REEF_RETURN_IF_ERROR(count.prepared());
    count.Kind(1, kind).Text(2, name).Text(3, key);
    if (count.Step() != SQLITE_ROW) return SqlError(db_, "count env");
    bool is_new = count.ColumnInt(1) == 0;
    if (is_new && count.ColumnInt(0) >= options_.max_env_vars) {
      return TooManyEnvVars(kind, name, count.ColumnInt(0), options_.max_env_vars);
    }
    Stmt upsert(db_,
                "INSERT INTO module_env_vars (module_type, name, key, value) "
                "VALUES (?1, ?2, ?3, ?4) "
                "ON CONFLICT (module_type, name, key) DO UPDATE SET value = excluded.value");
    REEF_RETURN_IF_ERROR(upsert.prepared());
    return upsert.Kind(1, kind).Text(2, name).Text(3, key).Text(4, value).Run("set env");
  });
}

Status SqliteModuleStore::DeleteEnv(ModuleKind kind, std::string_view name, std::string_view key) {
  REEF_RETURN_IF_ERROR(ValidateModule(kind, name));
  REEF_RETURN_IF_ERROR(ValidateEnvKey(key));
  MutexLock lock(mu_);
  Stmt stmt(db_, "DELETE FROM module_env_vars WHERE module_type = ?1 AND name = ?2 AND key = ?3");
  REEF_RETURN_IF_ERROR(stmt.prepared());
  REEF_RETURN_IF_ERROR(stmt.Kind(1, kind).Text(2, name).Text(3, key).Run("delete env"));
  if (sqlite3_changes(db_) > 0) return Status::Ok();
  REEF_ASSIGN_OR_RETURN(bool exists, ModuleExistsLocked(kind, name));
  if (!exists) return NoSuchModule(kind, name);
  return NoSuchEnv(kind, name, key);
}

Result<std::map<std::string, std::string>> SqliteModuleStore::Env(ModuleKind kind,
                                                                  std::string_view name) {
  REEF_RETURN_IF_ERROR(ValidateModule(kind, name));
  MutexLock lock(mu_);
  std::map<std::string, std::string> env;
  Status status = InTransactionLocked("BEGIN", [&]() REQUIRES(mu_) -> Status {
    REEF_ASSIGN_OR_RETURN(bool exists, ModuleExistsLocked(kind, name));
    if (!exists) return NoSuchModule(kind, name);
    Stmt stmt(db_, "SELECT key, value FROM module_env_vars WHERE module_type = ?1 AND name = ?2");
    REEF_RETURN_IF_ERROR(stmt.prepared());
    stmt.Kind(1, kind).Text(2, name);
    int rc;
    while ((rc = stmt.Step()) == SQLITE_ROW) env[stmt.ColumnText(0)] = stmt.ColumnText(1);
    return rc == SQLITE_DONE ? Status::Ok() : SqlError(db_, "env");
  });
  if (!status.ok()) return status;
  return env;
}

}  // namespace reef::store
