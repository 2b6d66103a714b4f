// The fuzz targets' assertion. A failed check prints the condition and its file:line to stderr
// (the fuzz build has no symbolizer, so a bare trap's stack says little), then traps so that
// libFuzzer writes the input that failed to its artifact directory.
#pragma once

#include <cstdio>

#define FUZZ_CHECK(condition)                                                                   \
  do {                                                                                          \
    if (!(condition)) {                                                                         \
      std::fprintf(stderr, "fuzz check failed at %s:%d: %s\n", __FILE__, __LINE__, #condition); \
      __builtin_trap();                                                                         \
    }                                                                                           \
  } while (0)
