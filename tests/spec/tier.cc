#include "spec/tier.h"

#include <array>
#include <cstdint>
#include <limits>
#include <memory>

#include "wasm/native/code_source.h"

namespace reef::spec {

namespace {

// The spec's own limits where it has them (WebAssembly core spec, 2.3 "Limits": 65,536 pages
// of memory, 2^32 - 1 table elements) instead of Reef's sandbox defaults: a memory or table
// is only allocated as far as a module declares or grows it, and no suite module grows one
// past a few hundred pages or elements. The spec sets no call depth: Reef's default (1,024
// frames) stays, and assert_exhaustion passes with it.
wasm::EngineLimits SpecEngineLimits() {
  wasm::EngineLimits limits;
  limits.max_memory_pages = 65'536;
  limits.max_table_elements = std::numeric_limits<uint32_t>::max();
  return limits;
}

// The longest suite command runs a few million instructions.
constexpr uint64_t kInvocationBudget = 1'000'000'000;

std::unique_ptr<wasm::Engine> MakeInterpreterEngine(const wasm::HostRegistry& registry,
                                                    const wasm::EngineLimits& limits) {
  return std::make_unique<wasm::Engine>(registry, limits);
}

// The suite's ~1,400 modules are tiny and each runs a few calls: compiling them at -O0 costs
// a third of -O1's time, and the generated code's semantics do not depend on the level.
std::unique_ptr<wasm::Engine> MakeNativeEngine(const wasm::HostRegistry& registry,
                                               const wasm::EngineLimits& limits) {
  static const std::shared_ptr<wasm::native::CodeSource> code = [] {
    wasm::native::CodeSourceOptions options;
    options.compile.optimization = 0;
    return *wasm::native::CodeSource::Create(options);  // cannot fail without a cache
  }();
  return std::make_unique<wasm::Engine>(
      registry, limits,
      wasm::EngineOptions{.tier = wasm::TierChoice::kNative, .native_code = code});
}

const std::array<Tier, 2> kTiers = {{
    {"interp", "wabt 1.0.32's interpreter", SpecEngineLimits(), wasm::ModuleLimits{},
     kInvocationBudget, MakeInterpreterEngine},
    {"native", "compiled to machine code through C (at -O0 here)", SpecEngineLimits(),
     wasm::ModuleLimits{}, kInvocationBudget, MakeNativeEngine},
}};

}  // namespace

std::span<const Tier> Tiers() {
  return kTiers;
}

const Tier* FindTier(std::string_view name) {
  for (const Tier& tier : kTiers) {
    if (tier.name == name) return &tier;
  }
  return nullptr;
}

}  // namespace reef::spec
