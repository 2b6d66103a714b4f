// Engine behaviour: loading, limits, resumable invocations, host calls and traps.
#include "wasm/engine.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/ids.h"
#include "unit/wasm/tier_param.h"

namespace reef::wasm {
namespace {

std::shared_ptr<const Module> Wat(const std::string& text) {
  auto module = Module::FromText(text, "test.wat");
  EXPECT_TRUE(module.ok()) << module.status().ToString();
  return module.ok() ? *module : nullptr;
}

// A registry with a suspending `test.recv () -> i32` and a completing
// `test.add (i32, i32) -> i32`, plus `test.boom ()` which traps.
HostRegistry TestRegistry() {
  HostRegistry registry("test", 1);
  EXPECT_TRUE(registry
                  .Add({"test",
                        "recv",
                        {{}, {ValType::kI32}},
                        [](HostCall&) { return HostCallOutcome::kSuspend; },
                        "waits"})
                  .ok());
  EXPECT_TRUE(registry
                  .Add({"test",
                        "add",
                        {{ValType::kI32, ValType::kI32}, {ValType::kI32}},
                        [](HostCall& call) {
                          call.results()[0] = call.i32(0) + call.i32(1);
                          return HostCallOutcome::kComplete;
                        },
                        "adds"})
                  .ok());
  EXPECT_TRUE(
      registry
          .Add({"test",
                "boom",
                {{}, {}},
                [](HostCall& call) { return call.Fail(TrapKind::kHostError, "boom refused"); },
                "traps"})
          .ok());
  EXPECT_TRUE(registry
                  .Add({"test",
                        "peek",
                        {{ValType::kI32, ValType::kI32}, {ValType::kI32}},
                        [](HostCall& call) {
                          auto bytes = call.memory().Read(call.i32(0), call.i32(1));
                          if (!bytes.ok()) {
                            return call.Fail(TrapKind::kHostBounds, bytes.status().message());
                          }
                          call.results()[0] = bytes->empty() ? 0 : (*bytes)[0];
                          return HostCallOutcome::kComplete;
                        },
                        "reads one byte"})
                  .ok());
  return registry;
}

class EngineTest : public ::testing::TestWithParam<Tier> {
 protected:
  std::unique_ptr<Instance> Instantiate(const std::string& wat, EngineLimits limits = {}) {
    engine_ = std::make_unique<Engine>(registry_, limits, GetParam());
    auto instance = engine_->Instantiate(Wat(wat));
    EXPECT_TRUE(instance.ok()) << instance.status().ToString();
    return instance.ok() ? std::move(*instance) : nullptr;
  }

  Trap RunToTrap(Instance& instance, const std::string& name, std::vector<WasmValue> args = {}) {
    auto invocation = instance.Start(name, args);
    EXPECT_TRUE(invocation.ok()) << invocation.status().ToString();
    RunState state = RunState::kBudgetExhausted;
    while (state == RunState::kBudgetExhausted) state = (*invocation)->Run(1'000'000);
    EXPECT_EQ(state, RunState::kTrapped);
    return (*invocation)->trap();
  }

  HostRegistry registry_ = TestRegistry();
  std::unique_ptr<Engine> engine_;
};

// --- loading ------------------------------------------------------------------------------

TEST(ModuleTest, LoadsWatAndListsImportsExportsAndLimits) {
  auto module = Module::FromText(R"((module
    (import "test" "add" (func $add (param i32 i32) (result i32)))
    (memory (export "memory") 2 10)
    (table 3 funcref)
    (func (export "f") (param i64) (result f64) (f64.const 1)))
  )");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  const Module& m = **module;
  ASSERT_EQ(m.imports().size(), 1u);
  EXPECT_EQ(m.imports()[0].module + "." + m.imports()[0].name, "test.add");
  EXPECT_EQ(m.imports()[0].signature.ToString(), "(i32, i32) -> (i32)");
  ASSERT_NE(m.FindExport("f"), nullptr);
  EXPECT_EQ(m.FindExport("f")->signature.ToString(), "(i64) -> (f64)");
  ASSERT_EQ(m.memories().size(), 1u);
  EXPECT_EQ(m.memories()[0].initial, 2u);
  EXPECT_EQ(m.memories()[0].max, 10u);
  ASSERT_EQ(m.tables().size(), 1u);
  EXPECT_EQ(m.tables()[0].initial, 3u);
  EXPECT_FALSE(m.tables()[0].max.has_value());
}

TEST(ModuleTest, IdIsSha256OfTheBinary) {
  auto module = Module::FromText("(module)");
  ASSERT_TRUE(module.ok());
  EXPECT_EQ((*module)->id(), Sha256Hex((*module)->bytes()));
  auto again = Module::FromBinary((*module)->bytes());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)->id(), (*module)->id());
  EXPECT_EQ((*module)->id().size(), 64u);
}

