// Native instances behave as the interpreter does: the same results and the same trap kinds
// for the same calls (each test runs an engine of each tier and compares), host imports,
// limits, threads.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "unit/wasm/native_support.h"
#include "wasm/native/code_source.h"

namespace reef::wasm::native {
namespace {

using native_test::ExpectSameOutcome;
using native_test::Instantiate;
using native_test::InstantiationTrapKind;
using native_test::LastTrap;
using native_test::ParseWat;
using native_test::TrapKindOf;

constexpr std::string_view kKitchenSink = R"((module
  (import "reef" "send" (func $send (param i32 i32)))
  (memory 1 3)
  (table 4 funcref)
  (elem (i32.const 0) $add $fib $neg)
  (type $binary (func (param i32 i32) (result i32)))
  (global $counter (mut i64) (i64.const 0))
  (data (i32.const 16) "hello")
  (func $add (export "add") (param i32 i32) (result i32) local.get 0 local.get 1 i32.add)
  (func $neg (param i32) (result i32) i32.const 0 local.get 0 i32.sub)
  (func $fib (export "fib") (param i32) (result i32)
    local.get 0 i32.const 2 i32.lt_u
    if (result i32) local.get 0
    else
      local.get 0 i32.const 1 i32.sub call $fib
      local.get 0 i32.const 2 i32.sub call $fib i32.add
    end)
  (func (export "sum_to") (param $n i32) (result i64) (local $acc i64)
    block $done loop $next
      local.get $n i32.eqz br_if $done
      local.get $acc local.get $n i64.extend_i32_u i64.add local.set $acc
      local.get $n i32.const 1 i32.sub local.set $n
      br $next
    end end
    local.get $acc)
  (func (export "count") (result i64)
    global.get $counter i64.const 1 i64.add global.set $counter global.get $counter)
  (func (export "mix") (param f32 f64 i64) (result f64)
    local.get 0 f64.promote_f32 local.get 1 f64.mul local.get 2 f64.convert_i64_s f64.add)
  (func (export "minmax") (param f64 f64) (result f64 f64)
    local.get 0 local.get 1 f64.min local.get 0 local.get 1 f64.max)
  (func (export "div_s") (param i32 i32) (result i32) local.get 0 local.get 1 i32.div_s)
  (func (export "rem_u") (param i64 i64) (result i64) local.get 0 local.get 1 i64.rem_u)
  (func (export "trunc") (param f64) (result i32) local.get 0 i32.trunc_f64_s)
  (func (export "trunc_sat") (param f64) (result i32) local.get 0 i32.trunc_sat_f64_s)
  (func (export "unreachable") unreachable)
  (func (export "load") (param i32) (result i32) local.get 0 i32.load)
  (func (export "load8") (param i32) (result i32) local.get 0 i32.load8_u)
  (func (export "store") (param i32 i32) local.get 0 local.get 1 i32.store)
  (func (export "fill") (param i32 i32 i32) local.get 0 local.get 1 local.get 2 memory.fill)
  (func (export "grow") (param i32) (result i32) local.get 0 memory.grow)
  (func (export "size") (result i32) memory.size)
  (func (export "call_binary") (param i32 i32 i32) (result i32)
    local.get 1 local.get 2 local.get 0 call_indirect (type $binary))
  (func (export "table_get_null") (param i32) (result i32) local.get 0 table.get 0 ref.is_null)
  (func $depth (export "depth") (param i32) (result i32)
    local.get 0 i32.eqz if (result i32) i32.const 0
    else local.get 0 i32.const 1 i32.sub call $depth i32.const 1 i32.add end)
  (func $forever (export "forever") (param i32) (result i32)
    local.get 0 i32.const 1 i32.add call $forever)
  (func (export "send") (param i32 i32) local.get 0 local.get 1 call $send)
))";

// What reef.send saw: the bytes of [ptr, ptr + len); len 99 traps host_error.
struct SendLog {
  std::vector<std::string> messages;
};

