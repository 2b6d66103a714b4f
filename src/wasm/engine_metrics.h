// The engine's series of GET /metrics: which tier runs guest code and how the native tier's
// compiles fare (docs/http-api.md "Engine metrics", docs/engine.md "Tiers").
//
// Thread ownership: a pure function of `options` and the code source's counters; any thread.
#pragma once

#include "core/metrics.h"
#include "wasm/engine.h"

namespace reef::wasm {

// Adds reef_engine_tier_choice and, unless `options.tier` is kInterp or there is no code
// source, the reef_native_* series of `options.native_code` to `out`. `reef serve` registers
// it, with Engine::DefaultOptions(), as a MetricsCollector.
void CollectEngineMetrics(const EngineOptions& options, MetricFamilies& out);

}  // namespace reef::wasm
