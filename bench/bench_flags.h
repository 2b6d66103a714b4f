// Command-line flags shared by the whole-process benchmarks (storage_candidates, events_bench):
// `--dir DIR` (where the work directory goes) plus a table of count flags, one row each, from
// which --help is generated.
//
// Thread ownership: main thread, before the benchmark starts.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <string>
#include <string_view>

namespace reef::bench {

// One count flag: `--name N` sets `sizes.*count`; N must be at least `min`.
template <typename Sizes>
struct CountFlag {
  std::string_view name;
  int64_t Sizes::*count;
  int64_t min;
  std::string_view help;
};

// Parses argv into `sizes` and returns the parent directory for the work directory (--dir,
// else $TMPDIR, else /tmp). --help prints the flags and exits 0; a bad flag or value prints
// "PROGRAM: ..." to stderr and exits 2.
template <typename Sizes, size_t N>
std::string ParseFlags(int argc, char** argv, std::string_view program,
                       const CountFlag<Sizes> (&flags)[N], Sizes& sizes) {
  auto fail = [&](const std::string& message) {
    fmt::print(stderr, "{}: {} (--help)\n", program, message);
    std::exit(2);
  };
  std::string parent;
  if (const char* tmp = std::getenv("TMPDIR"); tmp != nullptr && *tmp != '\0') parent = tmp;
  if (parent.empty()) parent = "/tmp";
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      fmt::print("usage: {} [--dir DIR] [FLAG N]...\n", program);
      fmt::print("  {:<24} parent of the fresh work directory (default $TMPDIR or /tmp)\n",
                 "--dir DIR");
      for (const auto& f : flags) {
        fmt::print("  {:<24} {} (default {})\n", fmt::format("{} N", f.name), f.help,
                   Sizes{}.*f.count);
      }
      std::exit(0);
    }
    if (i + 1 >= argc) fail(fmt::format("{} needs a value", arg));
    const std::string value = argv[++i];
    if (arg == "--dir") {
      parent = value;
      continue;
    }
    const auto* flag = std::find_if(std::begin(flags), std::end(flags),
                                    [&](const auto& f) { return f.name == arg; });
    if (flag == std::end(flags)) fail(fmt::format("unknown flag {}", arg));
    char* end = nullptr;
    const long long n = std::strtoll(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0' || n < flag->min) {
      fail(fmt::format("{} wants a count >= {}, got '{}'", arg, flag->min, value));
    }
    sizes.*flag->count = n;
  }
  return parent;
}

}  // namespace reef::bench
