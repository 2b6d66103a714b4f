// Running an engine test suite on every engine tier: TEST_P suites take the tier as their
// parameter and instantiate with REEF_INSTANTIATE_FOR_EVERY_TIER(Suite); the test names end
// in /interp and /native.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "wasm/tier.h"

namespace reef::wasm::testing {

inline std::string TierParamName(const ::testing::TestParamInfo<Tier>& info) {
  return std::string(TierName(info.param));
}

}  // namespace reef::wasm::testing

#define REEF_INSTANTIATE_FOR_EVERY_TIER(suite)                                                   \
  INSTANTIATE_TEST_SUITE_P(                                                                      \
      Tiers, suite, ::testing::Values(::reef::wasm::Tier::kInterp, ::reef::wasm::Tier::kNative), \
      ::reef::wasm::testing::TierParamName)
