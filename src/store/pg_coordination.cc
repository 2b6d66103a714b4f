// The PostgreSQL module store's coordination of several processes (detail/pg_coordination.h):
// the change transactions and their notifications, following other processes' changes, the
// effects' leases and shared watermarks.
#include "store/detail/pg_coordination.h"

#include <fmt/format.h>
#include <poll.h>
#include <spdlog/spdlog.h>

#include <thread>

#include "core/clock.h"
#include "core/mutex.h"
#include "store/detail/module_rules.h"

namespace reef::store::detail {

namespace {

// A lease: a session advisory lock held by a connection of its own.
class PgLease final : public ModuleLease {
 public:
  explicit PgLease(std::unique_ptr<pg::Connection> conn) : conn_(std::move(conn)) {}
  bool held() const override {
    MutexLock lock(mu_);
    return conn_->Alive();  // a session the server ended has released the lock
  }

 private:
  mutable Mutex mu_;
  std::unique_ptr<pg::Connection> conn_ GUARDED_BY(mu_);
};

}  // namespace

int64_t ChangeLockKey(std::string_view text) {
  return pg::HashedLockKey(text);
}

// A transaction on `conn`: BEGIN, the change lock on `lock_text`, `body`, then COMMIT, with a
// pg_notify of `lock_text` from `token` when `notify`; ROLLBACK when anything fails.
Status InTransaction(pg::Connection& conn, const std::string& token, const std::string& lock_text,
                     const std::function<Status()>& body, bool notify) {
  REEF_RETURN_IF_ERROR(conn.ExecScript("BEGIN", "module store"));
  auto run = [&]() -> Status {
    pg::Params lock;
    lock.Int8(ChangeLockKey(lock_text));
    REEF_RETURN_IF_ERROR(
        conn.Exec("SELECT pg_advisory_xact_lock($1)", lock, "module store").status());
    REEF_RETURN_IF_ERROR(body());
    if (notify) {
      pg::Params payload;
      payload.Text(kModulesChannel).Text(token + " " + lock_text);
      REEF_RETURN_IF_ERROR(conn.Exec("SELECT pg_notify($1, $2)", payload, "module store").status());
    }
    return conn.ExecScript("COMMIT", "module store");
  };
  Status status = run();
  if (!status.ok() && conn.healthy()) (void)conn.ExecScript("ROLLBACK", "module store");
  return status;
}

Result<std::unique_ptr<ModuleLease>> TakeLease(pg::Pool& pool, const pg::ConnectOptions& connect,
                                               ModuleKind kind, std::string_view name) {
  REEF_RETURN_IF_ERROR(ValidateModule(kind, name));
  const std::string lease = fmt::format("{}/{}", ModuleKindPlural(kind), name);
  int64_t id = 0;
  {
    REEF_ASSIGN_OR_RETURN(pg::Pool::Lease conn, pool.Acquire());
    pg::Params p;
    p.Text(lease);
    // Two statements: the SELECT sees a row another process inserted meanwhile.
    REEF_RETURN_IF_ERROR(conn->Exec("INSERT INTO reef_lease_ids (name) VALUES ($1) ON CONFLICT "
                                    "(name) DO NOTHING",
                                    p, "lease id")
                             .status());
    REEF_ASSIGN_OR_RETURN(
        pg::PgResult row,
        conn->Exec("SELECT id FROM reef_lease_ids WHERE name = $1", p, "lease id"));
    if (row.rows() == 0) return Status::Internal("module store: no lease id for " + lease);
    REEF_ASSIGN_OR_RETURN(id, row.Int(0, 0));
  }
  REEF_ASSIGN_OR_RETURN(std::unique_ptr<pg::Connection> conn, pg::Connection::Open(connect));
  pg::Params key;
  key.Int8(pg::kLeaseKeyNamespace | id);
  REEF_ASSIGN_OR_RETURN(pg::PgResult got,
                        conn->Exec("SELECT pg_try_advisory_lock($1)", key, "lease"));
  if (got.field(0, 0) != "t") return std::unique_ptr<ModuleLease>();
  return std::unique_ptr<ModuleLease>(new PgLease(std::move(conn)));
}

Result<ModuleStore::EffectWatermark> LoadEffectWatermark(pg::Pool& pool, std::string_view name) {
  REEF_ASSIGN_OR_RETURN(pg::Pool::Lease conn, pool.Acquire());
  pg::Params p;
  p.Text(name);
  REEF_ASSIGN_OR_RETURN(pg::PgResult row,
                        conn->Exec("SELECT watermark, epoch FROM reef_effect_watermarks WHERE "
                                   "name = $1",
                                   p, "watermark"));
  ModuleStore::EffectWatermark out;
  if (row.rows() == 0) return out;
  REEF_ASSIGN_OR_RETURN(int64_t watermark, row.Int(0, 0));
  REEF_ASSIGN_OR_RETURN(out.epoch, row.Int(0, 1));
  out.watermark = static_cast<uint64_t>(watermark);
  return out;
}

Result<bool> SaveEffectWatermark(pg::Pool& pool, std::string_view name, uint64_t watermark,
                                 std::string_view version, int64_t epoch) {
  REEF_ASSIGN_OR_RETURN(pg::Pool::Lease conn, pool.Acquire());
  pg::Params p;
  p.Text(name).Int8(static_cast<int64_t>(watermark)).Text(version).Int8(UnixNowMs()).Int8(epoch);
  REEF_ASSIGN_OR_RETURN(
      pg::PgResult saved,
      conn->Exec("INSERT INTO reef_effect_watermarks (name, watermark, version, updated_at, "
                 "epoch) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (name) DO UPDATE SET "
                 "watermark = GREATEST(reef_effect_watermarks.watermark, EXCLUDED.watermark), "
                 "version = EXCLUDED.version, updated_at = "
                 "EXCLUDED.updated_at WHERE reef_effect_watermarks.epoch = EXCLUDED.epoch "
                 "RETURNING 1",
                 p, "save watermark"));
  return saved.rows() == 1;
}

Status ResetEffectWatermark(pg::Pool& pool, const std::string& token, std::string_view name) {
  REEF_ASSIGN_OR_RETURN(pg::Pool::Lease conn, pool.Acquire());
  return InTransaction(
      *conn, token, fmt::format("module:{}/{}", ModuleKindName(ModuleKind::kEffect), name),
      [&]() -> Status {
        pg::Params p;
        p.Text(name).Int8(UnixNowMs());
        return conn
            ->Exec(
                "INSERT INTO reef_effect_watermarks (name, watermark, version, updated_at, "
                "epoch) VALUES ($1, 0, '', $2, 1) ON CONFLICT (name) DO UPDATE SET watermark "
                "= 0, updated_at = EXCLUDED.updated_at, epoch = "
                "reef_effect_watermarks.epoch + 1",
                p, "reset watermark")
            .status();
      });
}

// The watcher thread: LISTEN, and hand each change another process made to `on_change`.
void FollowChanges(const pg::ConnectOptions& connect, const std::string& token,
                   const std::atomic<bool>& stop,
                   const std::function<void(const StoreChange&)>& on_change) {
  std::unique_ptr<pg::Connection> conn;
  auto backoff = std::chrono::milliseconds(100);
  while (!stop.load()) {
    if (!conn || !conn->healthy()) {
      conn.reset();
      auto opened = pg::Connection::Open(connect);
      Status listening =
          opened.ok() ? (*opened)->ExecScript(fmt::format("LISTEN {}", kModulesChannel), "LISTEN")
                      : opened.status();
      if (!listening.ok()) {
        spdlog::warn("module store: cannot follow other nodes' changes: {}", listening.message());
        for (auto waited = std::chrono::milliseconds(0); waited < backoff && !stop.load();
             waited += std::chrono::milliseconds(50)) {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        backoff = std::min(backoff * 2, std::chrono::milliseconds(5'000));
        continue;
      }
      conn = std::move(*opened);
      backoff = std::chrono::milliseconds(100);
      // Changes may have been missed while not listening.
      on_change(StoreChange{StoreChange::What::kEverything, ModuleKind::kCommand, ""});
    }
    pollfd fd{conn->socket(), POLLIN, 0};
    if (poll(&fd, 1, 200) <= 0) continue;
    auto received = conn->TakeNotifications();
    if (!received.ok()) continue;  // reconnects above
    for (const auto& n : *received) DispatchChange(n.payload, token, on_change);
  }
}

// "<token> module:<kind>/<name>" or "<token> key:<scope>"; this process's own are skipped.
void DispatchChange(std::string_view payload, const std::string& token,
                    const std::function<void(const StoreChange&)>& on_change) {
  size_t space = payload.find(' ');
  if (space == std::string_view::npos || payload.substr(0, space) == token) return;
  std::string_view what = payload.substr(space + 1);
  StoreChange change;
  if (what.starts_with("key:")) {
    change.what = StoreChange::What::kKeyScope;
    change.name = std::string(what.substr(4));
  } else if (what.starts_with("module:")) {
    what.remove_prefix(7);
    size_t slash = what.find('/');
    auto kind = ParseModuleKindName(what.substr(0, slash));
    if (slash == std::string_view::npos || !kind.ok()) return;
    change.what = StoreChange::What::kModule;
    change.kind = *kind;
    change.name = std::string(what.substr(slash + 1));
  } else {
    return;
  }
  on_change(change);
}

}  // namespace reef::store::detail
