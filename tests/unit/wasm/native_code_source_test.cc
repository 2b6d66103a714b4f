// CodeSource: native code for every engine of a process, compiled in the background and kept
// in the disk cache across restarts.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "unit/wasm/native_support.h"
#include "wasm/native/code_source.h"

namespace reef::wasm::native {
namespace {

using native_test::ParseWat;

constexpr std::string_view kTwiceWat = R"((module
  (func (export "twice") (param i32) (result i32) (i32.mul (local.get 0) (i32.const 2)))))";

class NativeCodeSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto temp = TempDir::Create();
    ASSERT_TRUE(temp.ok()) << temp.status().ToString();
    temp_ = std::make_unique<TempDir>(std::move(*temp));
  }

  std::shared_ptr<CodeSource> Source(bool background) {
    CodeSourceOptions options;
    options.compile.optimization = 0;
    options.cache = temp_->path() / "cache" / "native";
    options.background = background;
    options.service.workers = 1;
    auto source = CodeSource::Create(options);
    EXPECT_TRUE(source.ok()) << source.status().ToString();
    return source.ok() ? *source : nullptr;
  }

  std::unique_ptr<TempDir> temp_;
};

TEST_F(NativeCodeSourceTest, RequestCompilesInTheBackgroundAndARestartLoadsFromTheCache) {
  auto module = ParseWat(kTwiceWat);
  {
    auto source = Source(/*background=*/true);
    ASSERT_NE(source, nullptr);
    EXPECT_EQ(source->Find(*module), nullptr);
    source->Request(module);  // returns at once
    source->Request(module);  // already pending: nothing more
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (source->Find(*module) == nullptr && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_NE(source->Find(*module), nullptr);
    EXPECT_EQ(source->stats().compiled, 1u);
    EXPECT_EQ(source->stats().pending, 0u);
  }
  // A new process (a new source over the same directory) loads the cached library.
  auto restarted = Source(/*background=*/false);
  ASSERT_NE(restarted, nullptr);
  auto code = restarted->Get(module);
  ASSERT_TRUE(code.ok()) << code.status().ToString();
  EXPECT_EQ(restarted->stats().from_cache, 1u);
  EXPECT_EQ(restarted->stats().compiled, 0u);

  HostRegistry registry("test", 1);
  Engine engine(registry, {}, EngineOptions{.tier = TierChoice::kNative, .native_code = restarted});
  auto instance = engine.Instantiate(module);
  ASSERT_TRUE(instance.ok()) << instance.status().ToString();
  auto result = (*instance)->Call("twice", std::vector<WasmValue>{int32_t{21}});
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(std::get<int32_t>((*result)[0]), 42);
}

TEST_F(NativeCodeSourceTest, AModuleThatDoesNotCompileFailsOnceAndStaysOnTheInterpreterInAuto) {
  // Without a C compiler every compile fails: the module is remembered as failed, and an
  // auto engine keeps it on the interpreter.
  CodeSourceOptions options;
  options.compile.compiler = "no-such-compiler-for-reef";
  auto source = CodeSource::Create(options);
  ASSERT_TRUE(source.ok());
  EXPECT_EQ((*source)->CompilerStatus().code(), Code::kNotFound);
  auto module = ParseWat(kTwiceWat);

  HostRegistry registry("test", 1);
  Engine engine(registry, {}, EngineOptions{.tier = TierChoice::kAuto, .native_code = *source});
  for (int i = 0; i < 2; ++i) {
    auto instance = engine.Instantiate(module);
    ASSERT_TRUE(instance.ok()) << instance.status().ToString();
    EXPECT_EQ((*instance)->tier(), Tier::kInterp);
    EXPECT_FALSE(engine.Outdated(**instance));
  }
  EXPECT_EQ((*source)->stats().failed, 1u);
  auto direct = (*source)->Get(module);
  EXPECT_EQ(direct.status().code(), Code::kNotFound) << direct.status().ToString();

  Engine native(registry, {}, EngineOptions{.tier = TierChoice::kNative, .native_code = *source});
  auto refused = native.Instantiate(module);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("no C compiler"), std::string::npos)
      << refused.status().ToString();
}

}  // namespace
}  // namespace reef::wasm::native
