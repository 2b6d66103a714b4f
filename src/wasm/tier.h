// Engine tiers: the ways an Engine can run guest code.
//
// Thread ownership: plain values; any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace reef::wasm {

// The engine tiers, one row each: enumerator, stable name (CLI, protocol, metrics), summary.
#define REEF_ENGINE_TIERS(X)                                              \
  X(kInterp, "interp", "wabt's interpreter: starts at once, runs slowly") \
  X(kNative, "native", "compiled ahead of time to machine code through C")

enum class Tier : uint8_t {
#define REEF_X(name, text, summary) name,
  REEF_ENGINE_TIERS(REEF_X)
#undef REEF_X
};

// "interp", "native".
std::string_view TierName(Tier tier);
std::string_view TierSummary(Tier tier);
// The tier named `name` exactly; nullopt for anything else.
std::optional<Tier> ParseTier(std::string_view name);

// How an engine picks each module's tier (`reef serve --engine`, REEF_ENGINE): one tier for
// everything, or `auto`: a module starts on the interpreter at once and its new instances
// run native code once its compile has finished (where no C compiler is installed, it stays
// on the interpreter).
#define REEF_TIER_CHOICES(X)                                                      \
  X(kAuto, "auto", "interpreter at once, native code once compiled; the default") \
  X(kInterp, "interp", "the interpreter only")                                    \
  X(kNative, "native", "native code only: each module is compiled before it first runs")

enum class TierChoice : uint8_t {
#define REEF_X(name, text, summary) name,
  REEF_TIER_CHOICES(REEF_X)
#undef REEF_X
};

// "auto", "interp", "native".
std::string_view TierChoiceName(TierChoice choice);
std::string_view TierChoiceSummary(TierChoice choice);
// The choice named `name` exactly; nullopt for anything else.
std::optional<TierChoice> ParseTierChoice(std::string_view name);

}  // namespace reef::wasm
