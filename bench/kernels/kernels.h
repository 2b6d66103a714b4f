/* Benchmark kernels, compiled twice from kernels.c: to wasm32 (the guest that Reef and V8 both
 * run) and natively with the host C compiler (the native limit). Freestanding C, no libc.
 *
 * Thread ownership: pure functions; any thread. */
#ifndef REEF_BENCH_KERNELS_H_
#define REEF_BENCH_KERNELS_H_

#include <stdint.h>

/* Naive doubly recursive Fibonacci: fib(0) = 0, fib(1) = 1. REQUIRES: 0 <= n <= 46. */
int32_t fib(int32_t n);
/* `n` rounds of xorshift64 summed into a 64-bit accumulator (wrapping): a tight, dependent
 * integer loop the compiler cannot fold or vectorise. */
int64_t loop(int32_t n);
/* Memory traffic: fills a 16,384-word (64 KiB) buffer with xorshift32 values, then makes `n`
 * passes over it, each word becoming itself plus a word chosen by its neighbour's value (a
 * data-dependent load the compiler cannot vectorise); returns the sum of every word written
 * (wrapping). In wasm every access is a bounds-checked load or store of linear memory. */
int64_t mem(int32_t n);
/* Returns n + 1: the trivial export used to measure call overhead. */
int32_t nop(int32_t n);

#endif /* REEF_BENCH_KERNELS_H_ */