HostRegistry SendRegistry() {
  HostRegistry registry("reef", 1);
  EXPECT_TRUE(registry
                  .Add({"reef",
                        "send",
                        {{ValType::kI32, ValType::kI32}, {}},
                        [](HostCall& call) {
                          if (call.i32(1) == 99) {
                            return call.Fail(TrapKind::kHostError, "len 99 is refused");
                          }
                          auto bytes = call.memory().Read(static_cast<uint32_t>(call.i32(0)),
                                                          static_cast<uint32_t>(call.i32(1)));
                          if (!bytes.ok()) {
                            return call.Fail(TrapKind::kHostBounds, bytes.status().message());
                          }
                          if (auto* log = static_cast<SendLog*>(call.context())) {
                            log->messages.emplace_back(bytes->begin(), bytes->end());
                          }
                          return HostCallOutcome::kComplete;
                        },
                        "records a message"})
                  .ok());
  return registry;
}

// One module, instantiated on an engine of each tier (the native compile is shared by every
// engine of the process, so the suite compiles it once).
class NativeVsInterpreter : public ::testing::Test {
 protected:
  void SetUp() override {
    auto module = ParseWat(kKitchenSink);
    ASSERT_NE(module, nullptr);
    native_instance_ = Instantiate(native_engine_, module);
    interp_instance_ = Instantiate(interp_engine_, module);
    ASSERT_NE(native_instance_, nullptr);
    ASSERT_NE(interp_instance_, nullptr);
  }

  // Runs `name(args)` in both tiers and expects the same outcome.
  void Same(std::string_view name, std::vector<WasmValue> args) {
    ExpectSameOutcome(native_instance_->Call(name, args, &native_log_),
                      interp_instance_->Call(name, args, &interp_log_), name);
  }

  HostRegistry registry_ = SendRegistry();
  EngineLimits limits_;
  Engine native_engine_{registry_, limits_, Tier::kNative};
  Engine interp_engine_{registry_, limits_};
  SendLog native_log_, interp_log_;
  std::unique_ptr<Instance> native_instance_;
  std::unique_ptr<Instance> interp_instance_;
};

