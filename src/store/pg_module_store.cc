// The PostgreSQL module store (module_store.h, OpenPostgres): the embedded store's tables with a
// reef_ prefix, in a database several Reef processes share. Each mutating call is one READ
// COMMITTED transaction that first takes a transaction-scoped advisory lock on its module (or
// key scope), so two processes changing one module take turns, and announces the change with
// pg_notify on the channel reef_modules (delivered at commit). A watcher thread follows other
// processes' changes; leases and watermarks live in detail/pg_coordination.h.
//
// Thread ownership: any thread; the pool gives each call its own connection; the watcher
// thread owns its connection.
#include <fmt/format.h>
#include <openssl/rand.h>
#include <poll.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "core/clock.h"
#include "core/ids.h"
#include "core/mutex.h"
#include "pg/pg.h"
#include "store/detail/module_rules.h"
#include "store/detail/pg_coordination.h"

namespace reef::store {

using namespace detail;  // NOLINT: this file is a detail backend

namespace {

constexpr const char* kSchemaV1 = R"sql(
CREATE TABLE reef_modules (
  id bigserial PRIMARY KEY,
  module_type text NOT NULL,
  name text NOT NULL,
  version text NOT NULL,
  wasm_bytes bytea NOT NULL,
  sha256 text NOT NULL,
  created_at bigint NOT NULL,
  UNIQUE (module_type, name, version)
);
CREATE TABLE reef_active_modules (
  module_type text NOT NULL,
  name text NOT NULL,
  module_id bigint NOT NULL REFERENCES reef_modules (id),
  PRIMARY KEY (module_type, name)
);
CREATE INDEX reef_active_modules_by_module ON reef_active_modules (module_id);
CREATE TABLE reef_module_env_vars (
  module_type text NOT NULL,
  name text NOT NULL,
  key text NOT NULL,
  value text NOT NULL,
  PRIMARY KEY (module_type, name, key)
);
CREATE TABLE reef_crypto_keys (
  id text PRIMARY KEY,
  scope text NOT NULL,
  key bytea,
  deleted_at bigint,
  created_at bigint NOT NULL
);
CREATE UNIQUE INDEX reef_crypto_keys_live_by_scope ON reef_crypto_keys (scope)
  WHERE deleted_at IS NULL;
CREATE TABLE reef_effect_watermarks (
  name text PRIMARY KEY,
  watermark bigint NOT NULL,
  version text NOT NULL,
  updated_at bigint NOT NULL,
  epoch bigint NOT NULL DEFAULT 0
);
CREATE TABLE reef_lease_ids (
  name text PRIMARY KEY,
  id bigint GENERATED ALWAYS AS IDENTITY (MINVALUE 1 MAXVALUE 2147483647) UNIQUE
);
)sql";
constexpr const char* kMigrations[] = {kSchemaV1};

// The parameters $1 = kind, $2 = name (and $3 = version) most statements here start with.
pg::Params VersionParams(ModuleKind kind, std::string_view name,
                         std::optional<std::string_view> version = std::nullopt) {
  pg::Params p;
  p.Text(ModuleKindName(kind)).Text(name);
  if (version) p.Text(*version);
  return p;
}

std::string ModuleText(ModuleKind kind, std::string_view name) {
  return fmt::format("module:{}/{}", ModuleKindName(kind), name);
}

class PgModuleStore final : public ModuleStore {
 public:
  PgModuleStore(std::string conninfo, std::filesystem::path data_dir, ModuleStoreOptions options)
      : ModuleStore(std::move(data_dir), options),
        connect_{std::move(conninfo)},
        pool_(connect_, 4, std::chrono::milliseconds(10'000)) {
    std::array<uint8_t, 8> bytes{};
    if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) {
      // Without randomness: the time and the address of this store, still distinct per process.
      const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
      std::memcpy(bytes.data(), &now, sizeof bytes);
      bytes[0] ^= static_cast<uint8_t>(reinterpret_cast<uintptr_t>(this) >> 4);
    }
    token_ = HexLower(bytes);
  }

  ~PgModuleStore() override {
    stop_.store(true);
    if (watcher_.joinable()) watcher_.join();
  }

  Status Init() {
    REEF_ASSIGN_OR_RETURN(pg::Pool::Lease conn, pool_.Acquire());
    return pg::Migrate(*conn, "modules", "module store", kMigrations);
  }

