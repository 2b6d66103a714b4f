// Internal to src/store: what both module store backends (embedded SQLite, PostgreSQL) check
// and say the same way: validation, the errors' wording, version order, integrity, keys.
//
// Thread ownership: plain functions; any thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "store/module_store.h"

namespace reef::store::detail {

// "commands/foo": how messages name a module (its URL path).
std::string Label(ModuleKind kind, std::string_view name);
Status NoSuchModule(ModuleKind kind, std::string_view name);
Status NoSuchVersion(ModuleKind kind, std::string_view name, std::string_view version);
Status VersionIsActive(ModuleKind kind, std::string_view name, std::string_view version);
Status ModuleIsActive(ModuleKind kind, std::string_view name, std::string_view version);
Status NoActiveVersion(ModuleKind kind, std::string_view name);
Status NoSuchEnv(ModuleKind kind, std::string_view name, std::string_view key);
Status OtherBytes(ModuleKind kind, std::string_view name, std::string_view version,
                  std::string_view stored_sha256);
Status TooManyEnvVars(ModuleKind kind, std::string_view name, int64_t count, uint32_t limit);

// LimitExceeded past kMaxVersionBytes, else ParseSemVer's verdict.
Status ValidateVersion(std::string_view version);
Status ValidateModule(ModuleKind kind, std::string_view name);
// Upload's checks before any database work (kind, name, version, size).
Status ValidateUpload(ModuleKind kind, std::string_view name, std::string_view version,
                      std::span<const uint8_t> wasm, const ModuleStoreOptions& options);
// SetEnv's checks of the key and value.
Status ValidateEnv(std::string_view key, std::string_view value, const ModuleStoreOptions& options);
// InvalidArgument unless `key_id` is kKeyIdLength lowercase hex characters.
Status ValidateKeyId(std::string_view key_id);

// The modules of `by_name`, each with its versions in ascending SemVer precedence (equal
// precedence: bytewise), in name order. Errors: DataLoss for a stored version that is not
// SemVer.
Result<std::vector<ModuleInfo>> SortedModules(std::map<std::string, ModuleInfo> by_name);

// DataLoss unless `bytes` hash to `stored_sha256`.
Status CheckIntegrity(ModuleKind kind, std::string_view name, std::string_view version,
                      std::span<const uint8_t> bytes, std::string_view stored_sha256);

// A stored key row as a CryptoKey. Errors: DataLoss when `key` is not 32 bytes.
Result<CryptoKey> KeyFromRow(std::string id, std::string scope, std::span<const uint8_t> key);
// A fresh key for `scope`: random id and bytes. Errors: Unavailable without randomness.
Result<CryptoKey> NewCryptoKey(std::string_view scope);

// Creates `data_dir`/cache (the artifact cache) when missing. Errors: Unavailable.
Status CreateCacheDir(const std::filesystem::path& data_dir);

}  // namespace reef::store::detail
