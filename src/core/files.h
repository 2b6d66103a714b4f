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

}  // namespace reef