TEST(ModuleTest, TextErrorNamesLineAndColumn) {
  auto module =
      Module::FromText("(module\n  (func (result i32)\n    (i32.add (i32.const 1))))", "bad.wat");
  ASSERT_FALSE(module.ok());
  EXPECT_EQ(module.status().code(), Code::kInvalidArgument);
  EXPECT_NE(module.status().message().find("bad.wat:3:"), std::string::npos)
      << module.status().message();
}

TEST(ModuleTest, BinaryErrorNamesOffset) {
  const std::vector<uint8_t> bad = {0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0xff};
  auto module = Module::FromBinary(bad, "bad.wasm");
  ASSERT_FALSE(module.ok());
  EXPECT_NE(module.status().message().find("bad.wasm:"), std::string::npos)
      << module.status().message();
  EXPECT_NE(module.status().message().find("0000009"), std::string::npos)
      << module.status().message();
}

TEST(ModuleTest, RejectsNotWasm) {
  const std::vector<uint8_t> text = {'h', 'e', 'l', 'l', 'o'};
  EXPECT_FALSE(Module::FromBinary(text).ok());
  EXPECT_FALSE(Module::FromBinary({}).ok());
}

TEST(ModuleTest, RejectsTooManyLocals) {
  ModuleLimits limits;
  limits.max_function_locals = 10;
  auto module = Module::FromText(
      "(module (func (local i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32)))", "locals.wat", limits);
  ASSERT_FALSE(module.ok());
  EXPECT_EQ(module.status().code(), Code::kLimitExceeded);
  EXPECT_NE(module.status().message().find("max_function_locals=10"), std::string::npos);
}

TEST(ModuleTest, RejectsOversizedModule) {
  ModuleLimits limits;
  limits.max_module_bytes = 4;
  auto module = Module::FromText("(module)", "big.wat", limits);
  ASSERT_FALSE(module.ok());
  EXPECT_EQ(module.status().code(), Code::kLimitExceeded);
  EXPECT_NE(module.status().message().find("max_module_bytes=4"), std::string::npos);
}

// --- imports ------------------------------------------------------------------------------

TEST_P(EngineTest, UnknownImportErrorNamesEveryImport) {
  Engine engine(registry_, {}, GetParam());
  auto instance = engine.Instantiate(Wat(R"((module
    (import "test" "sned" (func (param i32)))
    (import "env" "memory" (memory 1))
    (import "test" "add" (func (param i64) (result i32)))))"));
  ASSERT_FALSE(instance.ok());
  const std::string message = instance.status().message();
  EXPECT_EQ(instance.status().code(), Code::kNotFound);
  EXPECT_NE(message.find("unknown import test.sned (i32) -> ()"), std::string::npos) << message;
  EXPECT_NE(message.find("env.memory"), std::string::npos) << message;
  EXPECT_NE(message.find("import test.add has signature (i64) -> (i32); the host provides "
                         "(i32, i32) -> (i32)"),
            std::string::npos)
      << message;
}

TEST_P(EngineTest, CompletingHostCallReturnsResultsInline) {
  auto instance = Instantiate(R"((module
    (import "test" "add" (func $add (param i32 i32) (result i32)))
    (func (export "f") (result i32) (call $add (i32.const 2) (i32.const 40)))))");
  auto results = instance->Call("f", {});
  ASSERT_TRUE(results.ok()) << results.status().ToString();
  EXPECT_EQ(std::get<int32_t>((*results)[0]), 42);
}

// --- resumable invocations ------------------------------------------------------------------

