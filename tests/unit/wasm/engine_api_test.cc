// Engine API edges: host functions that run other instances (nested invocations), exported
// globals, a start function that is a host import, and how Instance::Call ends.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "unit/wasm/tier_param.h"
#include "wasm/engine.h"
#include "wasm/native/code_source.h"

namespace reef::wasm {
namespace {

// What `test.inner` runs: export "run" of instances[next], then of instances[next + 1]...
// when that one calls `test.inner` in turn; past the last instance it returns its argument.
struct Chain {
  std::vector<Instance*> instances;
  size_t next = 0;
};

// `test.inner` (above), `test.add`, `test.recv` (suspends), `test.boom` (traps), `test.noop`.
HostRegistry ChainRegistry() {
  HostRegistry registry("test", 1);
  EXPECT_TRUE(registry
                  .Add({"test",
                        "inner",
                        {{ValType::kI32}, {ValType::kI32}},
                        [](HostCall& call) {
                          auto* chain = static_cast<Chain*>(call.context());
                          if (chain->next >= chain->instances.size()) {
                            call.results()[0] = call.i32(0);
                            return HostCallOutcome::kComplete;
                          }
                          Instance* inner = chain->instances[chain->next++];
                          auto result =
                              inner->Call("run", std::vector<WasmValue>{call.i32(0)}, chain);
                          --chain->next;
                          if (!result.ok()) {
                            return call.Fail(TrapKind::kHostError, result.status().message());
                          }
                          call.results()[0] = (*result)[0];
                          return HostCallOutcome::kComplete;
                        },
                        "runs the next instance of the chain"})
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
  EXPECT_TRUE(registry
                  .Add({"test",
                        "recv",
                        {{}, {ValType::kI32}},
                        [](HostCall&) { return HostCallOutcome::kSuspend; },
                        "waits"})
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
                        "noop",
                        {{}, {}},
                        [](HostCall&) { return HostCallOutcome::kComplete; },
                        "does nothing"})
                  .ok());
  return registry;
}

// run(x) = add(inner(x), 10): a host call before and after the nested invocation.
constexpr const char* kChainLink = R"((module
  (import "test" "inner" (func $inner (param i32) (result i32)))
  (import "test" "add" (func $add (param i32 i32) (result i32)))
  (func (export "run") (param i32) (result i32)
    (call $add (call $inner (local.get 0)) (i32.const 10)))))";

class EngineApiTest : public ::testing::TestWithParam<Tier> {
 protected:
  std::shared_ptr<const Module> Load(const char* wat) {
    auto module = Module::FromText(wat, "test.wat");
    EXPECT_TRUE(module.ok()) << module.status().ToString();
    return *module;
  }

  // `count` instances of kChainLink on `engine`.
  std::vector<std::unique_ptr<Instance>> Links(Engine& engine, size_t count) {
    auto module = Load(kChainLink);
    std::vector<std::unique_ptr<Instance>> out;
    for (size_t i = 0; i < count; ++i) {
      auto instance = engine.Instantiate(module);
      EXPECT_TRUE(instance.ok()) << instance.status().ToString();
      out.push_back(std::move(*instance));
    }
    return out;
  }

  HostRegistry registry_ = ChainRegistry();
};

TEST_P(EngineApiTest, AHostFunctionRunsAnotherInstanceAndTheCallerKeepsCallingTheHost) {
  // Given an outer instance whose host function runs an inner instance of the same engine,
  Engine engine(registry_, {}, GetParam());
  auto links = Links(engine, 2);
  Chain chain{{links[1].get()}};
  // when the outer one runs (inner: 5 + 10; outer: that + 10),
  auto result = links[0]->Call("run", std::vector<WasmValue>{int32_t{5}}, &chain);
  // then both complete, and the outer one's host call after the nested run still works.
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(std::get<int32_t>((*result)[0]), 25);
  // And again: nothing was left behind by the nested run.
  auto again = links[0]->Call("run", std::vector<WasmValue>{int32_t{1}}, &chain);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(std::get<int32_t>((*again)[0]), 21);
}

TEST_P(EngineApiTest, NestingPastTheLimitTrapsBeforeTheInnerInvocationRuns) {
  EngineLimits limits;
  limits.max_nested_invocations = 3;
  Engine engine(registry_, limits, GetParam());
  auto links = Links(engine, 5);
  Chain chain{{links[1].get(), links[2].get(), links[3].get(), links[4].get()}};
  auto result = links[0]->Call("run", std::vector<WasmValue>{int32_t{0}}, &chain);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), Code::kTrapped);
  EXPECT_NE(result.status().message().find("3 invocations are already running on this engine"),
            std::string::npos)
      << result.status().message();
  EXPECT_NE(result.status().message().find("limit max_nested_invocations=3"), std::string::npos);
  // Within the limit the same chain works.
  Chain shorter{{links[1].get(), links[2].get()}};
  auto fine = links[0]->Call("run", std::vector<WasmValue>{int32_t{0}}, &shorter);
  ASSERT_TRUE(fine.ok()) << fine.status().ToString();
  EXPECT_EQ(std::get<int32_t>((*fine)[0]), 30);
}

