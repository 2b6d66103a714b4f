// ModuleStore: the uploaded command, projector and effect modules of the event-sourced
// applications (spec 000, "Module lifecycle" and "Module store schema"): every uploaded
// version's bytes and SHA-256, which version of each module is active, per-module environment
// variables, the crypto-shredding keys, and the on-disk artifact cache of compiled modules.
//
// Upload and activation are separate steps: Upload stores an immutable version; SetActive
// points a module at one of its versions (a rolling upgrade swaps the pointer); ClearActive
// removes the pointer. The active version can never be deleted. A module exists while it has
// at least one version; its environment variables live and die with it.
//
// Two backends behind this interface:
//  - embedded (Open): `data_dir`/reef.sqlite (shared with code::SourceStore; this store touches
//    only the tables modules, active_modules, module_env_vars and crypto_keys), WAL journal,
//    foreign keys on, secure_delete on. One process.
//  - PostgreSQL (OpenPostgres): tables reef_modules, reef_active_modules, reef_module_env_vars,
//    reef_crypto_keys and reef_effect_watermarks in a database several processes share; each
//    change is announced to the others (Watch), and effects take a lease to run (TryLease).
// Every statement binds its parameters; each mutating call is one transaction. Compiled
// artifacts are local files `data_dir`/cache/<sha256>.<suffix> with either backend.
//
// Besides the errors each call lists, a database call returns Unavailable when the database
// cannot be reached or stays locked past the busy timeout, and Internal for any other database
// failure (the transaction is rolled back: nothing changed).
//
// Thread ownership: any thread. The embedded backend serializes calls on one SQLite connection
// (a call may block for the 5,000 ms busy timeout while another connection holds the write
// lock); the PostgreSQL backend runs them on pooled connections. Artifact calls touch no
// database.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"
#include "store/module_names.h"
#include "store/semver.h"

namespace reef::store {

// --- records ---------------------------------------------------------------------------------

// One uploaded version of a module (a row of modules, without its bytes).
struct ModuleVersion {
  ModuleKind kind = ModuleKind::kCommand;
  std::string name;
  std::string version;  // SemVer 2.0.0 text, exactly as uploaded
  std::string sha256;   // 64 lowercase hex characters: SHA-256 of the bytes; compile-cache key
  uint64_t size_bytes = 0;
  int64_t created_at_ms = 0;  // upload time: milliseconds since the Unix epoch (system clock)
};

// A module: all its versions, its active pointer and its environment.
struct ModuleInfo {
  ModuleKind kind = ModuleKind::kCommand;
  std::string name;
  // Ascending SemVer precedence; versions of equal precedence (differing only in build
  // metadata) in bytewise order of their text. Never empty.
  std::vector<ModuleVersion> versions;
  std::optional<std::string> active_version;  // nullopt when the module is not active
  std::map<std::string, std::string> env;     // key -> value
};

// The active version of one module (a row of active_modules, resolved).
struct ActiveModule {
  ModuleKind kind = ModuleKind::kCommand;
  std::string name;
  std::string version;
  std::string sha256;  // 64 lowercase hex characters
};

// The outcome of Upload.
struct UploadResult {
  ModuleVersion version;  // the stored version (on a repeat: as first uploaded)
  bool created = false;   // false: the same bytes were already stored (idempotent)
};

// An AES-256 key for crypto-shredding the data of one scope.
struct CryptoKey {
  std::string id;  // kKeyIdLength lowercase hex characters, random
  std::string scope;
  std::array<uint8_t, 32> key{};  // 32 random bytes (OpenSSL RAND_bytes)
};

// The limits of one store (STYLE.md: limits as one struct of named constants).
struct ModuleStoreOptions {
  uint64_t max_module_bytes = 64ull << 20;   // largest module, in bytes (64 MiB)
  uint64_t max_env_value_bytes = 64u << 10;  // largest environment value, in bytes (64 KiB)
  uint32_t max_env_vars = 256;               // most environment variables per module
};

// What another process changed (ModuleStore::Watch).
struct StoreChange {
  enum class What { kModule, kKeyScope, kEverything };
  What what = What::kModule;
  ModuleKind kind = ModuleKind::kCommand;  // kModule
  std::string name;                        // kModule: the module; kKeyScope: the scope
};

// The right to run one module in one process among several (ModuleStore::TryLease), held until
// it is destroyed or lost (the process's connection to the database broke).
class ModuleLease {
 public:
  virtual ~ModuleLease() = default;
  // False once the lease may have passed to another process.
  virtual bool held() const = 0;
};

// --- the store -------------------------------------------------------------------------------

class ModuleStore {
 public:
  // Opens (creating when missing) `data_dir`/reef.sqlite with this store's tables, and the
  // directory `data_dir`/cache.
  // Errors: Unavailable when a directory or the database cannot be created or opened;
  // DataLoss when the file is not a usable SQLite database.
  static Result<std::unique_ptr<ModuleStore>> Open(const std::filesystem::path& data_dir,
                                                   ModuleStoreOptions options = {});