constexpr const char* kLoop = R"((module
  (func (export "loop") (param $n i32) (result i64)
    (local $i i32) (local $acc i64)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $acc (i64.add (i64.mul (local.get $acc) (i64.const 31))
                                 (i64.extend_i32_u (local.get $i))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (local.get $acc))
  (func (export "spin") (loop $l (br $l))))
)";

TEST_P(EngineTest, SlicedLoopGivesTheSameResultAsOneUnslicedRun) {
  auto instance = Instantiate(kLoop);
  const std::vector<WasmValue> args = {int32_t{2'000'000}};
  auto unsliced = instance->Call("loop", args, nullptr, UINT64_MAX);
  ASSERT_TRUE(unsliced.ok()) << unsliced.status().ToString();
  for (uint64_t slice : {1'000u, 10'000u, 100'000u}) {
    auto invocation = instance->Start("loop", args);
    ASSERT_TRUE(invocation.ok());
    uint64_t slices = 0;
    RunState state = RunState::kBudgetExhausted;
    while (state == RunState::kBudgetExhausted) {
      state = (*invocation)->Run(slice);
      ++slices;
    }
    ASSERT_EQ(state, RunState::kFinished) << "slice " << slice;
    EXPECT_EQ((*invocation)->results(), *unsliced) << "slice " << slice;
    EXPECT_GT(slices, 2'000'000 / slice) << "the loop really was sliced";
  }
}

TEST_P(EngineTest, InfiniteLoopStopsAtItsBudgetWithTelemetry) {
  auto instance = Instantiate(kLoop);
  auto invocation = instance->Start("spin", {});
  ASSERT_TRUE(invocation.ok());
  EXPECT_EQ((*invocation)->Run(10'000), RunState::kBudgetExhausted);
  EXPECT_EQ((*invocation)->Run(5'000), RunState::kBudgetExhausted);
  Telemetry t = (*invocation)->telemetry();
  EXPECT_EQ(t.instructions, 15'000u);
  EXPECT_EQ(t.call_depth, 1u);
  EXPECT_EQ(t.function, "spin");
}

TEST_P(EngineTest, HostCallSuspendsAndResumesWithResults) {
  auto instance = Instantiate(R"((module
    (import "test" "recv" (func $recv (result i32)))
    (func $inner (result i32) (i32.mul (call $recv) (i32.const 10)))
    (func (export "main") (result i32) (i32.add (call $inner) (call $recv)))))");
  auto invocation = instance->Start("main", {});
  ASSERT_TRUE(invocation.ok());
  Invocation& inv = **invocation;

  ASSERT_EQ(inv.Run(1'000), RunState::kSuspended);
  EXPECT_EQ(inv.suspended_in(), "test.recv");
  EXPECT_EQ(inv.telemetry().call_depth, 3u);  // main, inner, the host frame
  EXPECT_EQ(inv.Run(1'000), RunState::kSuspended) << "Run does not resume without results";
  EXPECT_FALSE(inv.CompleteHostCall(std::vector<WasmValue>{int64_t{1}}).ok());
  ASSERT_TRUE(inv.CompleteHostCall(std::vector<WasmValue>{int32_t{4}}).ok());

  ASSERT_EQ(inv.Run(1'000), RunState::kSuspended);
  EXPECT_EQ(inv.telemetry().call_depth, 2u);
  ASSERT_TRUE(inv.CompleteHostCall(std::vector<WasmValue>{int32_t{2}}).ok());

  ASSERT_EQ(inv.Run(1'000), RunState::kFinished);
  EXPECT_EQ(std::get<int32_t>(inv.results()[0]), 42);
}

TEST_P(EngineTest, TwoSuspendedInvocationsInterleave) {
  auto wat = R"((module
    (import "test" "recv" (func $recv (result i32)))
    (func (export "main") (result i32) (i32.add (call $recv) (call $recv)))))";
  auto a = Instantiate(wat);
  auto b = engine_->Instantiate(Wat(wat));
  ASSERT_TRUE(b.ok());
  auto ia = a->Start("main", {});
  auto ib = (*b)->Start("main", {});
  ASSERT_EQ((*ia)->Run(100), RunState::kSuspended);
  ASSERT_EQ((*ib)->Run(100), RunState::kSuspended);
  ASSERT_TRUE((*ib)->CompleteHostCall(std::vector<WasmValue>{int32_t{100}}).ok());
  ASSERT_TRUE((*ia)->CompleteHostCall(std::vector<WasmValue>{int32_t{1}}).ok());
  ASSERT_EQ((*ia)->Run(100), RunState::kSuspended);
  ASSERT_EQ((*ib)->Run(100), RunState::kSuspended);
  ASSERT_TRUE((*ia)->CompleteHostCall(std::vector<WasmValue>{int32_t{2}}).ok());
  ASSERT_TRUE((*ib)->CompleteHostCall(std::vector<WasmValue>{int32_t{200}}).ok());
  ASSERT_EQ((*ia)->Run(100), RunState::kFinished);
  ASSERT_EQ((*ib)->Run(100), RunState::kFinished);
  EXPECT_EQ(std::get<int32_t>((*ia)->results()[0]), 3);
  EXPECT_EQ(std::get<int32_t>((*ib)->results()[0]), 300);
}

TEST_P(EngineTest, FailingASuspendedHostCallTrapsTheInvocation) {
  auto instance = Instantiate(R"((module
    (import "test" "recv" (func $recv (result i32)))
    (func (export "main") (result i32) (call $recv))))");
  auto invocation = instance->Start("main", {});
  ASSERT_EQ((*invocation)->Run(100), RunState::kSuspended);
  ASSERT_TRUE((*invocation)->FailHostCall(TrapKind::kHostError, "peer went away").ok());
  EXPECT_EQ((*invocation)->state(), RunState::kTrapped);
  EXPECT_EQ((*invocation)->trap().function, "test.recv");
  EXPECT_EQ((*invocation)->trap().message, "peer went away");
}

TEST_P(EngineTest, OneInvocationAtATimePerInstance) {
  auto instance = Instantiate(kLoop);
  auto first = instance->Start("spin", {});
  ASSERT_TRUE(first.ok());
  auto second = instance->Start("spin", {});
  EXPECT_EQ(second.status().code(), Code::kFailedPrecondition);
  first->reset();
  EXPECT_TRUE(instance->Start("spin", {}).ok());
}

TEST_P(EngineTest, StartChecksArguments) {
  auto instance = Instantiate(kLoop);
  EXPECT_EQ(instance->Start("loop", {}).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(instance->Start("loop", std::vector<WasmValue>{int64_t{1}}).status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(instance->Start("nope", {}).status().code(), Code::kNotFound);
}

// --- traps --------------------------------------------------------------------------------

constexpr const char* kTraps = R"((module
  (memory 1)
  (table 2 funcref)
  (type $v (func))
  (type $i (func (param i32)))
  (elem (i32.const 0) $nop)
  (func $nop)
  (func (export "unreachable") unreachable)
  (func (export "oob") (drop (i32.load (i32.const 65535))))
  (func (export "div0") (drop (i32.div_s (i32.const 1) (i32.const 0))))
  (func (export "overflow") (drop (i32.div_s (i32.const 0x80000000) (i32.const -1))))
  (func (export "nan") (drop (i32.trunc_f32_s (f32.const nan))))
  (func $recurse (export "recurse") (call $recurse))
  (func (export "table_oob") (call_indirect (type $v) (i32.const 7)))
  (func (export "null_entry") (call_indirect (type $v) (i32.const 1)))
  (func (export "mismatch") (call_indirect (type $i) (i32.const 5) (i32.const 0)))
  (func (export "ok") (result i32) (i32.const 7)))
)";

struct TrapCase {
  const char* function;
  TrapKind kind;
};

TEST_P(EngineTest, EveryTrapKindIsReportedWithKindAndFunction) {
  auto instance = Instantiate(kTraps);
  const TrapCase cases[] = {
      {"unreachable", TrapKind::kUnreachable},
      {"oob", TrapKind::kMemoryOutOfBounds},
      {"div0", TrapKind::kIntegerDivideByZero},
      {"overflow", TrapKind::kIntegerOverflow},
      {"nan", TrapKind::kInvalidConversion},
      {"recurse", TrapKind::kCallStackExhausted},
      {"table_oob", TrapKind::kTableOutOfBounds},
      {"null_entry", TrapKind::kIndirectCallMismatch},
      {"mismatch", TrapKind::kIndirectCallMismatch},
  };
  for (const TrapCase& c : cases) {
    Trap trap = RunToTrap(*instance, c.function);
    EXPECT_EQ(trap.kind, c.kind) << c.function << ": " << trap.ToString();
    EXPECT_EQ(trap.function, c.function) << trap.ToString();
    EXPECT_FALSE(trap.message.empty());
    // After any trap the same instance keeps running other invocations.
    auto ok = instance->Call("ok", {});
    ASSERT_TRUE(ok.ok()) << ok.status().ToString();
    EXPECT_EQ(std::get<int32_t>((*ok)[0]), 7);
  }
}

TEST_P(EngineTest, UnboundedRecursionTrapsAtTheConfiguredDepth) {
  EngineLimits limits;
  limits.max_call_depth = 100;
  auto instance = Instantiate(R"((module
    (func $down (export "down") (param $n i32) (result i32)
      (if (result i32) (i32.eqz (local.get $n))
        (then (i32.const 0))
        (else (i32.add (i32.const 1) (call $down (i32.sub (local.get $n) (i32.const 1)))))))))",
                              limits);
  auto fine = instance->Call("down", std::vector<WasmValue>{int32_t{98}});
  ASSERT_TRUE(fine.ok()) << fine.status().ToString();
  EXPECT_EQ(std::get<int32_t>((*fine)[0]), 98);
  Trap trap = RunToTrap(*instance, "down", {int32_t{100}});
  EXPECT_EQ(trap.kind, TrapKind::kCallStackExhausted);
  EXPECT_EQ(trap.message, "call stack exhausted");
}

TEST_P(EngineTest, IndirectRecursionAlsoTrapsCallStackExhausted) {
  // wabt 1.0.32 records this trap but keeps running; the engine must still stop.
  auto instance = Instantiate(R"((module
    (type $t (func (param i32) (result i32)))
    (table 1 funcref)
    (elem (i32.const 0) $f)
    (func $f (export "f") (param i32) (result i32)
      (i32.add (i32.const 1) (call_indirect (type $t) (local.get 0) (i32.const 0))))))");
  Trap trap = RunToTrap(*instance, "f", {int32_t{0}});
  EXPECT_EQ(trap.kind, TrapKind::kCallStackExhausted) << trap.ToString();
}

TEST_P(EngineTest, ValueStackIsBounded) {
  EngineLimits limits;
  limits.max_value_stack = 10'000;
  auto instance = Instantiate(R"((module
    (func $deep (export "deep") (param i32) (result i32)
      (local i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64)
      (call $deep (local.get 0)))))",
                              limits);
  Trap trap = RunToTrap(*instance, "deep", {int32_t{0}});
  // Native frames live on the invocation's fiber stack, which EngineLimits::max_call_depth
  // and the stack's guard page bound instead (docs/engine.md "Limits").
  EXPECT_EQ(trap.kind, GetParam() == Tier::kNative ? TrapKind::kCallStackExhausted
                                                   : TrapKind::kValueStackExhausted)
      << trap.ToString();
}

TEST_P(EngineTest, HostTrapNamesTheImport) {
  auto instance = Instantiate(R"((module
    (import "test" "boom" (func $boom))
    (func (export "main") (call $boom))))");
  Trap trap = RunToTrap(*instance, "main");
  EXPECT_EQ(trap.kind, TrapKind::kHostError);
  EXPECT_EQ(trap.function, "test.boom");
  EXPECT_EQ(trap.message, "boom refused");
}

// --- memory and limits --------------------------------------------------------------------

TEST_P(EngineTest, HostMemoryAccessIsBoundsChecked) {
  auto instance = Instantiate(R"((module
    (import "test" "peek" (func $peek (param i32 i32) (result i32)))
    (memory 1)
    (data (i32.const 16) "\2a")
    (func (export "peek") (param i32 i32) (result i32) (call $peek (local.get 0) (local.get 1)))))");
  auto inside = instance->Call("peek", std::vector<WasmValue>{int32_t{16}, int32_t{1}});
  ASSERT_TRUE(inside.ok()) << inside.status().ToString();
  EXPECT_EQ(std::get<int32_t>((*inside)[0]), 42);
  Trap trap = RunToTrap(*instance, "peek", {int32_t{65535}, int32_t{2}});
  EXPECT_EQ(trap.kind, TrapKind::kHostBounds);
  Trap wrapped = RunToTrap(*instance, "peek", {int32_t{-1}, int32_t{2}});
  EXPECT_EQ(wrapped.kind, TrapKind::kHostBounds);

  GuestMemory& memory = instance->memory();
  EXPECT_EQ(memory.size(), 65536u);
  EXPECT_TRUE(memory.Read(65535, 1).ok());
  EXPECT_FALSE(memory.Read(65535, 2).ok());
  EXPECT_FALSE(memory.Read(UINT32_MAX, 2).ok());
  const std::vector<uint8_t> two = {1, 2};
  EXPECT_TRUE(memory.Write(65534, two).ok());
  EXPECT_FALSE(memory.Write(65535, two).ok());
  EXPECT_FALSE(memory.View(70000, 0).ok());
}

TEST_P(EngineTest, MemoryGrowPastTheLimitReturnsMinusOne) {
  EngineLimits limits;
  limits.max_memory_pages = 4;
  auto instance = Instantiate(R"((module
    (memory 1)
    (func (export "grow") (param i32) (result i32) (memory.grow (local.get 0)))
    (func (export "size") (result i32) (memory.size))))",
                              limits);
  auto grow = [&](int32_t pages) {
    auto r = instance->Call("grow", std::vector<WasmValue>{pages});
    EXPECT_TRUE(r.ok());
    return std::get<int32_t>((*r)[0]);
  };
  EXPECT_EQ(grow(2), 1);
  EXPECT_EQ(grow(2), -1);
  EXPECT_EQ(grow(1), 3);
  EXPECT_EQ(grow(1), -1);
  EXPECT_EQ(instance->memory().size(), 4u * 65536);
}

TEST_P(EngineTest, DeclaredMemoryAboveTheLimitIsRejectedBeforeInstantiation) {
  Engine engine(registry_, {}, GetParam());  // default: 256 pages
  auto instance = engine.Instantiate(Wat("(module (memory 300))"));
  ASSERT_FALSE(instance.ok());
  EXPECT_EQ(instance.status().code(), Code::kLimitExceeded);
  EXPECT_NE(instance.status().message().find("max_memory_pages=256"), std::string::npos)
      << instance.status().message();
  // A declared maximum above the limit is fine: growth stops at the limit.
  EXPECT_TRUE(engine.Instantiate(Wat("(module (memory 1 65536))")).ok());
}

TEST_P(EngineTest, TableLimitsHold) {
  EngineLimits limits;
  limits.max_table_elements = 8;
  engine_ = std::make_unique<Engine>(registry_, limits, GetParam());
  auto big = engine_->Instantiate(Wat("(module (table 9 funcref))"));
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("max_table_elements=8"), std::string::npos);
  auto instance = engine_->Instantiate(Wat(R"((module
    (table 4 funcref)
    (func (export "grow") (param i32) (result i32) (table.grow 0 (ref.null func) (local.get 0)))))"));
  ASSERT_TRUE(instance.ok()) << instance.status().ToString();
  auto grown = (*instance)->Call("grow", std::vector<WasmValue>{int32_t{4}});
  EXPECT_EQ(std::get<int32_t>((*grown)[0]), 4);
  auto refused = (*instance)->Call("grow", std::vector<WasmValue>{int32_t{1}});
  EXPECT_EQ(std::get<int32_t>((*refused)[0]), -1);
}

