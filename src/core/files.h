// Small POSIX file helpers shared by Reef's on-disk stores (the event store's segments, the
// image journal).
//
// Thread ownership: none; any thread. They read errno right after the failing call.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "core/status.h"

namespace reef {

// "<what> <path>: <strerror(errno)>", for the error of a call that just failed.
std::string ErrnoText(std::string_view what, const std::filesystem::path& path);

// fsync of directory `dir`, so a file created or renamed in it survives a crash. Errors:
// Unavailable "cannot open directory ..." / "cannot sync directory ...".
Status SyncDirectory(const std::filesystem::path& dir);

// Creates `dir` (and its parents) when missing, mode 0700. Errors: Unavailable
// "<what>: cannot create <dir>: <reason>".
Status CreatePrivateDirectory(const std::filesystem::path& dir, std::string_view what);

// Writes all of `bytes` to `fd` at its offset (retrying short writes and EINTR).
// Errors: Unavailable "<what>: cannot write <path>: <strerror>".
Status WriteFully(int fd, std::string_view bytes, const std::filesystem::path& path,
                  std::string_view what);

// Opens (creating it 0600) and flock()s `path` exclusively, so one process at a time uses the
// store it guards; the lock lasts until the returned descriptor is closed (or the process
// ends). Errors: Unavailable "<what> is in use by another process (lock <path>)", or naming
// the failed call.
Result<int> LockExclusively(const std::filesystem::path& path, std::string_view what);

}  // namespace reef