  // Opens the PostgreSQL module store in the database `conninfo` names (a libpq connection
  // string or postgresql:// URI), creating or migrating its tables; the artifact cache stays in
  // `data_dir`/cache. Any number of processes may open the same database.
  // Errors: Unavailable when the database cannot be reached; DataLoss when it holds a newer
  // schema than this Reef knows.
  static Result<std::unique_ptr<ModuleStore>> OpenPostgres(const std::string& conninfo,
                                                           const std::filesystem::path& data_dir,
                                                           ModuleStoreOptions options = {});

  virtual ~ModuleStore();
  ModuleStore(const ModuleStore&) = delete;
  ModuleStore& operator=(const ModuleStore&) = delete;

  // Stores `wasm` as `version` of module `name` of `kind`, not active. The bytes are opaque
  // here (the caller validates them as WebAssembly); their SHA-256 (OpenSSL) is stored too.
  // Uploading the same bytes again under the same version is OK with created = false.
  // Lifetime: `wasm` is read during the call only.
  // Errors: InvalidArgument for the kind, the name (ValidateModuleName), a version that is not
  // SemVer 2.0.0 or empty bytes; LimitExceeded for more than kMaxVersionBytes of version or
  // more than max_module_bytes of bytes; AlreadyExists when the version exists with other
  // bytes (versions are immutable).
  virtual Result<UploadResult> Upload(ModuleKind kind, std::string_view name,
                                      std::string_view version, std::span<const uint8_t> wasm) = 0;

  // Every module of `kind`, ordered by name (bytewise).
  // Errors: InvalidArgument for the kind; DataLoss for a malformed stored row.
  virtual Result<std::vector<ModuleInfo>> List(ModuleKind kind) = 0;

  // The module `name` of `kind`.
  // Errors: InvalidArgument for the kind or name; NotFound "no commands module named 'x'".
  virtual Result<ModuleInfo> Get(ModuleKind kind, std::string_view name) = 0;

  // The bytes of `version`, checked against the stored SHA-256 (integrity check on load).
  // Errors: InvalidArgument for the kind, name or version; NotFound for an unknown version;
  // DataLoss when the bytes no longer hash to the stored SHA-256.
  virtual Result<std::vector<uint8_t>> LoadBytes(ModuleKind kind, std::string_view name,
                                                 std::string_view version) = 0;

  // Deletes `version`. Deleting the last version deletes the module and its environment.
  // Errors: InvalidArgument for the kind, name or version; NotFound for an unknown version;
  // FailedPrecondition when it is the active version (deactivate or activate another first).
  virtual Status DeleteVersion(ModuleKind kind, std::string_view name,
                               std::string_view version) = 0;

  // Deletes every version and the environment variables of module `name`.
  // Errors: InvalidArgument for the kind or name; NotFound for an unknown module;
  // FailedPrecondition while one of its versions is active.
  virtual Status DeleteModule(ModuleKind kind, std::string_view name) = 0;

  // Makes `version` the active version of module `name` (replacing any other; activating the
  // active version again is OK).
  // Errors: InvalidArgument for the kind, name or version; NotFound when the version was not
  // uploaded.
  virtual Status SetActive(ModuleKind kind, std::string_view name, std::string_view version) = 0;

  // Removes the active pointer of module `name`; its versions stay.
  // Errors: InvalidArgument for the kind or name; NotFound when no version is active.
  virtual Status ClearActive(ModuleKind kind, std::string_view name) = 0;

  // The active version of module `name`; nullopt when none (or no such module).
  // Errors: InvalidArgument for the kind or name.
  virtual Result<std::optional<ActiveModule>> Active(ModuleKind kind, std::string_view name) = 0;

  // Every active module of every kind, ordered by kind (enum order) then name: what to start
  // at startup.
  virtual Result<std::vector<ActiveModule>> ListActive() = 0;

  // Sets environment variable `key` of module `name` to `value` (created or replaced).
  // Errors: InvalidArgument for the kind, name, key (ValidateEnvKey) or a value that is not
  // UTF-8; NotFound for an unknown module; LimitExceeded naming max_env_value_bytes for the
  // value, or max_env_vars when adding a key to a module that has that many.
  virtual Status SetEnv(ModuleKind kind, std::string_view name, std::string_view key,
                        std::string_view value) = 0;

  // Deletes environment variable `key` of module `name`.
  // Errors: InvalidArgument for the kind, name or key; NotFound when the key is not set.
  virtual Status DeleteEnv(ModuleKind kind, std::string_view name, std::string_view key) = 0;