TEST_P(EngineApiTest, AHostFunctionCannotRunItsOwnInstanceAgain) {
  Engine engine(registry_, {}, GetParam());
  auto links = Links(engine, 1);
  Chain chain{{links[0].get()}};
  auto result = links[0]->Call("run", std::vector<WasmValue>{int32_t{0}}, &chain);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("another invocation of this instance is active"),
            std::string::npos)
      << result.status().message();
}

TEST_P(EngineApiTest, ExportedGlobalsAreReadable) {
  Engine engine(registry_, {}, GetParam());
  auto instance = engine.Instantiate(Load(R"((module
    (global $g (export "g") (mut i32) (i32.const 7))
    (global (export "f") f64 (f64.const 1.5))
    (global (export "r") externref (ref.null extern))
    (func (export "set") (global.set $g (i32.const 9)))))"));
  ASSERT_TRUE(instance.ok()) << instance.status().ToString();
  auto g = (*instance)->GetGlobal("g");
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(std::get<int32_t>(*g), 7);
  auto f = (*instance)->GetGlobal("f");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(std::get<double>(*f), 1.5);
  ASSERT_TRUE((*instance)->Call("set", {}).ok());
  EXPECT_EQ(std::get<int32_t>(*(*instance)->GetGlobal("g")), 9);

  EXPECT_EQ((*instance)->GetGlobal("r").status().code(), Code::kInvalidArgument);
  EXPECT_EQ((*instance)->GetGlobal("set").status().message(), "export `set` is not a global");
  EXPECT_EQ((*instance)->GetGlobal("nope").status().message(),
            "module has no global export `nope`");
}

TEST_P(EngineApiTest, AStartFunctionThatIsAHostImportIsReportedAsSuch) {
  Engine engine(registry_, {}, GetParam());
  auto instance = engine.Instantiate(Load(R"((module
    (import "test" "noop" (func $noop))
    (start $noop)))"));
  ASSERT_FALSE(instance.ok());
  EXPECT_EQ(instance.status().code(), Code::kTrapped);
  EXPECT_EQ(instance.status().message(),
            "start function trapped: host_error in `test.noop` at +0: test.noop called from a "
            "start function; host imports are available only in invocations");
}