TEST_P(EngineTest, InstancesDoNotShareMemory) {
  auto wat = R"((module (memory 1)
    (func (export "set") (i32.store (i32.const 0) (i32.const 99)))
    (func (export "get") (result i32) (i32.load (i32.const 0)))))";
  auto a = Instantiate(wat);
  auto b = engine_->Instantiate(Wat(wat));
  ASSERT_TRUE(a->Call("set", {}).ok());
  auto from_b = (*b)->Call("get", {});
  EXPECT_EQ(std::get<int32_t>((*from_b)[0]), 0);
}

TEST_P(EngineTest, ResetRestoresMemoryAndGlobalsToTheirInitialState) {
  auto instance = Instantiate(R"((module
    (memory 1)
    (data (i32.const 8) "\07")
    (global $g (mut i32) (i32.const 3))
    (func (export "dirty") (result i32)
      (i32.store (i32.const 8) (i32.const 99))
      (i32.store (i32.const 4000) (i32.const 42))
      (drop (memory.grow (i32.const 1)))
      (i32.store (i32.const 70000) (i32.const 5))
      (global.set $g (i32.const 77))
      (i32.const 0))
    (func (export "peek") (param i32) (result i32) (i32.load (local.get 0)))
    (func (export "g") (result i32) (global.get $g))))");
  ASSERT_TRUE(instance->Call("dirty", {}).ok());
  ASSERT_TRUE(instance->Reset().ok());
  auto peek = [&](int32_t at) {
    return std::get<int32_t>((*instance->Call("peek", std::vector<WasmValue>{at}))[0]);
  };
  EXPECT_EQ(peek(8), 7);
  EXPECT_EQ(peek(4000), 0);
  EXPECT_EQ(peek(70000), 0) << "grown memory is zeroed, not shrunk";
  EXPECT_EQ(std::get<int32_t>((*instance->Call("g", {}))[0]), 3);
}

