/* Benchmark kernels (see kernels.h). Built to wasm32 by reef_add_guest(bench_kernels) and
 * natively into bench_native; keep them free of libc so both builds see the same code. */
#include "kernels.h"

/* The wasm build exports each kernel by name; the native build keeps each one a real call
 * (noinline), so the driver measures the kernel and not the call site's constant folding. */
#if defined(__wasm__)
#define KERNEL(name) __attribute__((export_name(#name)))
#else
#define KERNEL(name) __attribute__((noinline))
#endif

KERNEL(fib) int32_t fib(int32_t n) {
  return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

KERNEL(loop) int64_t loop(int32_t n) {
  uint64_t x = 0x9E3779B97F4A7C15ull;
  uint64_t acc = 0;
  for (int32_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    acc += x;
  }
  return (int64_t)acc;
}

enum { kMemWords = 16384 };
static uint32_t mem_buffer[kMemWords];

KERNEL(mem) int64_t mem(int32_t n) {
  uint32_t x = 0x9E3779B9u;
  for (int32_t i = 0; i < kMemWords; ++i) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    mem_buffer[i] = x;
  }
  uint64_t sum = 0;
  for (int32_t pass = 0; pass < n; ++pass) {
    for (int32_t i = 1; i < kMemWords; ++i) {
      const uint32_t v = mem_buffer[i] + mem_buffer[mem_buffer[i - 1] & (kMemWords - 1)];
      mem_buffer[i] = v;
      sum += v;
    }
  }
  return (int64_t)sum;
}

KERNEL(nop) int32_t nop(int32_t n) {
  return n + 1;
}
