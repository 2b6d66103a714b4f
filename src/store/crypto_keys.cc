// The embedded module store's crypto-shredding keys: table crypto_keys (spec 000, "Module store
// schema").
#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <utility>

#include "core/clock.h"
#include "core/ids.h"
#include "store/detail/module_rules.h"
#include "store/detail/sqlite_module_store.h"
#include "store/detail/sqlite_stmt.h"
#include "store/module_store.h"

namespace reef::store {
using namespace detail;  // NOLINT: this file is the detail backend

Result<CryptoKey> SqliteModuleStore::GetOrCreateKey(std::string_view scope) {
  REEF_RETURN_IF_ERROR(ValidateKeyScope(scope));
  MutexLock lock(mu_);
  std::optional<CryptoKey> result;
  Status status = InTransactionLocked("BEGIN IMMEDIATE", [&]() REQUIRES(mu_) -> Status {
    Stmt find(db_, "SELECT id, key FROM crypto_keys WHERE scope = ?1 AND deleted_at IS NULL");
    REEF_RETURN_IF_ERROR(find.prepared());
    find.Text(1, scope);
    int rc = find.Step();
    if (rc == SQLITE_ROW) {
      REEF_ASSIGN_OR_RETURN(result,
                            KeyFromRow(find.ColumnText(0), std::string(scope), find.ColumnBlob(1)));
      return Status::Ok();
    }
    if (rc != SQLITE_DONE) return SqlError(db_, "find key");
    REEF_ASSIGN_OR_RETURN(CryptoKey key, NewCryptoKey(scope));
    Stmt insert(db_,
                "INSERT INTO crypto_keys (id, scope, key, deleted_at, created_at) "
                "VALUES (?1, ?2, ?3, NULL, ?4)");
    REEF_RETURN_IF_ERROR(insert.prepared());
    insert.Text(1, key.id).Text(2, scope).Blob(3, key.key).Int(4, UnixNowMs());
    REEF_RETURN_IF_ERROR(insert.Run("create key"));
    result = std::move(key);
    return Status::Ok();
  });
  if (!status.ok()) return status;
  return std::move(*result);
}

Result<std::optional<CryptoKey>> SqliteModuleStore::FindKey(std::string_view key_id) {
  REEF_RETURN_IF_ERROR(ValidateKeyId(key_id));
  MutexLock lock(mu_);
  Stmt stmt(db_, "SELECT scope, key FROM crypto_keys WHERE id = ?1");
  REEF_RETURN_IF_ERROR(stmt.prepared());
  stmt.Text(1, key_id);
  int rc = stmt.Step();
  if (rc == SQLITE_DONE) {
    return Status::NotFound(fmt::format("no crypto key with id {}", key_id));
  }
  if (rc != SQLITE_ROW) return SqlError(db_, "find key");
  if (stmt.ColumnIsNull(1)) return std::optional<CryptoKey>();  // shredded
  REEF_ASSIGN_OR_RETURN(CryptoKey key,
                        KeyFromRow(std::string(key_id), stmt.ColumnText(0), stmt.ColumnBlob(1)));
  return std::optional<CryptoKey>(std::move(key));
}

Status SqliteModuleStore::ShredScope(std::string_view scope) {
  REEF_RETURN_IF_ERROR(ValidateKeyScope(scope));
  MutexLock lock(mu_);
  Status status = InTransactionLocked("BEGIN IMMEDIATE", [&]() REQUIRES(mu_) -> Status {
    Stmt stmt(db_,
              "UPDATE crypto_keys SET key = NULL, deleted_at = ?2 "
              "WHERE scope = ?1 AND deleted_at IS NULL");
    REEF_RETURN_IF_ERROR(stmt.prepared());
    REEF_RETURN_IF_ERROR(stmt.Text(1, scope).Int(2, UnixNowMs()).Run("shred"));
    if (sqlite3_changes(db_) == 0) {
      return Status::NotFound(fmt::format("crypto key scope '{}' has no live key", scope));
    }
    return Status::Ok();
  });
  if (!status.ok()) return status;
  // Best effort: copy the zeroed page into the database and drop the WAL's older copies.
  (void)ExecLocked("PRAGMA wal_checkpoint(TRUNCATE);");
  return Status::Ok();
}

}  // namespace reef::store