  bool shared() const override { return true; }

  // ---- versions ----

  Result<UploadResult> Upload(ModuleKind kind, std::string_view name, std::string_view version,
                              std::span<const uint8_t> wasm) override {
    REEF_RETURN_IF_ERROR(ValidateUpload(kind, name, version, wasm, options_));
    UploadResult result{ModuleVersion{kind, std::string(name), std::string(version),
                                      Sha256Hex(wasm), wasm.size(), UnixNowMs()},
                        true};
    Status done = ChangeModule(kind, name, [&](pg::Connection& conn) -> Status {
      pg::Params p = VersionParams(kind, name, version);
      REEF_ASSIGN_OR_RETURN(
          pg::PgResult found,
          conn.Exec("SELECT sha256, length(wasm_bytes), created_at FROM reef_modules WHERE "
                    "module_type = $1 AND name = $2 AND version = $3",
                    p, "upload"));
      if (found.rows() > 0) {
        std::string stored(found.field(0, 0));
        if (stored != result.version.sha256) return OtherBytes(kind, name, version, stored);
        REEF_ASSIGN_OR_RETURN(int64_t size, found.Int(0, 1));
        REEF_ASSIGN_OR_RETURN(result.version.created_at_ms, found.Int(0, 2));
        result.version.size_bytes = static_cast<uint64_t>(size);
        result.created = false;
        return Status::Ok();
      }
      p.Bytea(std::string_view(reinterpret_cast<const char*>(wasm.data()), wasm.size()))
          .Text(result.version.sha256)
          .Int8(result.version.created_at_ms);
      return conn
          .Exec(
              "INSERT INTO reef_modules (module_type, name, version, wasm_bytes, sha256, "
              "created_at) VALUES ($1, $2, $3, $4, $5, $6)",
              p, "upload")
          .status();
    });
    if (!done.ok()) return done;
    return result;
  }

  Result<std::vector<ModuleInfo>> List(ModuleKind kind) override {
    REEF_RETURN_IF_ERROR(ValidateModuleKind(kind));
    return ListOf(kind, std::nullopt);
  }

  Result<ModuleInfo> Get(ModuleKind kind, std::string_view name) override {
    REEF_RETURN_IF_ERROR(ValidateModule(kind, name));
    REEF_ASSIGN_OR_RETURN(std::vector<ModuleInfo> list, ListOf(kind, name));
    if (list.empty()) return NoSuchModule(kind, name);
    return std::move(list.front());
  }

  Result<std::vector<uint8_t>> LoadBytes(ModuleKind kind, std::string_view name,
                                         std::string_view version) override {
    REEF_RETURN_IF_ERROR(ValidateModule(kind, name));
    REEF_RETURN_IF_ERROR(ValidateVersion(version));
    REEF_ASSIGN_OR_RETURN(pg::Pool::Lease conn, pool_.Acquire());
    pg::Params p = VersionParams(kind, name, version);
    REEF_ASSIGN_OR_RETURN(pg::PgResult row,
                          conn->Exec("SELECT wasm_bytes, sha256 FROM reef_modules WHERE "
                                     "module_type = $1 AND name = $2 AND version = $3",
                                     p, "load bytes", /*binary_rows=*/true));
    if (row.rows() == 0) return NoSuchVersion(kind, name, version);
    std::string_view bytes = row.field(0, 0);
    std::vector<uint8_t> out(bytes.begin(), bytes.end());
    REEF_RETURN_IF_ERROR(CheckIntegrity(kind, name, version, out, row.field(0, 1)));
    return out;
  }