TEST_P(EngineTest, ValueStackNeverExceedsItsLimitEvenWithinOneChunk) {
  // 20 nested calls of a function with 5,000 locals need 100,000 values: far past a limit
  // of 10,000, and all of it fits in a single 1,024-instruction chunk.
  EngineLimits limits;
  limits.max_value_stack = 10'000;
  std::string locals;
  for (int i = 0; i < 5'000; ++i) locals += " i64";
  auto instance = Instantiate(R"((module
    (func $f (export "f") (param $n i32) (result i32) (local)" +
                                  locals + R"()
      (if (result i32) (i32.eqz (local.get $n)) (then (i32.const 0))
        (else (call $f (i32.sub (local.get $n) (i32.const 1))))))))",
                              limits);
  if (GetParam() == Tier::kNative) {
    // No value stack: the 20 frames (their unused locals compiled away) fit the fiber stack.
    auto result = instance->Call("f", std::vector<WasmValue>{int32_t{20}});
    ASSERT_TRUE(result.ok()) << result.status().ToString();
    EXPECT_EQ(std::get<int32_t>((*result)[0]), 0);
    return;
  }
  Trap trap = RunToTrap(*instance, "f", {int32_t{20}});
  EXPECT_EQ(trap.kind, TrapKind::kValueStackExhausted) << trap.ToString();
  EXPECT_EQ(trap.function, "f");
}