  // The environment variables of module `name` (key -> value).
  // Errors: InvalidArgument for the kind or name; NotFound for an unknown module.
  virtual Result<std::map<std::string, std::string>> Env(ModuleKind kind,
                                                         std::string_view name) = 0;

  // The live key of `scope`, created (random id and key) when the scope has none. At most
  // one key per scope is live at any time.
  // Errors: InvalidArgument for the scope (ValidateKeyScope); Unavailable when RAND_bytes fails.
  virtual Result<CryptoKey> GetOrCreateKey(std::string_view scope) = 0;

  // The key with id `key_id`; nullopt (OK) when it was shredded.
  // Errors: InvalidArgument when `key_id` is not kKeyIdLength lowercase hex characters;
  // NotFound when no key ever had this id.
  virtual Result<std::optional<CryptoKey>> FindKey(std::string_view key_id) = 0;

  // Crypto-shreds `scope`: every live key of it gets key = NULL and deleted_at = now (ms).
  // Embedded: with secure_delete the key bytes are zeroed in the database page, and the WAL is
  // then checkpointed and truncated (best effort: a concurrent reader can keep old WAL frames
  // until the next checkpoint). PostgreSQL: the old row version keeps the key bytes until
  // VACUUM reclaims it (docs/operations.md "Crypto-shredding"). A later GetOrCreateKey makes a
  // new, different key.
  // Errors: InvalidArgument for the scope; NotFound when the scope has no live key.
  virtual Status ShredScope(std::string_view scope) = 0;

  // Stores `bytes` as the artifact `data_dir`/cache/<sha256>.<suffix>, replacing any: written
  // to a temporary file, fsynced, renamed into place, and the directory fsynced, so a reader
  // sees either the old file or all of the new one. `sha256` is the module's (the cache key).
  // Lifetime: `bytes` is read during the call only.
  // Errors: InvalidArgument when `sha256` is not 64 lowercase hex characters or `suffix` is
  // not 1..16 of [a-z0-9]; Unavailable for a filesystem error.
  Status PutArtifact(std::string_view sha256, std::string_view suffix,
                     std::span<const uint8_t> bytes);

  // The artifact stored by PutArtifact(sha256, suffix); nullopt when there is none. The
  // `wasm` artifact is the module's bytes: it is returned only when they hash to `sha256`; a
  // file that does not is removed (logged) and reported as none, never returned.
  // Errors: InvalidArgument as PutArtifact; Unavailable for a filesystem error.
  Result<std::optional<std::vector<uint8_t>>> GetArtifact(std::string_view sha256,
                                                          std::string_view suffix);

  // The directory given to Open.
  const std::filesystem::path& data_dir() const { return data_dir_; }

  // --- several processes (PostgreSQL) --------------------------------------------------------

  // True when other processes share this store: effects must hold a lease to run and keep
  // their watermark here (the embedded store: false).
  virtual bool shared() const { return false; }

  // Calls `on_change` (on a thread of the store's) whenever another process changed a module
  // (its versions, active pointer or environment) or shredded a crypto key scope, and with
  // StoreChange::kEverything after the store lost track for a while (a reconnection). Set once,
  // before changes matter; the embedded store never calls it.
  virtual void Watch(std::function<void(const StoreChange&)> on_change) { (void)on_change; }

  // Tries to take the lease that lets one process run module `name` of `kind` (an effect).
  // nullptr (OK) when another process holds it. The embedded store always grants it.
  virtual Result<std::unique_ptr<ModuleLease>> TryLease(ModuleKind kind, std::string_view name);

  // The shared watermark of effect `name` ({0, 0} when none was saved) and its epoch, which
  // every reset (replay) increments. SaveWatermark saves only while the epoch is still the one
  // the runner loaded (a runner that missed a replay is fenced off: false), and never moves the
  // watermark back (a runner that lost its lease without noticing cannot undo its
  // successor's progress). ResetWatermark sets it to 0 in
  // a new epoch and tells the other processes (Watch). Errors: Unimplemented on the embedded
  // store, which keeps the watermark in the effect's database.
  struct EffectWatermark {
    uint64_t watermark = 0;
    int64_t epoch = 0;
  };
  virtual Result<EffectWatermark> LoadWatermark(std::string_view name);
  virtual Result<bool> SaveWatermark(std::string_view name, uint64_t watermark,
                                     std::string_view version, int64_t epoch);
  virtual Status ResetWatermark(std::string_view name);

 protected:
  ModuleStore(std::filesystem::path data_dir, ModuleStoreOptions options)
      : data_dir_(std::move(data_dir)), options_(options) {}

  // Constant after construction.
  const std::filesystem::path data_dir_;
  const ModuleStoreOptions options_;

 private:
  std::filesystem::path ArtifactPath(std::string_view sha256, std::string_view suffix) const;
};

}  // namespace reef::store