  Status DeleteVersion(ModuleKind kind, std::string_view name, std::string_view version) override {
    REEF_RETURN_IF_ERROR(ValidateModule(kind, name));
    REEF_RETURN_IF_ERROR(ValidateVersion(version));
    return ChangeModule(kind, name, [&](pg::Connection& conn) -> Status {
      pg::Params p = VersionParams(kind, name, version);
      REEF_ASSIGN_OR_RETURN(
          pg::PgResult found,
          conn.Exec("SELECT m.id, a.module_id IS NOT NULL FROM reef_modules m LEFT JOIN "
                    "reef_active_modules a ON a.module_id = m.id WHERE m.module_type = $1 AND "
                    "m.name = $2 AND m.version = $3",
                    p, "delete version"));
      if (found.rows() == 0) return NoSuchVersion(kind, name, version);
      if (found.field(0, 1) == "t") return VersionIsActive(kind, name, version);
      pg::Params id;
      REEF_ASSIGN_OR_RETURN(int64_t row_id, found.Int(0, 0));
      id.Int8(row_id);
      REEF_RETURN_IF_ERROR(
          conn.Exec("DELETE FROM reef_modules WHERE id = $1", id, "delete version").status());
      // The last version gone: the module is gone, and its environment with it.
      pg::Params m = VersionParams(kind, name);
      return conn
          .Exec(
              "DELETE FROM reef_module_env_vars WHERE module_type = $1 AND name = $2 AND NOT "
              "EXISTS (SELECT 1 FROM reef_modules WHERE module_type = $1 AND name = $2)",
              m, "delete env")
          .status();
    });
  }

  Status DeleteModule(ModuleKind kind, std::string_view name) override {
    REEF_RETURN_IF_ERROR(ValidateModule(kind, name));
    return ChangeModule(kind, name, [&](pg::Connection& conn) -> Status {
      pg::Params m = VersionParams(kind, name);
      REEF_ASSIGN_OR_RETURN(
          pg::PgResult found,
          conn.Exec("SELECT (SELECT count(*) FROM reef_modules WHERE module_type = $1 AND name = "
                    "$2), (SELECT v.version FROM reef_active_modules a JOIN reef_modules v ON "
                    "v.id = a.module_id WHERE a.module_type = $1 AND a.name = $2)",
                    m, "delete module"));
      if (found.field(0, 0) == "0") return NoSuchModule(kind, name);
      if (!found.is_null(0, 1)) return ModuleIsActive(kind, name, found.field(0, 1));
      for (const char* sql : {"DELETE FROM reef_modules WHERE module_type = $1 AND name = $2",
                              "DELETE FROM reef_module_env_vars WHERE module_type = $1 AND name = "
                              "$2"}) {
        REEF_RETURN_IF_ERROR(conn.Exec(sql, m, "delete module").status());
      }
      return Status::Ok();
    });
  }

  // ---- activation ----

  Status SetActive(ModuleKind kind, std::string_view name, std::string_view version) override {
    REEF_RETURN_IF_ERROR(ValidateModule(kind, name));
    REEF_RETURN_IF_ERROR(ValidateVersion(version));
    return ChangeModule(kind, name, [&](pg::Connection& conn) -> Status {
      pg::Params p = VersionParams(kind, name, version);
      REEF_ASSIGN_OR_RETURN(
          pg::PgResult set,
          conn.Exec("INSERT INTO reef_active_modules (module_type, name, module_id) SELECT "
                    "module_type, name, id FROM reef_modules WHERE module_type = $1 AND name = "
                    "$2 AND version = $3 ON CONFLICT (module_type, name) DO UPDATE SET "
                    "module_id = EXCLUDED.module_id RETURNING 1",
                    p, "activate"));
      if (set.rows() == 0) return NoSuchVersion(kind, name, version);
      return Status::Ok();
    });
  }

  Status ClearActive(ModuleKind kind, std::string_view name) override {
    REEF_RETURN_IF_ERROR(ValidateModule(kind, name));
    return ChangeModule(kind, name, [&](pg::Connection& conn) -> Status {
      pg::Params m = VersionParams(kind, name);
      REEF_ASSIGN_OR_RETURN(pg::PgResult gone,
                            conn.Exec("DELETE FROM reef_active_modules WHERE module_type = $1 "
                                      "AND name = $2 RETURNING 1",
                                      m, "deactivate"));
      if (gone.rows() == 0) return NoActiveVersion(kind, name);
      return Status::Ok();
    });
  }

  Result<std::optional<ActiveModule>> Active(ModuleKind kind, std::string_view name) override {
    REEF_RETURN_IF_ERROR(ValidateModule(kind, name));
    REEF_ASSIGN_OR_RETURN(pg::Pool::Lease conn, pool_.Acquire());
    pg::Params m = VersionParams(kind, name);
    REEF_ASSIGN_OR_RETURN(pg::PgResult row,
                          conn->Exec("SELECT v.version, v.sha256 FROM reef_active_modules a JOIN "
                                     "reef_modules v ON v.id = a.module_id WHERE a.module_type = "
                                     "$1 AND a.name = $2",
                                     m, "active"));
    if (row.rows() == 0) return std::optional<ActiveModule>();
    return std::optional<ActiveModule>(ActiveModule{
        kind, std::string(name), std::string(row.field(0, 0)), std::string(row.field(0, 1))});
  }

