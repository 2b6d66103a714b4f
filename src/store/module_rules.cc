// What both module store backends check and say the same way (detail/module_rules.h).
#include "store/detail/module_rules.h"

#include <fmt/format.h>
#include <openssl/rand.h>

#include <algorithm>
#include <utility>

#include "core/ids.h"
#include "core/utf8.h"
#include "store/semver.h"

namespace reef::store::detail {

std::string Label(ModuleKind kind, std::string_view name) {
  return fmt::format("{}/{}", ModuleKindPlural(kind), name);
}

Status NoSuchModule(ModuleKind kind, std::string_view name) {
  return Status::NotFound(fmt::format("no {} module named '{}'", ModuleKindPlural(kind), name));
}

Status NoSuchVersion(ModuleKind kind, std::string_view name, std::string_view version) {
  return Status::NotFound(
      fmt::format("{} has no version {} (upload it first)", Label(kind, name), version));
}

Status VersionIsActive(ModuleKind kind, std::string_view name, std::string_view version) {
  return Status::FailedPrecondition(fmt::format(
      "{} version {} is active: activate another version or deactivate the module first",
      Label(kind, name), version));
}

Status ModuleIsActive(ModuleKind kind, std::string_view name, std::string_view version) {
  return Status::FailedPrecondition(
      fmt::format("{} is active (version {}): deactivate it first", Label(kind, name), version));
}

Status NoActiveVersion(ModuleKind kind, std::string_view name) {
  return Status::NotFound(fmt::format("{} has no active version", Label(kind, name)));
}

Status NoSuchEnv(ModuleKind kind, std::string_view name, std::string_view key) {
  return Status::NotFound(
      fmt::format("{} has no environment variable '{}'", Label(kind, name), key));
}

Status OtherBytes(ModuleKind kind, std::string_view name, std::string_view version,
                  std::string_view stored_sha256) {
  return Status::AlreadyExists(
      fmt::format("{} version {} already exists with other bytes (sha256 {}...); versions are "
                  "immutable: upload a new version",
                  Label(kind, name), version, stored_sha256.substr(0, 12)));
}

Status TooManyEnvVars(ModuleKind kind, std::string_view name, int64_t count, uint32_t limit) {
  return Status::LimitExceeded(
      fmt::format("{} already has {} environment variables: max_env_vars is {}", Label(kind, name),
                  count, limit));
}

Status ValidateVersion(std::string_view version) {
  if (version.size() > kMaxVersionBytes) {
    return Status::LimitExceeded(fmt::format("version of {} bytes: the limit is {} bytes",
                                             version.size(), kMaxVersionBytes));
  }
  return ParseSemVer(version).status();
}

Status ValidateModule(ModuleKind kind, std::string_view name) {
  REEF_RETURN_IF_ERROR(ValidateModuleKind(kind));
  return ValidateModuleName(name);
}

Status ValidateUpload(ModuleKind kind, std::string_view name, std::string_view version,
                      std::span<const uint8_t> wasm, const ModuleStoreOptions& options) {
  REEF_RETURN_IF_ERROR(ValidateModule(kind, name));
  REEF_RETURN_IF_ERROR(ValidateVersion(version));
  if (wasm.empty()) {
    return Status::InvalidArgument(
        fmt::format("{} version {}: the module is empty (0 bytes)", Label(kind, name), version));
  }
  if (wasm.size() > options.max_module_bytes) {
    return Status::LimitExceeded(
        fmt::format("module of {} bytes exceeds max_module_bytes ({} bytes)", wasm.size(),
                    options.max_module_bytes));
  }
  return Status::Ok();
}

Status ValidateEnv(std::string_view key, std::string_view value,
                   const ModuleStoreOptions& options) {
  REEF_RETURN_IF_ERROR(ValidateEnvKey(key));
  if (value.size() > options.max_env_value_bytes) {
    return Status::LimitExceeded(
        fmt::format("environment value of {} bytes exceeds max_env_value_bytes ({} bytes)",
                    value.size(), options.max_env_value_bytes));
  }
  if (auto bad = FindInvalidUtf8(value)) {
    return Status::InvalidArgument(
        fmt::format("environment value of {} is not UTF-8 (ill-formed at byte {})", key, *bad));
  }
  return Status::Ok();
}

Status ValidateKeyId(std::string_view key_id) {
  bool lower_hex =
      key_id.size() == kKeyIdLength && std::all_of(key_id.begin(), key_id.end(), [](char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
      });
  if (lower_hex) return Status::Ok();
  return Status::InvalidArgument(
      fmt::format("crypto key id of {} bytes: it must be {} lowercase hex characters",
                  key_id.size(), kKeyIdLength));
}

Result<std::vector<ModuleInfo>> SortedModules(std::map<std::string, ModuleInfo> by_name) {
  std::vector<ModuleInfo> list;
  list.reserve(by_name.size());
  for (auto& [module, info] : by_name) {
    std::vector<std::pair<SemVer, ModuleVersion>> sorted;
    for (ModuleVersion& version : info.versions) {
      auto parsed = ParseSemVer(version.version);
      if (!parsed.ok()) {
        return Status::DataLoss(
            fmt::format("module store: {} has a stored version that is not SemVer: {}",
                        Label(info.kind, module), parsed.status().message()));
      }
      sorted.emplace_back(std::move(*parsed), std::move(version));
    }
    std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
      int c = CompareSemVer(a.first, b.first);
      return c != 0 ? c < 0 : a.second.version < b.second.version;
    });
    info.versions.clear();
    for (auto& entry : sorted) info.versions.push_back(std::move(entry.second));
    list.push_back(std::move(info));
  }
  return list;
}

Status CheckIntegrity(ModuleKind kind, std::string_view name, std::string_view version,
                      std::span<const uint8_t> bytes, std::string_view stored_sha256) {
  std::string actual = Sha256Hex(bytes);
  if (actual == stored_sha256) return Status::Ok();
  return Status::DataLoss(fmt::format(
      "{} version {}: the stored bytes hash to sha256 {} but were uploaded as sha256 {}: the "
      "module store is corrupt; upload the module again under a new version",
      Label(kind, name), version, actual, stored_sha256));
}

Result<CryptoKey> KeyFromRow(std::string id, std::string scope, std::span<const uint8_t> key) {
  CryptoKey crypto_key{std::move(id), std::move(scope), {}};
  if (key.size() != crypto_key.key.size()) {
    return Status::DataLoss(fmt::format("module store: crypto key {} has {} bytes instead of {}",
                                        crypto_key.id, key.size(), crypto_key.key.size()));
  }
  std::copy(key.begin(), key.end(), crypto_key.key.begin());
  return crypto_key;
}

Result<CryptoKey> NewCryptoKey(std::string_view scope) {
  std::array<uint8_t, kKeyIdLength / 2> id{};
  CryptoKey key{"", std::string(scope), {}};
  if (RAND_bytes(id.data(), static_cast<int>(id.size())) != 1 ||
      RAND_bytes(key.key.data(), static_cast<int>(key.key.size())) != 1) {
    return Status::Unavailable("module store: OpenSSL RAND_bytes failed (no entropy)");
  }
  key.id = HexLower(id);
  return key;
}

Status CreateCacheDir(const std::filesystem::path& data_dir) {
  std::error_code ec;
  std::filesystem::create_directories(data_dir / "cache", ec);
  if (ec) {
    return Status::Unavailable(fmt::format("module store: cannot create '{}': {}",
                                           (data_dir / "cache").string(), ec.message()));
  }
  return Status::Ok();
}

}  // namespace reef::store::detail
