// What apps_bench's two parts share (bench/apps_bench.cc, bench/apps_catchup.cc): ending the
// run on an error, CPU and wall-clock arithmetic, and reading a guest module.
#pragma once

#include <fmt/format.h>
#include <time.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bench_die.h"
#include "core/status.h"

namespace reef::bench::apps {

using Clock = std::chrono::steady_clock;

using reef::bench::Check;
using reef::bench::Die;

inline double ProcessCpuSeconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}
inline double Micros(Clock::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}
inline double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}
inline double PerSecond(double n, double seconds) {
  return seconds > 0 ? n / seconds : 0;
}

inline std::vector<uint8_t> GuestBytes(std::string_view name) {
  const std::string path = fmt::format("{}/{}.wasm", REEF_GUEST_DIR, name);
  std::ifstream in(path, std::ios::binary);
  if (!in) Die("missing guest module {} (build the guests first)", path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace reef::bench::apps