  Result<std::vector<ActiveModule>> ListActive() override {
    REEF_ASSIGN_OR_RETURN(pg::Pool::Lease conn, pool_.Acquire());
    REEF_ASSIGN_OR_RETURN(pg::PgResult rows,
                          conn->Exec("SELECT a.module_type, a.name, v.version, v.sha256 FROM "
                                     "reef_active_modules a JOIN reef_modules v ON v.id = "
                                     "a.module_id",
                                     {}, "list active"));
    std::vector<ActiveModule> active;
    for (int r = 0; r < rows.rows(); ++r) {
      auto kind = ParseModuleKindName(rows.field(r, 0));
      if (!kind.ok()) return Status::DataLoss("module store: stored " + kind.status().message());
      active.push_back(ActiveModule{*kind, std::string(rows.field(r, 1)),
                                    std::string(rows.field(r, 2)), std::string(rows.field(r, 3))});
    }
    std::sort(active.begin(), active.end(), [](const ActiveModule& a, const ActiveModule& b) {
      return a.kind != b.kind ? a.kind < b.kind : a.name < b.name;
    });
    return active;
  }

  // ---- environment ----

  Status SetEnv(ModuleKind kind, std::string_view name, std::string_view key,
                std::string_view value) override {
    REEF_RETURN_IF_ERROR(ValidateModule(kind, name));
    REEF_RETURN_IF_ERROR(ValidateEnv(key, value, options_));
    if (value.find('\0') != std::string_view::npos) {
      return Status::InvalidArgument(fmt::format(
          "environment value of {} contains U+0000, which the PostgreSQL module store cannot "
          "hold",
          key));
    }
    return ChangeModule(kind, name, [&](pg::Connection& conn) -> Status {
      pg::Params p;
      p.Text(ModuleKindName(kind)).Text(name).Text(key);
      REEF_ASSIGN_OR_RETURN(
          pg::PgResult facts,
          conn.Exec("SELECT EXISTS (SELECT 1 FROM reef_modules WHERE module_type = $1 AND name = "
                    "$2), (SELECT count(*) FROM reef_module_env_vars WHERE module_type = $1 AND "
                    "name = $2), EXISTS (SELECT 1 FROM reef_module_env_vars WHERE module_type = "
                    "$1 AND name = $2 AND key = $3)",
                    p, "set env"));
      if (facts.field(0, 0) != "t") return NoSuchModule(kind, name);
      REEF_ASSIGN_OR_RETURN(int64_t count, facts.Int(0, 1));
      if (facts.field(0, 2) != "t" && count >= options_.max_env_vars) {
        return TooManyEnvVars(kind, name, count, options_.max_env_vars);
      }
      p.Text(value);
      return conn
          .Exec(
              "INSERT INTO reef_module_env_vars (module_type, name, key, value) VALUES ($1, "
              "$2, $3, $4) ON CONFLICT (module_type, name, key) DO UPDATE SET value = "
              "EXCLUDED.value",
              p, "set env")
          .status();
    });
  }

  Status DeleteEnv(ModuleKind kind, std::string_view name, std::string_view key) override {
    REEF_RETURN_IF_ERROR(ValidateModule(kind, name));
    REEF_RETURN_IF_ERROR(ValidateEnvKey(key));
    return ChangeModule(kind, name, [&](pg::Connection& conn) -> Status {
      pg::Params p;
      p.Text(ModuleKindName(kind)).Text(name).Text(key);
      REEF_ASSIGN_OR_RETURN(pg::PgResult gone,
                            conn.Exec("DELETE FROM reef_module_env_vars WHERE module_type = $1 "
                                      "AND name = $2 AND key = $3 RETURNING 1",
                                      p, "delete env"));
      if (gone.rows() > 0) return Status::Ok();
      pg::Params m = VersionParams(kind, name);
      REEF_ASSIGN_OR_RETURN(
          pg::PgResult exists,
          conn.Exec("SELECT 1 FROM reef_modules WHERE module_type = $1 AND name = $2 LIMIT 1", m,
                    "delete env"));
      if (exists.rows() == 0) return NoSuchModule(kind, name);
      return NoSuchEnv(kind, name, key);
    });
  }

