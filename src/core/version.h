// Reef's version, as `reef --version` and GET /status give it.
#pragma once

#include <string_view>

namespace reef {

inline constexpr std::string_view kReefVersion = "0.1.0";

}  // namespace reef
