// The connection pool, the hashed advisory lock keys and the schema migrations (pg.h); the
// connections, parameters and results they build on are in pg.cc.
#include <fmt/format.h>
#include <libpq-fe.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "pg/pg.h"

namespace reef::pg {

// ---- Pool ---------------------------------------------------------------------------------------

Pool::Pool(ConnectOptions options, size_t size, std::chrono::milliseconds acquire_timeout)
    : options_(std::move(options)),
      size_(std::max<size_t>(size, 1)),
      acquire_timeout_(acquire_timeout) {}

Pool::~Pool() = default;

Pool::Lease::~Lease() {
  if (pool_ && conn_) pool_->Return(std::move(conn_));
}

Pool::Lease& Pool::Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    if (pool_ && conn_) pool_->Return(std::move(conn_));
    pool_ = other.pool_;
    conn_ = std::move(other.conn_);
  }
  return *this;
}

Result<Pool::Lease> Pool::Acquire() {
  const auto deadline = std::chrono::steady_clock::now() + acquire_timeout_;
  {
    MutexLock lock(mu_);
    for (;;) {
      while (!idle_.empty()) {
        std::unique_ptr<Connection> conn = std::move(idle_.back());
        idle_.pop_back();
        // One the server ended while it sat idle is dropped here, before a statement is sent
        // on it (whose outcome would then be unknown).
        if (conn->Alive()) return Lease(this, std::move(conn));
        --open_;
      }
      if (open_ < size_) break;
      if (cv_.WaitUntil(mu_, deadline) == std::cv_status::timeout && idle_.empty() &&
          open_ >= size_) {
        return Status::Unavailable(
            fmt::format("no PostgreSQL connection free within {} ms (all {} in use)",
                        acquire_timeout_.count(), size_));
      }
    }
    ++open_;  // a slot for the connection opened below, outside the lock
  }
  auto opened = Connection::Open(options_);
  if (!opened.ok()) {
    MutexLock lock(mu_);
    --open_;
    ++connect_failures_;
    cv_.NotifyOne();
    return opened.status();
  }
  return Lease(this, std::move(*opened));
}

void Pool::Return(std::unique_ptr<Connection> conn) {
  MutexLock lock(mu_);
  // Only a connection outside any transaction goes back (a failed ROLLBACK would hand the next
  // user an aborted transaction).
  if (conn->healthy() && PQtransactionStatus(conn->conn_) == PQTRANS_IDLE) {
    idle_.push_back(std::move(conn));
  } else {
    --open_;  // dropped: the next Acquire opens a new one
  }
  cv_.NotifyOne();
}

size_t Pool::open_connections() const {
  MutexLock lock(mu_);
  return open_;
}

uint64_t Pool::connect_failures() const {
  MutexLock lock(mu_);
  return connect_failures_;
}

// ---- Lock keys ----------------------------------------------------------------------------------

int64_t HashedLockKey(std::string_view text) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a, 64 bits
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  auto key = static_cast<int64_t>(h);
  const int64_t high = key & ~int64_t{0xffffffff};
  if (high == kReefKeyNamespace || high == kLeaseKeyNamespace) key ^= int64_t{1} << 62;
  return key;
}

// ---- Migrations ---------------------------------------------------------------------------------

Status Migrate(Connection& conn, std::string_view component, std::string_view what,
               std::span<const char* const> migrations) {
  Params lock;
  lock.Int8(kMigrationLockKey);
  REEF_RETURN_IF_ERROR(
      conn.Exec("SELECT pg_advisory_lock($1)", lock, "taking the migration lock").status());
  auto migrate = [&]() -> Status {
    REEF_RETURN_IF_ERROR(conn.ExecScript(
        "CREATE TABLE IF NOT EXISTS reef_schema (component text PRIMARY KEY, version int NOT "
        "NULL, migrated_at timestamptz NOT NULL DEFAULT now())",
        "creating reef_schema"));
    Params name;
    name.Text(component);
    REEF_ASSIGN_OR_RETURN(PgResult found,
                          conn.Exec("SELECT version FROM reef_schema WHERE component = $1", name,
                                    "reading the schema version"));
    int64_t version = 0;
    if (found.rows() > 0) {
      REEF_ASSIGN_OR_RETURN(version, found.Int(0, 0));
    }
    const auto known = static_cast<int64_t>(migrations.size());
    if (version > known) {
      return Status::DataLoss(
          fmt::format("the database's {} schema is version {}, newer than this Reef knows ({}): "
                      "use a newer Reef",
                      what, version, known));
    }
    for (int64_t v = version; v < known; ++v) {
      std::string script = fmt::format(
          "BEGIN;\n{}\nINSERT INTO reef_schema (component, version) VALUES ('{}', {}) "
          "ON CONFLICT (component) DO UPDATE SET version = EXCLUDED.version, migrated_at = "
          "now();\nCOMMIT;",
          migrations[v], component, v + 1);
      Status applied = conn.ExecScript(
          script, fmt::format("migrating the {} to schema version {}", what, v + 1));
      if (!applied.ok()) {
        (void)conn.ExecScript("ROLLBACK", "rolling back a migration");
        return applied;
      }
    }
    return Status::Ok();
  };
  Status status = migrate();
  (void)conn.Exec("SELECT pg_advisory_unlock($1)", lock);
  return status;
}

}  // namespace reef::pg