// Call runs to the end in one go (on the native tier without a fiber): every way it can end
// reports what Start + one Run report, and the instance is free for the next call after each.
TEST_P(EngineApiTest, CallEndsAsStartAndRunWouldAndLeavesTheInstanceReady) {
  EngineLimits limits;
  limits.max_call_depth = 50;
  Engine engine(registry_, limits, GetParam());
  auto loaded = engine.Instantiate(Load(R"((module
    (import "test" "recv" (func $recv (result i32)))
    (import "test" "add" (func $add (param i32 i32) (result i32)))
    (import "test" "boom" (func $boom))
    (func (export "sum") (param i32 i32) (result i32) (call $add (local.get 0) (local.get 1)))
    (func (export "wait") (result i32) (call $recv))
    (func (export "boom") (call $boom))
    (func $down (export "down") (param $n i32) (result i32)
      (if (result i32) (i32.eqz (local.get $n))
        (then (i32.const 0))
        (else (i32.add (i32.const 1) (call $down (i32.sub (local.get $n) (i32.const 1)))))))
    (func (export "spin") (loop $l (br $l)))))"));
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  Instance* instance = loaded->get();
  for (int round = 0; round < 2; ++round) {
    auto sum = instance->Call("sum", std::vector<WasmValue>{int32_t{40}, int32_t{2}});
    ASSERT_TRUE(sum.ok()) << sum.status().ToString();
    EXPECT_EQ(std::get<int32_t>((*sum)[0]), 42);

    auto waited = instance->Call("wait", {});
    EXPECT_EQ(waited.status().code(), Code::kFailedPrecondition);
    EXPECT_EQ(waited.status().message(),
              "`wait` suspended in host call test.recv; use Start/Run to drive it");

    auto boom = instance->Call("boom", {});
    EXPECT_EQ(boom.status().code(), Code::kTrapped);
    EXPECT_NE(boom.status().message().find("boom refused"), std::string::npos)
        << boom.status().ToString();

    auto deep = instance->Call("down", std::vector<WasmValue>{int32_t{50}});
    EXPECT_EQ(deep.status().code(), Code::kTrapped);
    EXPECT_NE(deep.status().message().find("call stack exhausted"), std::string::npos)
        << deep.status().ToString();
    auto shallow = instance->Call("down", std::vector<WasmValue>{int32_t{48}});
    ASSERT_TRUE(shallow.ok()) << shallow.status().ToString();
    EXPECT_EQ(std::get<int32_t>((*shallow)[0]), 48);

    auto spun = instance->Call("spin", {}, nullptr, 10'000);
    EXPECT_EQ(spun.status().code(), Code::kLimitExceeded);
    EXPECT_EQ(spun.status().message(),
              "`spin` did not finish within its budget of 10000 instructions");
  }
  // While a resumable invocation is active, Call refuses like Start.
  auto waiting = instance->Start("wait", {});
  ASSERT_TRUE(waiting.ok());
  ASSERT_EQ((*waiting)->Run(1'000), RunState::kSuspended);
  EXPECT_EQ(instance->Call("sum", std::vector<WasmValue>{int32_t{1}, int32_t{2}}).status().code(),
            Code::kFailedPrecondition);
}

class EngineStartTest : public ::testing::TestWithParam<Tier> {};

TEST_P(EngineStartTest, StartFunctionRunsUnderABudget) {
  HostRegistry registry("test", 1);
  EngineLimits limits;
  limits.max_start_instructions = 1'000'000;  // the default, 10^8, takes seconds here
  Engine engine(registry, limits, GetParam());
  auto looping =
      engine.Instantiate(*Module::FromText("(module (func $s (loop $l (br $l))) (start $s))"));
  ASSERT_FALSE(looping.ok());
  EXPECT_EQ(looping.status().code(), Code::kLimitExceeded);
  auto trapping =
      engine.Instantiate(*Module::FromText("(module (func $s unreachable) (start $s))"));
  ASSERT_FALSE(trapping.ok());
  EXPECT_EQ(trapping.status().code(), Code::kTrapped);
  auto fine = engine.Instantiate(*Module::FromText(R"((module (global $g (mut i32) (i32.const 0))
    (func $s (global.set $g (i32.const 5))) (start $s)
    (func (export "g") (result i32) (global.get $g))))"));
  ASSERT_TRUE(fine.ok()) << fine.status().ToString();
  auto g = (*fine)->Call("g", {});
  EXPECT_EQ(std::get<int32_t>((*g)[0]), 5);
}

TEST(EngineTierTest, TiersHaveOneStableNameEach) {
  EXPECT_EQ(TierName(Tier::kInterp), "interp");
  EXPECT_EQ(TierName(Tier::kNative), "native");
  EXPECT_EQ(ParseTier("interp"), Tier::kInterp);
  EXPECT_EQ(ParseTier("native"), Tier::kNative);
  EXPECT_EQ(ParseTier("Native"), std::nullopt);
  EXPECT_EQ(ParseTier(""), std::nullopt);
}

TEST(EngineTierTest, AnEngineSaysWhichTierRunsItsInstances) {
  HostRegistry registry("test", 1);
  Engine engine(registry);
  EXPECT_EQ(engine.tier_choice(), TierChoice::kInterp);
  Engine native(registry, {}, Tier::kNative);
  EXPECT_EQ(native.tier_choice(), TierChoice::kNative);
  auto module = Module::FromText("(module (func (export \"f\")))");
  ASSERT_TRUE(module.ok());
  EXPECT_EQ((*engine.Instantiate(*module))->tier(), Tier::kInterp);
  EXPECT_EQ((*native.Instantiate(*module))->tier(), Tier::kNative);
}

TEST(EngineTierTest, AutoStartsOnTheInterpreterAndMovesToNativeCodeOnceCompiled) {
  HostRegistry registry("test", 1);
  // A source of its own, so no other test has compiled the module yet. Without a compile
  // service its Request compiles on the calling thread, before Instantiate returns.
  auto code = native::CodeSource::Create({});
  ASSERT_TRUE(code.ok()) << code.status().ToString();
  Engine engine(registry, {}, EngineOptions{.tier = TierChoice::kAuto, .native_code = *code});
  auto module = Module::FromText(
      R"((module (func (export "add") (param i32 i32) (result i32)
           (i32.add (local.get 0) (local.get 1)))))");
  ASSERT_TRUE(module.ok());

  auto first = engine.Instantiate(*module);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ((*first)->tier(), Tier::kInterp) << "the first instance does not wait for a compile";
  EXPECT_TRUE(engine.Outdated(**first)) << "its native code is ready now";
  auto second = engine.Instantiate(*module);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ((*second)->tier(), Tier::kNative);
  EXPECT_FALSE(engine.Outdated(**second));
  for (auto* instance : {first->get(), second->get()}) {
    auto sum = instance->Call("add", std::vector<WasmValue>{int32_t{2}, int32_t{40}});
    ASSERT_TRUE(sum.ok()) << sum.status().ToString();
    EXPECT_EQ(std::get<int32_t>((*sum)[0]), 42);
  }
  EXPECT_EQ((*code)->stats().compiled, 1u);
}

REEF_INSTANTIATE_FOR_EVERY_TIER(EngineApiTest);
REEF_INSTANTIATE_FOR_EVERY_TIER(EngineStartTest);

}  // namespace
}  // namespace reef::wasm
