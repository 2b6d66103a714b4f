#include "core/files.h"

#include <fcntl.h>
#include <fmt/format.h>
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

}  // namespace reef
