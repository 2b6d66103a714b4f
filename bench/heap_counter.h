// HeapAllocations: how many times this process has called operator new (every form: plain,
// array, aligned, nothrow) since it started, for benchmarks that report heap allocations per
// request. Counts C++ allocations only: what C libraries (SQLite, OpenSSL) malloc directly is
// not in it. Linking bench/heap_counter.cc into a program replaces the global operator new and
// delete with counting wrappers around malloc and free.
//
// Thread ownership: any thread; a relaxed counter (a snapshot).
#pragma once

#include <cstdint>

namespace reef::bench {

uint64_t HeapAllocations();

}  // namespace reef::bench