  Result<std::map<std::string, std::string>> Env(ModuleKind kind, std::string_view name) override {
    REEF_ASSIGN_OR_RETURN(ModuleInfo info, Get(kind, name));
    return std::move(info.env);
  }

  // ---- crypto keys ----

  Result<CryptoKey> GetOrCreateKey(std::string_view scope) override {
    REEF_RETURN_IF_ERROR(ValidateKeyScope(scope));
    REEF_ASSIGN_OR_RETURN(pg::Pool::Lease conn, pool_.Acquire());
    std::optional<CryptoKey> result;
    Status done = InTransaction(
        *conn, token_, "key:" + std::string(scope),
        [&]() -> Status {
          pg::Params s;
          s.Text(scope);
          REEF_ASSIGN_OR_RETURN(
              pg::PgResult live,
              conn->Exec("SELECT id, key FROM reef_crypto_keys WHERE scope = $1 AND "
                         "deleted_at IS NULL",
                         s, "find key", /*binary_rows=*/true));
          if (live.rows() > 0) {
            std::string_view bytes = live.field(0, 1);
            REEF_ASSIGN_OR_RETURN(
                result,
                KeyFromRow(std::string(live.field(0, 0)), std::string(scope),
                           std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()),
                                                    bytes.size())));
            return Status::Ok();
          }
          REEF_ASSIGN_OR_RETURN(CryptoKey key, NewCryptoKey(scope));
          pg::Params row;
          row.Text(key.id).Text(scope).Bytea(
              std::string_view(reinterpret_cast<const char*>(key.key.data()), key.key.size()));
          row.Int8(UnixNowMs());
          REEF_RETURN_IF_ERROR(
              conn->Exec("INSERT INTO reef_crypto_keys (id, scope, key, deleted_at, "
                         "created_at) VALUES ($1, $2, $3, NULL, $4)",
                         row, "create key")
                  .status());
          result = std::move(key);
          return Status::Ok();
        },
        /*notify=*/false);  // a new key changes nothing another process has cached
    if (!done.ok()) return done;
    return std::move(*result);
  }

  Result<std::optional<CryptoKey>> FindKey(std::string_view key_id) override {
    REEF_RETURN_IF_ERROR(ValidateKeyId(key_id));
    REEF_ASSIGN_OR_RETURN(pg::Pool::Lease conn, pool_.Acquire());
    pg::Params p;
    p.Text(key_id);
    REEF_ASSIGN_OR_RETURN(
        pg::PgResult row,
        conn->Exec("SELECT scope, key FROM reef_crypto_keys WHERE id = $1", p, "find key", true));
    if (row.rows() == 0) return Status::NotFound(fmt::format("no crypto key with id {}", key_id));
    if (row.is_null(0, 1)) return std::optional<CryptoKey>();  // shredded
    std::string_view bytes = row.field(0, 1);
    REEF_ASSIGN_OR_RETURN(
        CryptoKey key,
        KeyFromRow(std::string(key_id), std::string(row.field(0, 0)),
                   std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()),
                                            bytes.size())));
    return std::optional<CryptoKey>(std::move(key));
  }

  Status ShredScope(std::string_view scope) override {
    REEF_RETURN_IF_ERROR(ValidateKeyScope(scope));
    REEF_ASSIGN_OR_RETURN(pg::Pool::Lease conn, pool_.Acquire());
    return InTransaction(*conn, token_, "key:" + std::string(scope), [&]() -> Status {
      pg::Params p;
      p.Text(scope).Int8(UnixNowMs());
      REEF_ASSIGN_OR_RETURN(pg::PgResult gone,
                            conn->Exec("UPDATE reef_crypto_keys SET key = NULL, deleted_at = $2 "
                                       "WHERE scope = $1 AND deleted_at IS NULL RETURNING 1",
                                       p, "shred"));
      if (gone.rows() == 0) {
        return Status::NotFound(fmt::format("crypto key scope '{}' has no live key", scope));
      }
      return Status::Ok();
    });
  }

  // ---- several processes ----

  void Watch(std::function<void(const StoreChange&)> on_change) override {
    if (watcher_.joinable()) return;
    watcher_ = std::thread([this, on_change = std::move(on_change)] {
      FollowChanges(connect_, token_, stop_, on_change);
    });
  }

  Result<std::unique_ptr<ModuleLease>> TryLease(ModuleKind kind, std::string_view name) override {
    REEF_RETURN_IF_ERROR(ValidateModule(kind, name));
    return TakeLease(pool_, connect_, kind, name);
  }
  Result<EffectWatermark> LoadWatermark(std::string_view name) override {
    return LoadEffectWatermark(pool_, name);
  }
  Result<bool> SaveWatermark(std::string_view name, uint64_t watermark, std::string_view version,
                             int64_t epoch) override {
    return SaveEffectWatermark(pool_, name, watermark, version, epoch);
  }
  Status ResetWatermark(std::string_view name) override {
    return ResetEffectWatermark(pool_, token_, name);
  }

 private:
  // One change of module (kind, name): a pooled connection, one transaction under the module's
  // change lock, announced to the other processes (InTransaction).
  Status ChangeModule(ModuleKind kind, std::string_view name,
                      const std::function<Status(pg::Connection&)>& body) {
    REEF_ASSIGN_OR_RETURN(pg::Pool::Lease conn, pool_.Acquire());
    return InTransaction(*conn, token_, ModuleText(kind, name),
                         [&]() -> Status { return body(*conn); });
  }

  Result<std::vector<ModuleInfo>> ListOf(ModuleKind kind, std::optional<std::string_view> name) {
    REEF_ASSIGN_OR_RETURN(pg::Pool::Lease conn, pool_.Acquire());
    // One statement: one snapshot of versions, active pointers and environments.
    pg::Params p;
    p.Text(ModuleKindName(kind));
    if (name) {
      p.Text(*name);
    } else {
      p.Null(pg::Oid::kText);
    }
    REEF_ASSIGN_OR_RETURN(
        pg::PgResult rows,
        conn->Exec("SELECT 'v', name, version, sha256, length(wasm_bytes)::text, "
                   "created_at::text FROM reef_modules WHERE module_type = $1 AND ($2::text IS "
                   "NULL OR name = $2) UNION ALL SELECT 'a', a.name, v.version, NULL, NULL, NULL "
                   "FROM reef_active_modules a JOIN reef_modules v ON v.id = a.module_id WHERE "
                   "a.module_type = $1 AND ($2::text IS NULL OR a.name = $2) UNION ALL SELECT "
                   "'e', name, key, value, NULL, NULL FROM reef_module_env_vars WHERE module_type "
                   "= $1 AND ($2::text IS NULL OR name = $2)",
                   p, "list modules"));
    std::map<std::string, ModuleInfo> modules;
    for (int r = 0; r < rows.rows(); ++r) {
      if (rows.field(r, 0) != "v") continue;
      std::string module(rows.field(r, 1));
      ModuleInfo& info = modules[module];
      info.kind = kind;
      info.name = module;
      REEF_ASSIGN_OR_RETURN(int64_t size, rows.Int(r, 4));
      REEF_ASSIGN_OR_RETURN(int64_t created, rows.Int(r, 5));
      info.versions.push_back(ModuleVersion{kind, module, std::string(rows.field(r, 2)),
                                            std::string(rows.field(r, 3)),
                                            static_cast<uint64_t>(size), created});
    }
    for (int r = 0; r < rows.rows(); ++r) {
      auto it = modules.find(std::string(rows.field(r, 1)));
      if (it == modules.end()) continue;
      if (rows.field(r, 0) == "a") it->second.active_version = std::string(rows.field(r, 2));
      if (rows.field(r, 0) == "e") {
        it->second.env[std::string(rows.field(r, 2))] = std::string(rows.field(r, 3));
      }
    }
    return SortedModules(std::move(modules));
  }

  const pg::ConnectOptions connect_;
  pg::Pool pool_;
  std::string token_;  // names this process's notifications
  std::atomic<bool> stop_{false};
  std::thread watcher_;
};

}  // namespace

Result<std::unique_ptr<ModuleStore>> ModuleStore::OpenPostgres(
    const std::string& conninfo, const std::filesystem::path& data_dir,
    ModuleStoreOptions options) {
  REEF_RETURN_IF_ERROR(CreateCacheDir(data_dir));
  auto store = std::make_unique<PgModuleStore>(conninfo, data_dir, options);
  REEF_RETURN_IF_ERROR(store->Init());
  return std::unique_ptr<ModuleStore>(std::move(store));
}

}  // namespace reef::store
