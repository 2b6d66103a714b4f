// Internal to src/store: the embedded module store backend, in `data_dir`/reef.sqlite
// (module_store.h; module_store.cc and crypto_keys.cc).
//
// Thread ownership: any thread; one SQLite connection serialized by mu_.
#pragma once

#include <functional>
#include <memory>

#include "core/mutex.h"
#include "store/module_store.h"

struct sqlite3;

namespace reef::store::detail {

class SqliteModuleStore final : public ModuleStore {
 public:
  SqliteModuleStore(std::filesystem::path data_dir, ModuleStoreOptions options, sqlite3* db)
      : ModuleStore(std::move(data_dir), options), db_(db) {}
  ~SqliteModuleStore() override;

  // Creates the tables (WAL, foreign keys, secure_delete). Errors: as ModuleStore::Open.
  Status Init(const std::string& file);

  Result<UploadResult> Upload(ModuleKind kind, std::string_view name, std::string_view version,
                              std::span<const uint8_t> wasm) override;
  Result<std::vector<ModuleInfo>> List(ModuleKind kind) override;
  Result<ModuleInfo> Get(ModuleKind kind, std::string_view name) override;
  Result<std::vector<uint8_t>> LoadBytes(ModuleKind kind, std::string_view name,
                                         std::string_view version) override;
  Status DeleteVersion(ModuleKind kind, std::string_view name, std::string_view version) override;
  Status DeleteModule(ModuleKind kind, std::string_view name) override;
  Status SetActive(ModuleKind kind, std::string_view name, std::string_view version) override;
  Status ClearActive(ModuleKind kind, std::string_view name) override;
  Result<std::optional<ActiveModule>> Active(ModuleKind kind, std::string_view name) override;
  Result<std::vector<ActiveModule>> ListActive() override;
  Status SetEnv(ModuleKind kind, std::string_view name, std::string_view key,
                std::string_view value) override;
  Status DeleteEnv(ModuleKind kind, std::string_view name, std::string_view key) override;
  Result<std::map<std::string, std::string>> Env(ModuleKind kind, std::string_view name) override;
  Result<CryptoKey> GetOrCreateKey(std::string_view scope) override;
  Result<std::optional<CryptoKey>> FindKey(std::string_view key_id) override;
  Status ShredScope(std::string_view scope) override;

 private:
  Status ExecLocked(const char* sql) REQUIRES(mu_);
  Result<std::optional<int64_t>> FindVersionIdLocked(ModuleKind kind, std::string_view name,
                                                     std::string_view version) REQUIRES(mu_);
  Result<bool> ModuleExistsLocked(ModuleKind kind, std::string_view name) REQUIRES(mu_);
  Result<std::vector<ModuleInfo>> ListLocked(ModuleKind kind, std::optional<std::string_view> name)
      REQUIRES(mu_);
  // Runs `body` between `begin` ("BEGIN" to read a snapshot, "BEGIN IMMEDIATE" to write) and
  // COMMIT; rolls back when `body` or the commit fails and returns that Status. `body` runs
  // with mu_ held (a lambda says so with REQUIRES(mu_)).
  Status InTransactionLocked(const char* begin, const std::function<Status()>& body) REQUIRES(mu_);

  // Protected by mu_: the connection and every statement run on it.
  Mutex mu_;
  sqlite3* db_ GUARDED_BY(mu_);
};

}  // namespace reef::store::detail
