// CodeSource: native code for every engine of a process, compiled in the background and kept
// in the disk cache across restarts.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <mutex>
#include <thread>
#include <vector>

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

  std::shared_ptr<CodeSource> Source(bool background,
                                     std::function<void(const CodeOutcome&)> on_outcome = {}) {
    CodeSourceOptions options;
    options.on_outcome = std::move(on_outcome);
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

// What `reef serve` logs: each compile, rebuild and failure is told once, with the module's
// id and size; a cache hit is not.
TEST_F(NativeCodeSourceTest, CompilesRebuildsAndFailuresAreToldOnceEach) {
  auto module = ParseWat(kTwiceWat);
  std::mutex mu;
  std::vector<CodeOutcome> told;
  auto tell = [&](const CodeOutcome& outcome) {
    std::lock_guard lock(mu);
    told.push_back(outcome);
  };
  auto told_now = [&] {
    std::lock_guard lock(mu);
    return told;
  };
  {
    auto source = Source(/*background=*/true, tell);
    ASSERT_NE(source, nullptr);
    ASSERT_TRUE(source->Get(module).ok());
    ASSERT_TRUE(source->Get(module).ok());  // loaded: nothing to tell
  }
  std::vector<CodeOutcome> first = told_now();
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].outcome, "compiled");
  EXPECT_EQ(first[0].module_id, module->id());
  EXPECT_EQ(first[0].wasm_bytes, module->bytes().size());
  EXPECT_GT(first[0].cpu_seconds, 0);
  EXPECT_EQ(first[0].detail, "");

  // A restart that loads the cached library tells nothing.
  ASSERT_TRUE(Source(/*background=*/false, tell)->Get(module).ok());
  ASSERT_EQ(told_now().size(), 1u);

  // A damaged library is rebuilt, and the reason is told.
  std::filesystem::path library;
  for (const auto& entry :
       std::filesystem::directory_iterator(temp_->path() / "cache" / "native")) {
    if (entry.path().extension() == ".so") library = entry.path();
  }
  ASSERT_FALSE(library.empty());
  std::string bytes;
  {
    std::ifstream in(library, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  ASSERT_FALSE(bytes.empty());
  bytes[bytes.size() / 2] ^= 0x5a;
  std::ofstream(library, std::ios::binary | std::ios::trunc) << bytes;
  ASSERT_TRUE(Source(/*background=*/false, tell)->Get(module).ok());
  std::vector<CodeOutcome> second = told_now();
  ASSERT_EQ(second.size(), 2u);
  EXPECT_EQ(second[1].outcome, "rebuilt");
  EXPECT_NE(second[1].detail.find("SHA-256 differs"), std::string::npos) << second[1].detail;

  // A compile that fails is told once, with the error; asking again tells nothing new.
  CodeSourceOptions failing;
  failing.compile.compiler = "no-such-compiler-for-reef";
  failing.on_outcome = tell;
  auto no_compiler = CodeSource::Create(failing);
  ASSERT_TRUE(no_compiler.ok());
  EXPECT_FALSE((*no_compiler)->Get(module).ok());
  EXPECT_FALSE((*no_compiler)->Get(module).ok());
  std::vector<CodeOutcome> third = told_now();
  ASSERT_EQ(third.size(), 3u);
  EXPECT_EQ(third[2].outcome, "failed");
  EXPECT_NE(third[2].detail.find("no-such-compiler-for-reef"), std::string::npos)
      << third[2].detail;
}

}  // namespace
}  // namespace reef::wasm::native
