#include "code/source_store.h"

#include <fmt/format.h>
#include <openssl/rand.h>
#include <sqlite3.h>

#include <array>
#include <chrono>
#include <system_error>

#include "core/clock.h"

namespace reef::code {
namespace {

constexpr int kBusyTimeoutMs = 5000;
// Attempts at drawing a revision id that is not taken yet (36^12 ids: a clash is a fluke).
constexpr int kRevisionIdAttempts = 8;

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS source_working (
  path TEXT PRIMARY KEY NOT NULL,
  kind TEXT NOT NULL,
  source_id TEXT NOT NULL,
  text BLOB NOT NULL,
  updated_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS source_revisions (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  revision TEXT NOT NULL UNIQUE,
  path TEXT NOT NULL,
  kind TEXT NOT NULL,
  source_id TEXT NOT NULL,
  text BLOB NOT NULL,
  message TEXT,
  created_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS source_revisions_by_path ON source_revisions (path, seq);
)sql";

Status SqlError(sqlite3* db, std::string_view what) {
  return Status::Internal(fmt::format("source store: {}: {}", what, sqlite3_errmsg(db)));
}

// One prepared statement; finalized on destruction. Parameters bind by 1-based index.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) : db_(db) {
    rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr);
  }
  ~Stmt() { sqlite3_finalize(stmt_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  Status prepared() const { return rc_ == SQLITE_OK ? Status::Ok() : SqlError(db_, "prepare"); }
  Stmt& Text(int index, std::string_view text) {
    sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& Blob(int index, std::string_view bytes) {
    // A zero-length blob still binds as a blob (not NULL) through a non-null pointer.
    static const char kEmpty = 0;
    sqlite3_bind_blob(stmt_, index, bytes.empty() ? &kEmpty : bytes.data(),
                      static_cast<int>(bytes.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& Int(int index, int64_t value) {
    sqlite3_bind_int64(stmt_, index, value);
    return *this;
  }
  Stmt& Null(int index) {
    sqlite3_bind_null(stmt_, index);
    return *this;
  }
  // SQLITE_ROW, SQLITE_DONE, or an error code.
  int Step() { return sqlite3_step(stmt_); }

  std::string ColumnText(int column) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_blob(stmt_, column));
    int n = sqlite3_column_bytes(stmt_, column);
    return p == nullptr ? std::string() : std::string(p, static_cast<std::size_t>(n));
  }
  bool ColumnIsNull(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }
  int64_t ColumnInt(int column) const { return sqlite3_column_int64(stmt_, column); }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  int rc_ = SQLITE_OK;
};

// A fresh revision id: kRevisionIdLength characters uniform over kRevisionIdAlphabet
// (rejection sampling: bytes >= 252 = 7 * 36 are redrawn, so there is no modulo bias).
Result<std::string> NewRevisionId() {
  std::string id;
  while (id.size() < kRevisionIdLength) {
    std::array<unsigned char, 32> random{};
    if (RAND_bytes(random.data(), static_cast<int>(random.size())) != 1) {
      return Status::Unavailable("source store: OpenSSL RAND_bytes failed (no entropy)");
    }
    for (unsigned char byte : random) {
      if (byte >= 252 || id.size() == kRevisionIdLength) continue;
      id.push_back(kRevisionIdAlphabet[byte % kRevisionIdAlphabet.size()]);
    }
  }
  return id;
}

Result<SourceKind> KindColumn(const Stmt& stmt, int column) {
  auto kind = ParseSourceKind(stmt.ColumnText(column));
  if (!kind.ok()) return Status::DataLoss("source store: " + kind.status().message());
  return *kind;
}

}  // namespace

// --- open ------------------------------------------------------------------------------------

Result<std::unique_ptr<SourceStore>> SourceStore::Open(const std::filesystem::path& data_dir) {
  std::error_code ec;
  std::filesystem::create_directories(data_dir, ec);
  if (ec) {
    return Status::Unavailable(
        fmt::format("source store: cannot create '{}': {}", data_dir.string(), ec.message()));
  }
  std::string file = (data_dir / "reef.sqlite").string();
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(
      file.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    Status status = Status::Unavailable(fmt::format("source store: cannot open '{}': {}", file,
                                                    db ? sqlite3_errmsg(db) : "out of memory"));
    sqlite3_close(db);
    return status;
  }
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  std::unique_ptr<SourceStore> store(new SourceStore(db));
  MutexLock lock(store->mu_);
  Status status = store->ExecLocked("PRAGMA journal_mode=WAL;");
  if (status.ok()) status = store->ExecLocked(kSchema);
  if (!status.ok()) {
    return Status::DataLoss(
        fmt::format("source store: '{}' is not usable: {}", file, status.message()));
  }
  return store;
}

SourceStore::~SourceStore() {
  sqlite3_close(db_);
}

Status SourceStore::ExecLocked(const char* sql) const {
  char* error = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &error) == SQLITE_OK) return Status::Ok();
  Status status = Status::Internal(fmt::format("source store: {}", error ? error : "exec failed"));
  sqlite3_free(error);
  return status;
}

// --- working sources -------------------------------------------------------------------------

Result<std::optional<SourceFile>> SourceStore::ReadLocked(std::string_view path) const {
  Stmt stmt(db_, "SELECT kind, source_id, text FROM source_working WHERE path = ?1");
  REEF_RETURN_IF_ERROR(stmt.prepared());
  stmt.Text(1, path);
  int rc = stmt.Step();
  if (rc == SQLITE_DONE) return std::optional<SourceFile>();
  if (rc != SQLITE_ROW) return SqlError(db_, "read");
  REEF_ASSIGN_OR_RETURN(SourceKind kind, KindColumn(stmt, 0));
  return std::optional<SourceFile>(
      SourceFile{std::string(path), kind, stmt.ColumnText(2), stmt.ColumnText(1)});
}

Status SourceStore::PutWorkingLocked(const SourceFile& file) {
  Stmt stmt(db_,
            "INSERT INTO source_working (path, kind, source_id, text, updated_ms) "
            "VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (path) DO UPDATE SET kind = excluded.kind, "
            "source_id = excluded.source_id, text = excluded.text, updated_ms = "
            "excluded.updated_ms");
  REEF_RETURN_IF_ERROR(stmt.prepared());
  stmt.Text(1, file.path).Text(2, SourceKindName(file.kind)).Text(3, file.id);
  stmt.Blob(4, file.text).Int(5, UnixNowMs());
  if (stmt.Step() != SQLITE_DONE) return SqlError(db_, "write");
  return Status::Ok();
}

Result<std::string> SourceStore::Write(std::string_view path, SourceKind kind,
                                       std::string_view bytes,
                                       const std::optional<std::string>& expected) {
  REEF_RETURN_IF_ERROR(ValidateSourcePath(path));
  REEF_RETURN_IF_ERROR(ValidateSourceSize(bytes));
  if (expected && !IsValidSourceId(*expected)) {
    return Status::InvalidArgument(fmt::format(
        "expected source id '{}': must be 64 lowercase hex characters (or null to create)",
        *expected));
  }
  MutexLock lock(mu_);
  // BEGIN IMMEDIATE takes the write lock first, so the check and the write are one step even
  // against another process on the same file.
  REEF_RETURN_IF_ERROR(ExecLocked("BEGIN IMMEDIATE"));
  auto current = ReadLocked(path);
  Status status = current.status();
  if (status.ok()) {
    if (!expected && current->has_value()) {
      status = Status::AlreadyExists(
          fmt::format("source '{}' exists (id {}): pass its id as the expected id to replace it",
                      path, (*current)->id));
    } else if (expected && !current->has_value()) {
      status = Status::NotFound(fmt::format(
          "source '{}' does not exist: write with a null expected id to create it", path));
    } else if (expected && (*current)->id != *expected) {
      status = Status::Conflict(fmt::format(
          "source '{}' changed: expected id {} but the current id is {}; nothing was written", path,
          *expected, (*current)->id));
    }
  }
  SourceFile file{std::string(path), kind, std::string(bytes), SourceId(kind, bytes)};
  if (status.ok()) status = PutWorkingLocked(file);
  if (status.ok()) status = ExecLocked("COMMIT");
  if (!status.ok()) {
    (void)ExecLocked("ROLLBACK");
    return status;
  }
  return file.id;
}

Result<SourceFile> SourceStore::Read(std::string_view path) const {
  REEF_RETURN_IF_ERROR(ValidateSourcePath(path));
  MutexLock lock(mu_);
  REEF_ASSIGN_OR_RETURN(std::optional<SourceFile> file, ReadLocked(path));
  if (!file) return Status::NotFound(fmt::format("source '{}' does not exist", path));
  return std::move(*file);
}

Result<std::vector<SourceEntry>> SourceStore::List() const {
  MutexLock lock(mu_);
  Stmt stmt(db_, "SELECT path, kind, source_id FROM source_working ORDER BY path");
  REEF_RETURN_IF_ERROR(stmt.prepared());
  std::vector<SourceEntry> entries;
  int rc;
  while ((rc = stmt.Step()) == SQLITE_ROW) {
    REEF_ASSIGN_OR_RETURN(SourceKind kind, KindColumn(stmt, 1));
    entries.push_back(SourceEntry{stmt.ColumnText(0), kind, stmt.ColumnText(2)});
  }
  if (rc != SQLITE_DONE) return SqlError(db_, "list");
  return entries;
}

// --- revisions -------------------------------------------------------------------------------

Result<std::string> SourceStore::Commit(std::string_view path,
                                        std::optional<std::string_view> message) {
  REEF_RETURN_IF_ERROR(ValidateSourcePath(path));
  if (message && message->size() > kMaxCommitMessageBytes) {
    return Status::LimitExceeded(fmt::format("commit message of {} bytes: the limit is {} bytes",
                                             message->size(), kMaxCommitMessageBytes));
  }
  MutexLock lock(mu_);
  REEF_ASSIGN_OR_RETURN(std::optional<SourceFile> file, ReadLocked(path));
  if (!file) return Status::NotFound(fmt::format("source '{}' does not exist", path));
  for (int attempt = 0; attempt < kRevisionIdAttempts; ++attempt) {
    REEF_ASSIGN_OR_RETURN(std::string revision, NewRevisionId());
    Stmt stmt(db_,
              "INSERT INTO source_revisions (revision, path, kind, source_id, text, message, "
              "created_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
    REEF_RETURN_IF_ERROR(stmt.prepared());
    stmt.Text(1, revision).Text(2, path).Text(3, SourceKindName(file->kind)).Text(4, file->id);
    stmt.Blob(5, file->text).Int(7, UnixNowMs());
    if (message) {
      stmt.Text(6, *message);
    } else {
      stmt.Null(6);
    }
    int rc = stmt.Step();
    if (rc == SQLITE_DONE) return revision;
    if (rc != SQLITE_CONSTRAINT) return SqlError(db_, "commit");
  }
  return Status::Internal("source store: no unused revision id after several draws");
}

Result<std::vector<Revision>> SourceStore::History(std::string_view path) const {
  REEF_RETURN_IF_ERROR(ValidateSourcePath(path));
  MutexLock lock(mu_);
  Stmt stmt(db_,
            "SELECT revision, source_id, kind, created_ms, message FROM source_revisions "
            "WHERE path = ?1 ORDER BY seq DESC");
  REEF_RETURN_IF_ERROR(stmt.prepared());
  stmt.Text(1, path);
  std::vector<Revision> revisions;
  int rc;
  while ((rc = stmt.Step()) == SQLITE_ROW) {
    REEF_ASSIGN_OR_RETURN(SourceKind kind, KindColumn(stmt, 2));
    Revision revision{stmt.ColumnText(0), stmt.ColumnText(1), kind, stmt.ColumnInt(3), {}};
    if (!stmt.ColumnIsNull(4)) revision.message = stmt.ColumnText(4);
    revisions.push_back(std::move(revision));
  }
  if (rc != SQLITE_DONE) return SqlError(db_, "history");
  return revisions;
}

Result<std::optional<SourceFile>> SourceStore::ReadRevisionLocked(std::string_view path,
                                                                  std::string_view revision) const {
  Stmt stmt(db_,
            "SELECT kind, source_id, text FROM source_revisions WHERE path = ?1 AND "
            "revision = ?2");
  REEF_RETURN_IF_ERROR(stmt.prepared());
  stmt.Text(1, path).Text(2, revision);
  int rc = stmt.Step();
  if (rc == SQLITE_DONE) return std::optional<SourceFile>();
  if (rc != SQLITE_ROW) return SqlError(db_, "read revision");
  REEF_ASSIGN_OR_RETURN(SourceKind kind, KindColumn(stmt, 0));
  return std::optional<SourceFile>(
      SourceFile{std::string(path), kind, stmt.ColumnText(2), stmt.ColumnText(1)});
}

Result<SourceFile> SourceStore::ReadRevision(std::string_view path,
                                             std::string_view revision) const {
  REEF_RETURN_IF_ERROR(ValidateSourcePath(path));
  MutexLock lock(mu_);
  REEF_ASSIGN_OR_RETURN(std::optional<SourceFile> file, ReadRevisionLocked(path, revision));
  if (!file) {
    return Status::NotFound(fmt::format("source '{}' has no revision '{}'", path, revision));
  }
  return std::move(*file);
}

Result<std::string> SourceStore::Rollback(std::string_view path, std::string_view revision) {
  REEF_RETURN_IF_ERROR(ValidateSourcePath(path));
  MutexLock lock(mu_);
  REEF_ASSIGN_OR_RETURN(std::optional<SourceFile> file, ReadRevisionLocked(path, revision));
  if (!file) {
    return Status::NotFound(fmt::format("source '{}' has no revision '{}'", path, revision));
  }
  REEF_RETURN_IF_ERROR(PutWorkingLocked(*file));
  return file->id;
}

}  // namespace reef::code
