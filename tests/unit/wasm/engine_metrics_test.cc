// The engine's series of GET /metrics (wasm/engine_metrics.h; docs/http-api.md "Engine
// metrics"), rendered as /metrics renders them.
#include "wasm/engine_metrics.h"

#include <gtest/gtest.h>

#include <string>

#include "wasm/native/code_source.h"

namespace reef::wasm {
namespace {

std::string RenderedEngineMetrics(const EngineOptions& options) {
  MetricFamilies families;
  CollectEngineMetrics(options, families);
  Result<std::string> text = RenderPrometheusText(families);
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  return text.ok() ? *text : std::string();
}

TEST(EngineMetricsTest, TheInterpreterShowsOnlyTheTierChoice) {
  const std::string text = RenderedEngineMetrics({.tier = TierChoice::kInterp});
  EXPECT_NE(text.find("# TYPE reef_engine_tier_choice gauge\n"
                      "reef_engine_tier_choice{choice=\"interp\"} 1\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("reef_native_"), std::string::npos) << text;
}

TEST(EngineMetricsTest, AutoWithACodeSourceShowsTheNativeTiersSeries) {
  const std::string text = RenderedEngineMetrics(
      {.tier = TierChoice::kAuto, .native_code = native::CodeSource::Default()});
  EXPECT_NE(text.find("reef_engine_tier_choice{choice=\"auto\"} 1\n"), std::string::npos);
  for (const char* line : {"# TYPE reef_native_compiler_available gauge\n",
                           "# TYPE reef_native_modules_compiled_total counter\n",
                           "# TYPE reef_native_modules_cached_total counter\n",
                           "# TYPE reef_native_compile_failures_total counter\n",
                           "# TYPE reef_native_compiles_pending gauge\n",
                           "# TYPE reef_native_modules_loaded gauge\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << " in\n" << text;
  }
}

}  // namespace
}  // namespace reef::wasm
