// Internal to src/store: a prepared SQLite statement with bound parameters, shared by the
// module store's .cc files. Not part of the public surface.
//
// Thread ownership: caller synchronizes (the ModuleStore mutex guards the connection).
#pragma once

#include <fmt/format.h>
#include <sqlite3.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"
#include "store/module_names.h"

namespace reef::store::detail {

// The Status for SQLite's last error on `db` while doing `what`: Unavailable when the database
// stayed locked by another connection past the busy timeout, Internal otherwise.
inline Status SqlError(sqlite3* db, std::string_view what) {
  int code = sqlite3_errcode(db) & 0xff;  // the primary result code
  std::string message = fmt::format("module store: {}: {}", what, sqlite3_errmsg(db));
  if (code == SQLITE_BUSY || code == SQLITE_LOCKED) return Status::Unavailable(std::move(message));
  return Status::Internal(std::move(message));
}

// One prepared statement; finalized on destruction. Parameters bind by 1-based index and are
// copied (SQLITE_TRANSIENT), so bound views need to live only for the bind call.
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
    sqlite3_bind_text64(stmt_, index, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
    return *this;
  }
  // Binds the kind's name ("command", ...): the module_type column.
  Stmt& Kind(int index, ModuleKind kind) { return Text(index, ModuleKindName(kind)); }
  Stmt& Blob(int index, std::span<const uint8_t> bytes) {
    // A zero-length blob still binds as a blob (not NULL) through a non-null pointer.
    static const uint8_t kEmpty = 0;
    sqlite3_bind_blob64(stmt_, index, bytes.empty() ? &kEmpty : bytes.data(), bytes.size(),
                        SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& Int(int index, int64_t value) {
    sqlite3_bind_int64(stmt_, index, value);
    return *this;
  }
  // SQLITE_ROW, SQLITE_DONE, or an error code.
  int Step() { return sqlite3_step(stmt_); }
  // Steps a statement that returns no row; Internal naming `what` when it fails.
  Status Run(std::string_view what) {
    return Step() == SQLITE_DONE ? Status::Ok() : SqlError(db_, what);
  }

  std::string ColumnText(int column) const {
    const auto* p = static_cast<const char*>(sqlite3_column_blob(stmt_, column));
    int n = sqlite3_column_bytes(stmt_, column);
    return p == nullptr ? std::string() : std::string(p, static_cast<std::size_t>(n));
  }
  std::vector<uint8_t> ColumnBlob(int column) const {
    const auto* p = static_cast<const uint8_t*>(sqlite3_column_blob(stmt_, column));
    int n = sqlite3_column_bytes(stmt_, column);
    return p == nullptr ? std::vector<uint8_t>() : std::vector<uint8_t>(p, p + n);
  }
  bool ColumnIsNull(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }
  int64_t ColumnInt(int column) const { return sqlite3_column_int64(stmt_, column); }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  int rc_ = SQLITE_OK;
};

}  // namespace reef::store::detail
