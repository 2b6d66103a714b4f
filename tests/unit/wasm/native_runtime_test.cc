// Reef's runtime for native code (rt/runtime.h, rt/wasm-rt.h), without generated code.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "wasm/native/rt/runtime.h"
#include "wasm/native/rt/wasm-rt.h"

namespace reef::wasm::native::rt {
namespace {

TEST(NativeRuntime, FuncTypeIdsAreStableAcrossThreads) {
  // Given two threads registering the same signatures in opposite orders
  std::vector<uint32_t> a(64), b(64);
  std::thread ta([&] {
    for (uint32_t i = 0; i < 64; ++i) {
      a[i] = wasm_rt_register_func_type(1, 1, WASM_RT_I32, static_cast<wasm_rt_type_t>(i % 4));
    }
  });
  std::thread tb([&] {
    for (uint32_t i = 64; i-- > 0;) {
      b[i] = wasm_rt_register_func_type(1, 1, WASM_RT_I32, static_cast<wasm_rt_type_t>(i % 4));
    }
  });
  ta.join();
  tb.join();

  // Then equal signatures got equal ids, different ones different ids
  EXPECT_EQ(a, b);
  EXPECT_NE(a[0], a[1]);
  EXPECT_EQ(a[0], a[4]);
  EXPECT_NE(a[0], 0u);
  EXPECT_NE(wasm_rt_register_func_type(0, 0), a[0]);
}

TEST(NativeRuntime, TrapUnwindsToTheInnermostRunAndRestoresTheOuterState) {
  struct Nest {
    RunOutcome inner;
    ThreadState seen_after_inner;
  } nest;
  const ThreadState before = ExchangeThreadState({});
  ExchangeThreadState(before);

  RunOutcome outer = RunGuarded(
      [](void* p) {
        auto* n = static_cast<Nest*>(p);
        const ThreadState mine = ExchangeThreadState({});
        ExchangeThreadState(mine);
        n->inner = RunGuarded([](void*) { wasm_rt_trap(WASM_RT_TRAP_DIV_BY_ZERO); }, nullptr, 10);
        n->seen_after_inner = ExchangeThreadState(mine);
        reef_rt_trap_host(1 + static_cast<uint32_t>(TrapKind::kHostError));
      },
      &nest, 100);

  EXPECT_EQ(nest.inner.kind(), TrapKind::kIntegerDivideByZero);
  EXPECT_EQ(nest.inner.message(), "integer divide by zero");
  EXPECT_EQ(nest.seen_after_inner.call_stack_depth, WASM_RT_MAX_CALL_STACK_DEPTH - 100);
  EXPECT_EQ(outer.kind(), TrapKind::kHostError);
  const ThreadState after = ExchangeThreadState(before);
  EXPECT_EQ(after.unwind_target, before.unwind_target);
  EXPECT_EQ(after.call_stack_depth, before.call_stack_depth);
}

TEST(NativeRuntime, MemoryGrowsZeroedUpToItsMaximumThenFails) {
  AllocationLimits limits;
  limits.max_memory_pages = 3;
  struct Grow {
    wasm_rt_memory_t memory;
    uint32_t results[4];
  } g{};

  RunOutcome run = RunGuarded(
      [](void* p) {
        auto* grow = static_cast<Grow*>(p);
        wasm_rt_allocate_memory(&grow->memory, 1, 10);  // declared 10, host allows 3
        grow->memory.data[0] = 7;
        grow->results[0] = wasm_rt_grow_memory(&grow->memory, 1);
        grow->results[1] = wasm_rt_grow_memory(&grow->memory, 2);
        grow->results[2] = wasm_rt_grow_memory(&grow->memory, 1);
        grow->results[3] = wasm_rt_grow_memory(&grow->memory, 0);
      },
      &g, 10, &limits);

  ASSERT_FALSE(run.trapped());
  EXPECT_EQ(g.memory.max_pages, 3u);
  EXPECT_EQ(g.results[0], 1u);
  EXPECT_EQ(g.results[1], UINT32_MAX);
  EXPECT_EQ(g.results[2], 2u);
  EXPECT_EQ(g.results[3], 3u);
  EXPECT_EQ(g.memory.size, 3u * 65'536);
  EXPECT_EQ(g.memory.data[0], 7);
  EXPECT_EQ(g.memory.data[2 * 65'536 + 100], 0);
  wasm_rt_free_memory(&g.memory);
}

TEST(NativeRuntime, TableGrowObeysTheHostLimit) {
  AllocationLimits limits;
  limits.max_table_elements = 5;
  struct Grow {
    wasm_rt_funcref_table_t table;
    uint32_t results[2];
  } g{};

  RunOutcome run = RunGuarded(
      [](void* p) {
        auto* grow = static_cast<Grow*>(p);
        wasm_rt_allocate_funcref_table(&grow->table, 2, UINT32_MAX);
        grow->results[0] = wasm_rt_grow_funcref_table(&grow->table, 3, wasm_rt_funcref_null_value);
        grow->results[1] = wasm_rt_grow_funcref_table(&grow->table, 1, wasm_rt_funcref_null_value);
      },
      &g, 10, &limits);

  ASSERT_FALSE(run.trapped());
  EXPECT_EQ(g.results[0], 2u);
  EXPECT_EQ(g.results[1], UINT32_MAX);
  EXPECT_EQ(g.table.size, 5u);
  wasm_rt_free_funcref_table(&g.table);
}

TEST(NativeRuntime, InitialMemoryAboveTheHostLimitTraps) {
  AllocationLimits limits;
  limits.max_memory_pages = 1;
  wasm_rt_memory_t memory{};

  RunOutcome run =
      RunGuarded([](void* p) { wasm_rt_allocate_memory(static_cast<wasm_rt_memory_t*>(p), 2, 2); },
                 &memory, 10, &limits);

  EXPECT_TRUE(run.trapped());
  EXPECT_EQ(memory.data, nullptr);
}

}  // namespace
}  // namespace reef::wasm::native::rt
