#include "wasm/engine_metrics.h"

#include <string>

#include "wasm/native/code_source.h"
#include "wasm/tier.h"

namespace reef::wasm {

namespace {

// Labelled choice: auto, native or interp.
constexpr MetricDesc kTierChoice{
    "reef_engine_tier_choice", MetricType::kGauge,
    "The engine tier in effect (reef serve --engine); 1 for the choice in effect"};
constexpr MetricDesc kNativeCompilerAvailable{
    "reef_native_compiler_available", MetricType::kGauge,
    "1 when a C compiler was found for the native tier, else 0 (modules stay interpreted)"};
constexpr MetricDesc kNativeCompiled{"reef_native_modules_compiled_total", MetricType::kCounter,
                                     "Modules compiled to native code by the C compiler"};
constexpr MetricDesc kNativeCached{
    "reef_native_modules_cached_total", MetricType::kCounter,
    "Modules whose native code was loaded from the native code cache (reef serve --native-cache)"};
constexpr MetricDesc kNativeCompileFailures{
    "reef_native_compile_failures_total", MetricType::kCounter,
    "Modules whose native compile failed (they run on the interpreter)"};
constexpr MetricDesc kNativeCompilesPending{"reef_native_compiles_pending", MetricType::kGauge,
                                            "Native compiles requested and not finished"};
constexpr MetricDesc kNativeLoaded{"reef_native_modules_loaded", MetricType::kGauge,
                                   "Modules whose native code is loaded now"};

}  // namespace

void CollectEngineMetrics(const EngineOptions& options, MetricFamilies& out) {
  out.Add(kTierChoice, {{"choice", std::string(TierChoiceName(options.tier))}}, uint64_t{1});
  if (options.tier == TierChoice::kInterp || options.native_code == nullptr) return;
  const native::CodeSourceStats stats = options.native_code->stats();
  out.Add(kNativeCompilerAvailable, {},
          uint64_t{options.native_code->CompilerStatus().ok() ? 1u : 0u});
  out.Add(kNativeCompiled, {}, stats.compiled);
  out.Add(kNativeCached, {}, stats.from_cache);
  out.Add(kNativeCompileFailures, {}, stats.failed);
  out.Add(kNativeCompilesPending, {}, stats.pending);
  out.Add(kNativeLoaded, {}, stats.loaded);
}

}  // namespace reef::wasm
