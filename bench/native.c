/* bench_native: the native-limit column of `make bench` (see docs/benchmarks.md).
 *
 * Runs the same kernels as the wasm guest (kernels/kernels.c, compiled natively with -O2 into
 * this executable as a separate translation unit, every kernel noinline). Sizes come from argv,
 * so nothing can be folded at compile time. Call overhead is nop(i) through a volatile function
 * pointer, so every call is a real indirect call.
 *
 * Every measurement runs once untimed (warm-up and calibration); then each of REPEATS samples
 * repeats it back to back for at least kMinSampleMs and reports the time of one run.
 *
 * Usage: bench_native FIB_N LOOP_N MEM_N CALLS REPEATS
 * Prints lines in the same format as reef_bench (parsed by scripts/bench.sh). */
#define _POSIX_C_SOURCE 199309L /* clock_gettime */

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kernels/kernels.h"

enum { kMaxRepeats = 100 };
static const double kMinSampleMs = 100;

/* Sizes, read from argv (so the compiler cannot know them). */
static int32_t fib_n, loop_n, mem_n, calls;
static int32_t (*volatile call_nop)(int32_t) = nop;

static double NowMs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int CompareDoubles(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static int64_t RunFib(void) {
  return fib(fib_n);
}
static int64_t RunLoop(void) {
  return loop(loop_n);
}
static int64_t RunMem(void) {
  return mem(mem_n);
}
static int64_t RunNops(void) {
  int64_t sum = 0;
  for (int32_t i = 0; i < calls; ++i) sum += call_nop(i);
  return sum;
}

/* Runs `once` untimed, then `repeats` samples; prints the median of (ms per run * scale). */
static void Measure(const char* kernel, long n, const char* unit, double scale, int repeats,
                    int64_t (*once)(void)) {
  double runs[kMaxRepeats], sorted[kMaxRepeats];
  double start = NowMs();
  int64_t result = once();
  double reps_wanted = ceil(kMinSampleMs / (NowMs() - start));
  long reps = reps_wanted < 1 ? 1 : reps_wanted > 1e6 ? 1000000 : (long)reps_wanted;
  for (int r = 0; r < repeats; ++r) {
    start = NowMs();
    for (long i = 0; i < reps; ++i) {
      if (once() != result) {
        fprintf(stderr, "bench_native: %s result changed between runs\n", kernel);
        exit(1);
      }
    }
    runs[r] = (NowMs() - start) / (double)reps * scale;
    sorted[r] = runs[r];
  }
  qsort(sorted, (size_t)repeats, sizeof sorted[0], CompareDoubles);
  printf("bench engine=native kernel=%s mode=call n=%ld result=%" PRId64
         " unit=%s median=%.3f runs=",
         kernel, n, result, unit, sorted[repeats / 2]);
  for (int r = 0; r < repeats; ++r) printf(r ? ",%.3f" : "%.3f", runs[r]);
  printf(" reps=%ld\n", reps);
  fflush(stdout);
}

static int32_t ParseArg(const char* text, const char* what) {
  char* end = NULL;
  long v = strtol(text, &end, 10);
  if (*end != '\0' || v < 1 || v > INT32_MAX) {
    fprintf(stderr, "bench_native: bad %s: %s\n", what, text);
    exit(1);
  }
  return (int32_t)v;
}

int main(int argc, char** argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: bench_native FIB_N LOOP_N MEM_N CALLS REPEATS\n");
    return 1;
  }
  fib_n = ParseArg(argv[1], "FIB_N");
  loop_n = ParseArg(argv[2], "LOOP_N");
  mem_n = ParseArg(argv[3], "MEM_N");
  calls = ParseArg(argv[4], "CALLS");
  const int repeats = ParseArg(argv[5], "REPEATS");
  if (repeats > kMaxRepeats) {
    fprintf(stderr, "bench_native: REPEATS above %d\n", kMaxRepeats);
    return 1;
  }
  Measure("fib", fib_n, "ms", 1, repeats, RunFib);
  Measure("loop", loop_n, "ms", 1, repeats, RunLoop);
  Measure("mem", mem_n, "ms", 1, repeats, RunMem);
  Measure("nop", calls, "ns", 1e6 / calls, repeats, RunNops);
  return 0;
}
