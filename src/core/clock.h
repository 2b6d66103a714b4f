// The wall clock as Reef records it: milliseconds since the Unix epoch.
//
// Thread ownership: a pure function of the system clock; any thread.
#pragma once

#include <chrono>
#include <cstdint>

namespace reef {

// Milliseconds since 1970-01-01T00:00:00Z by the system clock (it may step backwards when
// the clock is set; callers that need a monotonic order use steady_clock instead).
inline int64_t UnixNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace reef