TEST_F(NativeVsInterpreter, ArithmeticLoopsAndRecursionGiveTheSameResults) {
  Same("add", {int32_t{2}, int32_t{40}});
  Same("add", {int32_t{INT32_MAX}, int32_t{1}});
  Same("fib", {int32_t{20}});
  Same("sum_to", {int32_t{100'000}});
  Same("mix", {1.5f, 2.25, int64_t{-7}});
  Same("minmax", {-0.0, 0.0});
  Same("rem_u", {int64_t{-1}, int64_t{10}});
  Same("trunc_sat", {1e30});
  Same("count", {});
  Same("count", {});  // globals persist between calls
  Same("depth", {int32_t{1000}});
}

TEST_F(NativeVsInterpreter, FibIsFib) {
  auto r = native_instance_->Call("fib", std::vector<WasmValue>{int32_t{24}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(std::get<int32_t>((*r)[0]), 46368);
}

TEST_F(NativeVsInterpreter, MemoryLoadStoreAndDataSegments) {
  Same("load8", {int32_t{16}});  // 'h' from the data segment
  Same("store", {int32_t{100}, int32_t{0x12345678}});
  Same("load", {int32_t{100}});
  Same("load8", {int32_t{101}});
  Same("fill", {int32_t{200}, int32_t{7}, int32_t{10}});
  Same("load", {int32_t{204}});
  Same("load", {int32_t{65'532}});  // last whole word of page 0
}

TEST_F(NativeVsInterpreter, GrowObeysTheDeclaredMaximumAndZeroesNewPages) {
  Same("size", {});
  Same("grow", {int32_t{1}});
  Same("load", {int32_t{65'536}});  // new page, zeroed
  Same("grow", {int32_t{5}});       // 2 + 5 > max 3: -1
  Same("grow", {int32_t{1}});
  Same("grow", {int32_t{1}});  // at max: -1
  Same("size", {});
  Same("grow", {int32_t{0}});
}

TEST_F(NativeVsInterpreter, EveryTrapKindMatches) {
  Same("unreachable", {});
  Same("div_s", {int32_t{1}, int32_t{0}});
  Same("div_s", {int32_t{INT32_MIN}, int32_t{-1}});
  Same("rem_u", {int64_t{5}, int64_t{0}});
  Same("trunc", {1e10});
  Same("trunc", {std::numeric_limits<double>::quiet_NaN()});
  Same("load", {int32_t{65'533}});  // straddles the end
  Same("load", {int32_t{-1}});
  Same("store", {int32_t{70'000}, int32_t{1}});
  Same("fill", {int32_t{65'000}, int32_t{0}, int32_t{1'000}});
  Same("call_binary", {int32_t{0}, int32_t{3}, int32_t{4}});  // $add: fine
  Same("call_binary", {int32_t{1}, int32_t{3}, int32_t{4}});  // $fib: wrong type
  Same("call_binary", {int32_t{3}, int32_t{3}, int32_t{4}});  // null entry
  Same("call_binary", {int32_t{4}, int32_t{3}, int32_t{4}});  // past the table
  Same("table_get_null", {int32_t{3}});
  Same("table_get_null", {int32_t{9}});  // table.get past the table
  Same("depth", {int32_t{100'000}});
  Same("forever", {int32_t{0}});
}

TEST_F(NativeVsInterpreter, TrapsLeaveTheInstanceUsable) {
  const Trap trap = LastTrap(*native_instance_, "div_s", {int32_t{1}, int32_t{0}});
  EXPECT_EQ(trap.kind, TrapKind::kIntegerDivideByZero);
  EXPECT_EQ(trap.function, "div_s");

  Same("fib", {int32_t{15}});
}

TEST_F(NativeVsInterpreter, CallDepthLimitIsExactlyTheInterpretersLimit) {
  // The deepest `depth(n)` that succeeds is the same in both tiers, so the limit counts the
  // same frames.
  for (int32_t n = 1015; n <= 1030; ++n) Same("depth", {n});
}

TEST_F(NativeVsInterpreter, SlicesAtTheDepthLimitEndAlike) {
  // In one-instruction slices every check runs out of fuel, the deepest one included: the
  // interpreter's out-of-fuel call is a frame of its own, so at max_call_depth it traps
  // call_stack_exhausted; native code must stop the same way (the differential fuzzer found
  // this). Each outcome is the final state, the results or trap kind, and the count.
  auto outcome = [](Instance& instance, int32_t n, uint64_t slice) {
    auto invocation = instance.Start("depth", std::vector<WasmValue>{n});
    if (!invocation.ok()) return invocation.status().ToString();
    RunState state = RunState::kBudgetExhausted;
    while (state == RunState::kBudgetExhausted) state = (*invocation)->Run(slice);
    std::string text = std::string(RunStateName(state)) + " " +
                       std::to_string((*invocation)->telemetry().instructions);
    if (state == RunState::kTrapped)
      text += " " + std::string(TrapKindName((*invocation)->trap().kind));
    if (state == RunState::kFinished) text += " " + FormatValue((*invocation)->results()[0]);
    return text;
  };
  for (uint64_t slice : {1, 7, 1'000}) {
    for (int32_t n : {1020, 1022, 1023, 1024, 1025, 1030, 2000}) {
      EXPECT_EQ(outcome(*native_instance_, n, slice), outcome(*interp_instance_, n, slice))
          << "depth(" << n << ") in slices of " << slice;
    }
  }
}

TEST_F(NativeVsInterpreter, HostImportSeesArgumentsAndGuestMemory) {
  Same("send", {int32_t{16}, int32_t{5}});

  ASSERT_EQ(native_log_.messages.size(), 1u);
  EXPECT_EQ(native_log_.messages[0], "hello");
  EXPECT_EQ(native_log_.messages, interp_log_.messages);
}

TEST_F(NativeVsInterpreter, HostImportTrapsCarryTheHostsKindAndMessage) {
  Same("send", {int32_t{16}, int32_t{99}});
  Same("send", {int32_t{65'530}, int32_t{10}});  // host_bounds from the handler

  const Trap trap = LastTrap(*native_instance_, "send", {int32_t{0}, int32_t{99}});
  EXPECT_EQ(trap.kind, TrapKind::kHostError);
  EXPECT_EQ(trap.function, "reef.send");
  EXPECT_EQ(trap.message, "len 99 is refused");
}

TEST_F(NativeVsInterpreter, CallArgumentErrorsAreNotTraps) {
  auto missing = native_instance_->Call("nope", {});
  EXPECT_EQ(missing.status().code(), Code::kNotFound);
  auto wrong = native_instance_->Call("add", std::vector<WasmValue>{int32_t{1}});
  EXPECT_EQ(wrong.status().code(), Code::kInvalidArgument);
}

TEST(NativeInstanceImports, EveryNumberTypeAndMultipleResultsCrossTheImportBoundary) {
  constexpr std::string_view kWat = R"((module
    (import "test" "spread" (func $spread (param i64 f32 f64) (result i32 i64 f64)))
    (func (export "go") (param i64 f32 f64) (result f64)
      (local $a i32) (local $b i64) (local $c f64)
      local.get 0 local.get 1 local.get 2 call $spread
      local.set $c local.set $b local.set $a
      local.get $a f64.convert_i32_s local.get $b f64.convert_i64_s f64.add local.get $c f64.add)))";
  HostRegistry registry("test", 1);
  ASSERT_TRUE(registry
                  .Add({"test",
                        "spread",
                        {{ValType::kI64, ValType::kF32, ValType::kF64},
                         {ValType::kI32, ValType::kI64, ValType::kF64}},
                        [](HostCall& call) {
                          call.results()[0] = static_cast<int32_t>(call.i64(0) % 1000);
                          call.results()[1] = call.i64(0) / 1000;
                          call.results()[2] =
                              std::get<float>(call.args()[1]) * std::get<double>(call.args()[2]);
                          return HostCallOutcome::kComplete;
                        },
                        "spreads its arguments"})
                  .ok());
  auto module = ParseWat(kWat);
  Engine native_engine(registry, {}, Tier::kNative);
  Engine interp_engine(registry);
  auto native = Instantiate(native_engine, module);
  auto interp = Instantiate(interp_engine, module);
  ASSERT_TRUE(native != nullptr && interp != nullptr);

  std::vector<WasmValue> args{int64_t{-123'456'789}, 1.25f, -3.5};
  ExpectSameOutcome(native->Call("go", args), interp->Call("go", args), "go");
}

TEST(NativeInstanceLimits, HostMemoryLimitBelowTheDeclaredMaximumWins) {
  constexpr std::string_view kWat = R"((module (memory 1 100)
    (func (export "grow") (param i32) (result i32) local.get 0 memory.grow)))";
  auto module = ParseWat(kWat);
  EngineLimits limits;
  limits.max_memory_pages = 2;
  HostRegistry registry("reef", 1);
  Engine native_engine(registry, limits, Tier::kNative);
  Engine interp_engine(registry, limits);
  auto native = Instantiate(native_engine, module);
  auto interp = Instantiate(interp_engine, module);
  ASSERT_TRUE(native != nullptr && interp != nullptr);

  for (int32_t delta : {1, 1, 0}) {
    std::vector<WasmValue> args{delta};
    ExpectSameOutcome(native->Call("grow", args), interp->Call("grow", args), "grow");
  }
  auto past = native->Call("grow", std::vector<WasmValue>{int32_t{1}});
  ASSERT_TRUE(past.ok());
  EXPECT_EQ(std::get<int32_t>((*past)[0]), -1);
}

TEST(NativeInstanceLimits, InitialMemoryAboveTheLimitIsRefused) {
  EngineLimits limits;
  limits.max_memory_pages = 4;
  HostRegistry registry("reef", 1);
  Engine engine(registry, limits, Tier::kNative);

  auto instance = engine.Instantiate(ParseWat(R"((module (memory 10)))"));

  EXPECT_EQ(instance.status().code(), Code::kLimitExceeded);
}

TEST(NativeInstanceLimits, StartFunctionTrapFailsInstantiation) {
  HostRegistry registry("reef", 1);
  Engine engine(registry, {}, Tier::kNative);

  auto instance = engine.Instantiate(ParseWat(R"((module (func $s unreachable) (start $s)))"));

  ASSERT_EQ(instance.status().code(), Code::kTrapped);
  EXPECT_NE(instance.status().message().find("start function trapped: unreachable"),
            std::string::npos)
      << instance.status().ToString();
}

TEST(NativeInstanceLimits, SegmentsOutOfBoundsTrapAtInstantiationAsInTheInterpreter) {
  HostRegistry registry("reef", 1);
  for (std::string_view wat : {
           std::string_view(R"((module (memory 1) (data (i32.const 65535) "ab")))"),
           std::string_view(R"((module (table 1 funcref) (func $f) (elem (i32.const 1) $f)))"),
       }) {
    SCOPED_TRACE(wat);
    auto module = ParseWat(wat);
    Engine native_engine(registry, {}, Tier::kNative);
    Engine interp_engine(registry);

    auto native_instance = native_engine.Instantiate(module);
    auto interp_instance = interp_engine.Instantiate(module);

    ASSERT_EQ(native_instance.status().code(), Code::kTrapped);
    ASSERT_EQ(interp_instance.status().code(), Code::kTrapped);
    EXPECT_EQ(InstantiationTrapKind(native_instance.status()),
              InstantiationTrapKind(interp_instance.status()));
    EXPECT_NE(InstantiationTrapKind(native_instance.status()), "other");
  }
}

TEST(NativeInstanceLimits, UnboundedRecursionTrapsCleanly) {
  // The C compiler may turn recursion into loops; the depth counter must still stop it.
  HostRegistry registry("reef", 1);
  Engine engine(registry, {}, Tier::kNative);
  auto instance = Instantiate(engine, ParseWat(R"((module
    (func $f (export "forever") (param i32) (result i32) local.get 0 i32.const 1 i32.add call $f)
    (func $g (export "tail") (param i32) local.get 0 call $g)
    (func $h (export "mutual") (param i32) (result i32) local.get 0 call $k)
    (func $k (param i32) (result i32) local.get 0 i32.const 1 i32.xor call $h)))"));
  ASSERT_NE(instance, nullptr);

  for (const char* name : {"forever", "tail", "mutual"}) {
    auto r = instance->Call(name, std::vector<WasmValue>{int32_t{0}});
    EXPECT_EQ(TrapKindOf(r.status()), "call_stack_exhausted") << name;
  }
}

TEST(NativeInstanceLimits, FramesThatOverflowTheFiberStackTrapAtTheGuardPage) {
  if (native_test::kThreadSanitizer) {
    // ThreadSanitizer wraps signal handlers and runs them on the faulting stack, which is the
    // guard page here: the fault handler cannot run. The release and ASan runs cover it.
    GTEST_SKIP() << "guard-page faults cannot be handled under ThreadSanitizer";
  }
  // 300 i64 locals loaded from memory and live across each recursive call (the callee may
  // change memory, so they cannot be loaded again): ~2.4 KB of C stack per frame, so the
  // fiber's stack runs out (its guard page faults) long before max_call_depth frames.
  std::string locals, loads, sums;
  for (int i = 1; i <= 300; ++i) {
    locals += " i64";
    loads += fmt::format(" (local.set {} (i64.load (i32.const {})))", i, i * 8);
    sums += fmt::format(" (local.set 0 (i64.xor (local.get 0) (local.get {})))", i);
  }
  const std::string wat =
      R"((module (memory 1) (func $f (export "f") (param i64) (result i64) (local)" + locals + ")" +
      loads + R"( (i64.store (i32.const 8) (local.get 0)))" +
      R"( (local.set 0 (call $f (i64.add (local.get 0) (i64.const 1)))))" + sums +
      R"( (local.get 0))))";
  HostRegistry registry("reef", 1);
  Engine engine(registry, {}, Tier::kNative);
  auto instance = Instantiate(engine, ParseWat(wat));
  ASSERT_NE(instance, nullptr);

  const Trap trap = LastTrap(*instance, "f", {int64_t{1}});
  EXPECT_EQ(trap.kind, TrapKind::kCallStackExhausted) << trap.ToString();
  // The fault unwound cleanly: the instance and the thread go on.
  const Trap again = LastTrap(*instance, "f", {int64_t{2}});
  EXPECT_EQ(again.kind, TrapKind::kCallStackExhausted) << again.ToString();
  // Instance::Call runs on a pooled stack without a fiber: the same guard page, the same trap.
  for (int64_t start : {3, 4}) {
    auto called = instance->Call("f", std::vector<WasmValue>{start});
    EXPECT_EQ(TrapKindOf(called.status()), "call_stack_exhausted") << called.status().ToString();
  }
}

// Where the fuel cannot live in a register (clang, other processors; forced here with
// -DREEF_RT_NO_REGISTERS), the generated code keeps it in the instance: the same module
// charges the same instructions, pauses at the same checks and stops at its budget.
TEST(NativeMeteringTest, FuelInMemoryCountsExactlyLikeFuelInARegister) {
  auto module = ParseWat(R"((module
    (func $fib (export "fib") (param i32) (result i32)
      (if (result i32) (i32.lt_s (local.get 0) (i32.const 2))
        (then (local.get 0))
        (else (i32.add (call $fib (i32.sub (local.get 0) (i32.const 1)))
                       (call $fib (i32.sub (local.get 0) (i32.const 2)))))))
    (func (export "spin") (loop $l (br $l)))))");
  ASSERT_NE(module, nullptr);
  HostRegistry registry("reef", 1);
  struct Counts {
    int32_t result = 0;
    uint64_t instructions = 0;
    int slices = 0;
    Code spin = Code::kOk;
  };
  auto run = [&](std::vector<std::string> flags) {
    native::CodeSourceOptions options;
    options.compile.optimization = 0;
    options.compile.extra_flags = std::move(flags);
    auto code = native::CodeSource::Create(options);
    EXPECT_TRUE(code.ok()) << code.status().ToString();
    Engine engine(registry, {}, EngineOptions{.tier = TierChoice::kNative, .native_code = *code});
    auto instance = engine.Instantiate(module);
    EXPECT_TRUE(instance.ok()) << instance.status().ToString();
    Counts counts;
    auto invocation = (*instance)->Start("fib", std::vector<WasmValue>{int32_t{15}});
    EXPECT_TRUE(invocation.ok());
    RunState state = RunState::kBudgetExhausted;
    while (state == RunState::kBudgetExhausted) {
      state = (*invocation)->Run(97);
      ++counts.slices;
    }
    EXPECT_EQ(state, RunState::kFinished);
    counts.result = std::get<int32_t>((*invocation)->results()[0]);
    counts.instructions = (*invocation)->telemetry().instructions;
    invocation->reset();
    counts.spin = (*instance)->Call("spin", {}, nullptr, 5'000).status().code();
    return counts;
  };
  const Counts in_register = run({});
  const Counts in_memory = run({"-DREEF_RT_NO_REGISTERS"});
  EXPECT_EQ(in_register.result, 610);
  EXPECT_EQ(in_memory.result, 610);
  EXPECT_GT(in_register.slices, 10);
  EXPECT_EQ(in_memory.instructions, in_register.instructions);
  EXPECT_EQ(in_memory.slices, in_register.slices);
  EXPECT_EQ(in_register.spin, Code::kLimitExceeded);
  EXPECT_EQ(in_memory.spin, Code::kLimitExceeded) << "a check that never fires would spin on";
}

TEST(NativeInvocationTest, DestroyingAPausedOrSuspendedInvocationCancelsItCleanly) {
  HostRegistry registry("test", 1);
  ASSERT_TRUE(registry
                  .Add({"test",
                        "wait",
                        {{}, {ValType::kI32}},
                        [](HostCall&) { return HostCallOutcome::kSuspend; },
                        "waits"})
                  .ok());
  Engine engine(registry, {}, Tier::kNative);
  auto instance = Instantiate(engine, ParseWat(R"((module
    (import "test" "wait" (func $wait (result i32)))
    (func (export "spin") (loop $l (br $l)))
    (func (export "wait_plus") (param i32) (result i32) (i32.add (call $wait) (local.get 0)))))"));
  ASSERT_NE(instance, nullptr);

  for (int round = 0; round < 100; ++round) {
    auto spin = instance->Start("spin", {});
    ASSERT_TRUE(spin.ok());
    ASSERT_EQ((*spin)->Run(1'000), RunState::kBudgetExhausted);
    spin->reset();  // paused out of fuel in the middle of the loop

    auto waiting = instance->Start("wait_plus", std::vector<WasmValue>{int32_t{round}});
    ASSERT_TRUE(waiting.ok());
    ASSERT_EQ((*waiting)->Run(1'000), RunState::kSuspended);
    EXPECT_EQ((*waiting)->suspended_in(), "test.wait");
    if (round % 2 == 0) {
      waiting->reset();  // suspended in the host call
      continue;
    }
    ASSERT_TRUE((*waiting)->CompleteHostCall(std::vector<WasmValue>{int32_t{1'000}}).ok());
    ASSERT_EQ((*waiting)->Run(1'000), RunState::kFinished);
    EXPECT_EQ(std::get<int32_t>((*waiting)->results()[0]), 1'000 + round);
  }
}

TEST(NativeInstanceThreads, TwoThreadsRunInstancesOfOneModuleAtOnce) {
  auto module = ParseWat(R"((module
    (func $fib (export "fib") (param i32) (result i32)
      local.get 0 i32.const 2 i32.lt_u
      if (result i32) local.get 0
      else local.get 0 i32.const 1 i32.sub call $fib
           local.get 0 i32.const 2 i32.sub call $fib i32.add end)
    (func $rec (export "rec") (param i32) (result i32) local.get 0 call $rec)
    (func (export "div") (param i32 i32) (result i32) local.get 0 local.get 1 i32.div_u)))");
  ASSERT_NE(module, nullptr);
  HostRegistry registry("reef", 1);
  {
    Engine warm(registry, {}, Tier::kNative);  // compile before the threads start
    ASSERT_NE(Instantiate(warm, module), nullptr);
  }
  std::atomic<int> ready{0};
  std::atomic<int> failures{0};

  auto worker = [&](int id) {
    Engine engine(registry, {}, Tier::kNative);  // each thread its own, as each reactor
    auto instance = engine.Instantiate(module);
    if (!instance.ok()) {
      ++failures;
      return;
    }
    ++ready;
    while (ready.load() < 2) std::this_thread::yield();  // overlap the two threads' work
    for (int i = 0; i < 200; ++i) {
      auto fib = (*instance)->Call("fib", std::vector<WasmValue>{int32_t{15 + id}});
      const int32_t want = id == 0 ? 610 : 987;
      if (!fib.ok() || std::get<int32_t>((*fib)[0]) != want) ++failures;
      // Traps on one thread unwind that thread's invocation only.
      auto div = (*instance)->Call("div", std::vector<WasmValue>{int32_t{1}, int32_t{0}});
      if (TrapKindOf(div.status()) != "integer_divide_by_zero") ++failures;
      auto rec = (*instance)->Call("rec", std::vector<WasmValue>{int32_t{0}});
      if (TrapKindOf(rec.status()) != "call_stack_exhausted") ++failures;
    }
  };
  std::thread a(worker, 0);
  std::thread b(worker, 1);
  a.join();
  b.join();

  EXPECT_EQ(failures.load(), 0);
}

TEST(NativeInstanceNesting, HostImportMayRunAnotherInstanceAndTrapsStayInside) {
  constexpr std::string_view kWat = R"((module
    (import "test" "inner" (func $inner (param i32) (result i32)))
    (func (export "outer") (param i32) (result i32) local.get 0 call $inner i32.const 1 i32.add)
    (func (export "run") (param i32) (result i32) i32.const 10 local.get 0 i32.div_u)))";
  std::unique_ptr<Instance> inner_instance;
  Trap inner_trap;
  HostRegistry registry("test", 1);
  ASSERT_TRUE(registry
                  .Add({"test",
                        "inner",
                        {{ValType::kI32}, {ValType::kI32}},
                        [&](HostCall& call) {
                          auto r = inner_instance->Call("run", std::vector<WasmValue>{call.i32(0)});
                          if (!r.ok()) {
                            inner_trap = LastTrap(*inner_instance, "run", {call.i32(0)});
                            return call.Fail(TrapKind::kHostError,
                                             "inner: " + r.status().message());
                          }
                          call.results()[0] = (*r)[0];
                          return HostCallOutcome::kComplete;
                        },
                        "runs the inner instance"})
                  .ok());
  Engine engine(registry, {}, Tier::kNative);
  auto module = ParseWat(kWat);
  inner_instance = Instantiate(engine, module);
  auto outer = Instantiate(engine, module);
  ASSERT_TRUE(inner_instance != nullptr && outer != nullptr);

  auto ok = outer->Call("outer", std::vector<WasmValue>{int32_t{2}});
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(std::get<int32_t>((*ok)[0]), 6);

  const Trap trap = LastTrap(*outer, "outer", {int32_t{0}});
  EXPECT_EQ(trap.kind, TrapKind::kHostError);
  EXPECT_EQ(inner_trap.kind, TrapKind::kIntegerDivideByZero);

  auto again = outer->Call("outer", std::vector<WasmValue>{int32_t{5}});
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(std::get<int32_t>((*again)[0]), 3);
}

}  // namespace
}  // namespace reef::wasm::native
