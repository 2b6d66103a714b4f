// The engine tier the unit tests run on: REEF_TEST_ENGINE=interp (the default) or native.
//
// Every engine the actor runtime, the module runtime, the program fleet and the image make
// takes the process's default options (wasm::Engine::SetDefaultOptions); this global test
// environment sets them before the first test, the way `reef serve --engine` does. ctest runs
// the actor, module, program and image suites a second time with REEF_TEST_ENGINE=native
// (tests/CMakeLists.txt, the `unit_native_*` tests), so they pass on both tiers. Engine tests
// that name their tier themselves (tier_param.h) are not affected.
//
// REEF_TEST_NATIVE_CACHE: the native code cache directory, shared by the ctest processes so
// each guest compiles once (default: no disk cache). Compiles run on the code source's
// background workers, as in `reef serve`, never on a reactor thread.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string_view>

#include "unit/engine_tier.h"
#include "wasm/engine.h"
#include "wasm/native/code_source.h"

namespace reef::test_support {
namespace {

class EngineTierEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    const std::string_view name = TestEngineName();
    if (name == "interp") return;
    ASSERT_EQ(name, "native") << "REEF_TEST_ENGINE must be interp or native";
    wasm::native::CodeSourceOptions code;
    if (const char* cache = std::getenv("REEF_TEST_NATIVE_CACHE"); cache != nullptr && *cache) {
      code.cache = cache;
    }
    code.background = true;
    auto source = wasm::native::CodeSource::Create(code);
    ASSERT_TRUE(source.ok()) << source.status().ToString();
    ASSERT_TRUE((*source)->CompilerStatus().ok()) << (*source)->CompilerStatus().ToString();
    wasm::Engine::SetDefaultOptions(
        wasm::EngineOptions{.tier = wasm::TierChoice::kNative, .native_code = *source});
  }

  void TearDown() override {
    if (auto code = wasm::Engine::DefaultOptions().native_code; code != nullptr) code->Shutdown();
  }
};

const auto* const kEnvironment = ::testing::AddGlobalTestEnvironment(new EngineTierEnvironment);

}  // namespace
}  // namespace reef::test_support
