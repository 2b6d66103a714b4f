// The engine tier the unit tests run on (REEF_TEST_ENGINE; engine_tier_environment.cc).
// Test-only; any thread.
#pragma once

#include <cstdlib>
#include <string_view>

#include "wasm/tier.h"

namespace reef::test_support {

// "interp" (REEF_TEST_ENGINE unset or empty) or the variable's value as given.
inline std::string_view TestEngineName() {
  const char* name = std::getenv("REEF_TEST_ENGINE");
  return name == nullptr || *name == '\0' ? std::string_view("interp") : std::string_view(name);
}

inline wasm::Tier TestTier() {
  return TestEngineName() == "native" ? wasm::Tier::kNative : wasm::Tier::kInterp;
}

}  // namespace reef::test_support
