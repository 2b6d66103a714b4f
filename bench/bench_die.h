// Ending a benchmark on an error: a benchmark that cannot measure what it says has no figure
// to give. Die prints "<program>: <message>" to stderr (after flushing what stdout holds) and
// exits 1; Check dies with `what` and the status when a Status or Result failed.
//
// Thread ownership: any thread (it ends the process).
#pragma once

#include <errno.h>  // program_invocation_short_name (glibc)
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <utility>

#include "core/status.h"

namespace reef::bench {

template <typename... Args>
[[noreturn]] void Die(fmt::format_string<Args...> format, Args&&... args) {
  std::fflush(stdout);
  fmt::print(stderr, "{}: {}\n", program_invocation_short_name,
             fmt::format(format, std::forward<Args>(args)...));
  std::_Exit(1);
}

template <typename T>
T Check(reef::Result<T> result, std::string_view what) {
  if (!result.ok()) Die("{}: {}", what, result.status().ToString());
  return std::move(result).value();
}

inline void Check(const reef::Status& status, std::string_view what) {
  if (!status.ok()) Die("{}: {}", what, status.ToString());
}

}  // namespace reef::bench
