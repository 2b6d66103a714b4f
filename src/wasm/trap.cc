#include "wasm/trap.h"

#include <fmt/format.h>

#include <array>
#include <utility>

namespace reef::wasm {

std::string_view TrapKindName(TrapKind kind) {
  switch (kind) {
#define REEF_X(name, text, summary) \
  case TrapKind::name:              \
    return text;
    REEF_TRAP_KINDS(REEF_X)
#undef REEF_X
  }
  return "other";
}

std::string_view TrapKindSummary(TrapKind kind) {
  switch (kind) {
#define REEF_X(name, text, summary) \
  case TrapKind::name:              \
    return summary;
    REEF_TRAP_KINDS(REEF_X)
#undef REEF_X
  }
  return "";
}

std::string Trap::ToString() const {
  return fmt::format("{} in `{}` at +{}: {}", TrapKindName(kind), function, offset, message);
}

TrapKind ClassifyTrapMessage(std::string_view message) {
  // Message prefixes of wabt 1.0.32's interpreter (src/interp/interp.cc, interp-math.h).
  static constexpr std::array<std::pair<std::string_view, TrapKind>, 11> kPrefixes = {{
      {"unreachable", TrapKind::kUnreachable},
      {"out of bounds memory access", TrapKind::kMemoryOutOfBounds},
      {"out of bounds table access", TrapKind::kTableOutOfBounds},
      {"undefined table index", TrapKind::kTableOutOfBounds},
      {"uninitialized table element", TrapKind::kIndirectCallMismatch},
      {"indirect call signature mismatch", TrapKind::kIndirectCallMismatch},
      {"integer divide by zero", TrapKind::kIntegerDivideByZero},
      {"integer overflow", TrapKind::kIntegerOverflow},
      {"invalid conversion to integer", TrapKind::kInvalidConversion},
      {"call stack exhausted", TrapKind::kCallStackExhausted},
      {"value stack exhausted", TrapKind::kValueStackExhausted},
  }};
  for (const auto& [prefix, kind] : kPrefixes) {
    if (message.starts_with(prefix)) return kind;
  }
  return TrapKind::kOther;
}

}  // namespace reef::wasm