TEST_P(EngineTest, CallRespectsItsTotalBudget) {
  auto instance = Instantiate(kLoop);
  EXPECT_EQ(instance->Call("spin", {}, nullptr, 0).status().code(), Code::kInvalidArgument);
  auto spun = instance->Call("spin", {}, nullptr, 50'000);
  ASSERT_FALSE(spun.ok());
  EXPECT_EQ(spun.status().code(), Code::kLimitExceeded);
}

TEST(ModuleTest, DeeplyNestedTextIsRejectedNotFatal) {
  std::string deep = "(module (func ";
  for (int i = 0; i < 20'000; ++i) deep += "(block ";
  deep += std::string(20'000, ')') + "))";
  auto folded = Module::FromText(deep, "deep.wat");
  ASSERT_FALSE(folded.ok());
  EXPECT_EQ(folded.status().code(), Code::kLimitExceeded);
  EXPECT_NE(folded.status().message().find("max_text_nesting"), std::string::npos);

  std::string flat = "(module (func ";
  for (int i = 0; i < 100'000; ++i) flat += "block ";
  for (int i = 0; i < 100'000; ++i) flat += "end ";
  EXPECT_EQ(Module::FromText(flat + "))", "flat.wat").status().code(), Code::kLimitExceeded);

  std::string fine = "(module (func ;; a comment with ( ( (\n (; block block ;) ";
  for (int i = 0; i < 500; ++i) fine += "(block ";
  fine += std::string(500, ')') + " (drop (i32.const 0)) \"((((\" ))";
  // The string above is not valid wasm text, but it must fail on syntax, not on depth.
  auto parsed = Module::FromText(fine, "fine.wat");
  EXPECT_NE(parsed.status().code(), Code::kLimitExceeded) << parsed.status().ToString();
}

REEF_INSTANTIATE_FOR_EVERY_TIER(EngineTest);

}  // namespace
}  // namespace reef::wasm
