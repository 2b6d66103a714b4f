#include "core/files.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace reef {

std::string ErrnoText(std::string_view what, const std::filesystem::path& path) {
  return fmt::format("{} {}: {}", what, path.string(), std::strerror(errno));
}

Status SyncDirectory(const std::filesystem::path& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Status::Unavailable(ErrnoText("cannot open directory", dir));
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return Status::Unavailable(ErrnoText("cannot sync directory", dir));
  return Status::Ok();
}

Status CreatePrivateDirectory(const std::filesystem::path& dir, std::string_view what) {
  std::error_code ec;
  if (std::filesystem::exists(dir, ec)) return Status::Ok();
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return Status::Unavailable(
        fmt::format("{}: cannot create {}: {}", what, dir.string(), ec.message()));
  }
  ::chmod(dir.c_str(), 0700);
  return Status::Ok();
}

Status WriteFully(int fd, std::string_view bytes, const std::filesystem::path& path,
                  std::string_view what) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      return Status::Unavailable(fmt::format("{}: {}", what, ErrnoText("cannot write", path)));
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

Result<int> LockExclusively(const std::filesystem::path& path, std::string_view what) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return Status::Unavailable(ErrnoText("cannot open", path));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return Status::Unavailable(
        fmt::format("{} is in use by another process (lock {})", what, path.string()));
  }
  return fd;
}

}  // namespace reef
