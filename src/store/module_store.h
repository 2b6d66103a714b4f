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
// Storage: `data_dir`/reef.sqlite (shared with code::SourceStore; this store touches only the
// tables modules, active_modules, module_env_vars and crypto_keys), WAL journal, foreign keys
// on, secure_delete on. Every statement binds its parameters; each mutating call is one
// transaction. Compiled artifacts are files `data_dir`/cache/<sha256>.<suffix>.
//
// Besides the errors each call lists, a database call returns Unavailable when another
// connection keeps the file locked past the busy timeout, and Internal for any other SQLite
// failure (the transaction is rolled back: nothing changed).
//
// Thread ownership: any thread. One SQLite connection serialized by an internal mutex; a call
// may block for the SQLite busy timeout (5,000 ms) while another connection holds the write
// lock. Artifact calls do not take the mutex.
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

#include "core/mutex.h"
#include "core/status.h"
#include "store/module_names.h"
#include "store/semver.h"

struct sqlite3;

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

// --- the store -------------------------------------------------------------------------------

class ModuleStore {
 public:
  // Opens (creating when missing) `data_dir`/reef.sqlite with this store's tables, and the
  // directory `data_dir`/cache.
  // Errors: Unavailable when a directory or the database cannot be created or opened;
  // DataLoss when the file is not a usable SQLite database.
  static Result<std::unique_ptr<ModuleStore>> Open(const std::filesystem::path& data_dir,
                                                   ModuleStoreOptions options = {});

  ~ModuleStore();
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
  Result<UploadResult> Upload(ModuleKind kind, std::string_view name, std::string_view version,
                              std::span<const uint8_t> wasm);

  // Every module of `kind`, ordered by name (bytewise).
  // Errors: InvalidArgument for the kind; DataLoss for a malformed stored row.
  Result<std::vector<ModuleInfo>> List(ModuleKind kind);

  // The module `name` of `kind`.
  // Errors: InvalidArgument for the kind or name; NotFound "no commands module named 'x'".
  Result<ModuleInfo> Get(ModuleKind kind, std::string_view name);

  // The bytes of `version`, checked against the stored SHA-256 (integrity check on load).
  // Errors: InvalidArgument for the kind, name or version; NotFound for an unknown version;
  // DataLoss when the bytes no longer hash to the stored SHA-256.
  Result<std::vector<uint8_t>> LoadBytes(ModuleKind kind, std::string_view name,
                                         std::string_view version);

  // Deletes `version`. Deleting the last version deletes the module and its environment.
  // Errors: InvalidArgument for the kind, name or version; NotFound for an unknown version;
  // FailedPrecondition when it is the active version (deactivate or activate another first).
  Status DeleteVersion(ModuleKind kind, std::string_view name, std::string_view version);

  // Deletes every version and the environment variables of module `name`.
  // Errors: InvalidArgument for the kind or name; NotFound for an unknown module;
  // FailedPrecondition while one of its versions is active.
  Status DeleteModule(ModuleKind kind, std::string_view name);

  // Makes `version` the active version of module `name` (replacing any other; activating the
  // active version again is OK).
  // Errors: InvalidArgument for the kind, name or version; NotFound when the version was not
  // uploaded.
  Status SetActive(ModuleKind kind, std::string_view name, std::string_view version);

  // Removes the active pointer of module `name`; its versions stay.
  // Errors: InvalidArgument for the kind or name; NotFound when no version is active.
  Status ClearActive(ModuleKind kind, std::string_view name);

  // The active version of module `name`; nullopt when none (or no such module).
  // Errors: InvalidArgument for the kind or name.
  Result<std::optional<ActiveModule>> Active(ModuleKind kind, std::string_view name);

  // Every active module of every kind, ordered by kind (enum order) then name: what to start
  // at startup.
  Result<std::vector<ActiveModule>> ListActive();

  // Sets environment variable `key` of module `name` to `value` (created or replaced).
  // Errors: InvalidArgument for the kind, name, key (ValidateEnvKey) or a value that is not
  // UTF-8; NotFound for an unknown module; LimitExceeded naming max_env_value_bytes for the
  // value, or max_env_vars when adding a key to a module that has that many.
  Status SetEnv(ModuleKind kind, std::string_view name, std::string_view key,
                std::string_view value);

  // Deletes environment variable `key` of module `name`.
  // Errors: InvalidArgument for the kind, name or key; NotFound when the key is not set.
  Status DeleteEnv(ModuleKind kind, std::string_view name, std::string_view key);

  // The environment variables of module `name` (key -> value).
  // Errors: InvalidArgument for the kind or name; NotFound for an unknown module.
  Result<std::map<std::string, std::string>> Env(ModuleKind kind, std::string_view name);

  // The live key of `scope`, created (random id and key) when the scope has none. At most
  // one key per scope is live at any time.
  // Errors: InvalidArgument for the scope (ValidateKeyScope); Unavailable when RAND_bytes fails.
  Result<CryptoKey> GetOrCreateKey(std::string_view scope);

  // The key with id `key_id`; nullopt (OK) when it was shredded.
  // Errors: InvalidArgument when `key_id` is not kKeyIdLength lowercase hex characters;
  // NotFound when no key ever had this id.
  Result<std::optional<CryptoKey>> FindKey(std::string_view key_id);

  // Crypto-shreds `scope`: every live key of it gets key = NULL and deleted_at = now (ms).
  // With secure_delete the key bytes are zeroed in the database page, and the WAL is then
  // checkpointed and truncated (best effort: a concurrent reader can keep old WAL frames until
  // the next checkpoint). A later GetOrCreateKey makes a new, different key.
  // Errors: InvalidArgument for the scope; NotFound when the scope has no live key.
  Status ShredScope(std::string_view scope);

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

 private:
  ModuleStore(std::filesystem::path data_dir, ModuleStoreOptions options, sqlite3* db)
      : data_dir_(std::move(data_dir)), options_(options), db_(db) {}

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
  std::filesystem::path ArtifactPath(std::string_view sha256, std::string_view suffix) const;

  // Constant after construction.
  const std::filesystem::path data_dir_;
  const ModuleStoreOptions options_;

  // Protected by mu_: the connection and every statement run on it.
  Mutex mu_;
  sqlite3* db_ GUARDED_BY(mu_);
};

}  // namespace reef::store
