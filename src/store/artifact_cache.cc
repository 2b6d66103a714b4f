// ModuleStore's artifact cache: files `data_dir`/cache/<sha256>.<suffix> (spec 000, "Compile
// cache": compiled modules keyed by the SHA-256 of their WASM bytes).
#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <system_error>

#include "core/ids.h"
#include "store/module_store.h"

namespace reef::store {
namespace {

// Longest artifact suffix, in bytes.
constexpr std::size_t kMaxSuffixBytes = 16;
// The suffix of the artifact that is the module's own bytes.
constexpr std::string_view kModuleSuffix = "wasm";

Status ValidateArtifactName(std::string_view sha256, std::string_view suffix) {
  auto lower_hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); };
  if (sha256.size() != 64 || !std::all_of(sha256.begin(), sha256.end(), lower_hex)) {
    return Status::InvalidArgument(
        fmt::format("artifact key of {} bytes: it must be a SHA-256 of 64 lowercase hex characters",
                    sha256.size()));
  }
  auto lower_or_digit = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (suffix.empty() || suffix.size() > kMaxSuffixBytes ||
      !std::all_of(suffix.begin(), suffix.end(), lower_or_digit)) {
    return Status::InvalidArgument(
        fmt::format("artifact suffix '{}' must be 1 to {} characters of a-z and 0-9",
                    suffix.substr(0, 32), kMaxSuffixBytes));
  }
  return Status::Ok();
}

// Unavailable "artifact cache: <what> '<path>': <errno text>" for the current errno.
Status FileError(std::string_view what, const std::string& path) {
  return Status::Unavailable(fmt::format("artifact cache: {} '{}': {}", what, path,
                                         std::generic_category().message(errno)));
}

// Writes all of `bytes` to `fd`, retrying short writes and EINTR.
bool WriteAll(int fd, std::span<const uint8_t> bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes = bytes.subspan(static_cast<std::size_t>(n));
  }
  return true;
}

}  // namespace

std::filesystem::path ModuleStore::ArtifactPath(std::string_view sha256,
                                                std::string_view suffix) const {
  return data_dir_ / "cache" / fmt::format("{}.{}", sha256, suffix);
}

Status ModuleStore::PutArtifact(std::string_view sha256, std::string_view suffix,
                                std::span<const uint8_t> bytes) {
  REEF_RETURN_IF_ERROR(ValidateArtifactName(sha256, suffix));
  std::string path = ArtifactPath(sha256, suffix).string();
  std::string temp = path + ".tmp-XXXXXX";
  int fd = ::mkstemp(temp.data());
  if (fd < 0) return FileError("cannot create", temp);
  bool written = WriteAll(fd, bytes) && ::fsync(fd) == 0;
  Status status = written ? Status::Ok() : FileError("cannot write", temp);
  if (::close(fd) != 0 && status.ok()) status = FileError("cannot close", temp);
  if (status.ok() && ::rename(temp.c_str(), path.c_str()) != 0) {
    status = FileError("cannot rename into", path);
  }
  if (!status.ok()) {
    ::unlink(temp.c_str());
    return status;
  }
  // The rename is durable once the directory entry is.
  std::string dir = (data_dir_ / "cache").string();
  int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return FileError("cannot open", dir);
  if (::fsync(dir_fd) != 0) status = FileError("cannot sync", dir);
  ::close(dir_fd);
  return status;
}

Result<std::optional<std::vector<uint8_t>>> ModuleStore::GetArtifact(std::string_view sha256,
                                                                     std::string_view suffix) {
  REEF_RETURN_IF_ERROR(ValidateArtifactName(sha256, suffix));
  std::string path = ArtifactPath(sha256, suffix).string();
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) return std::optional<std::vector<uint8_t>>();
  if (fd < 0) return FileError("cannot open", path);
  struct stat info {};
  std::vector<uint8_t> bytes;
  if (::fstat(fd, &info) == 0 && info.st_size > 0) {
    bytes.reserve(static_cast<std::size_t>(info.st_size));
  }
  uint8_t buffer[64 * 1024];
  while (true) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      Status status = FileError("cannot read", path);
      ::close(fd);
      return status;
    }
    if (n == 0) break;
    bytes.insert(bytes.end(), buffer, buffer + n);
  }
  ::close(fd);
  // The `wasm` artifact is the module itself, named by its own SHA-256: verify before anyone
  // parses it. A file that does not match (truncated, corrupted, replaced) is removed and
  // reported absent, so the caller rebuilds it from the module store.
  if (suffix == kModuleSuffix && Sha256Hex(bytes) != sha256) {
    spdlog::warn(
        "artifact cache: '{}' does not hash to its name; removed, to be rebuilt from "
        "the module store",
        path);
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) return FileError("cannot remove", path);
    return std::optional<std::vector<uint8_t>>();
  }
  return std::optional<std::vector<uint8_t>>(std::move(bytes));
}

}  // namespace reef::store
