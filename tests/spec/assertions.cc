#include "spec/assertions.h"

#include <fmt/format.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <variant>

namespace reef::spec {

using wasm::TrapKind;
using wasm::WasmValue;

namespace {

// The spec suite's trap messages and the Reef trap kinds that satisfy each. "call stack
// exhausted" is the spec's stack overflow, whichever of Reef's two stacks ran out.
struct TrapRow {
  std::string_view spec_message;
  std::array<TrapKind, 2> kinds;
  size_t count;
};
constexpr std::array<TrapRow, 10> kTrapTable = {{
    {"unreachable", {TrapKind::kUnreachable}, 1},
    {"integer divide by zero", {TrapKind::kIntegerDivideByZero}, 1},
    {"integer overflow", {TrapKind::kIntegerOverflow}, 1},
    {"invalid conversion to integer", {TrapKind::kInvalidConversion}, 1},
    {"out of bounds memory access", {TrapKind::kMemoryOutOfBounds}, 1},
    {"out of bounds table access", {TrapKind::kTableOutOfBounds}, 1},
    // call_indirect with an index past the table's end.
    {"undefined element", {TrapKind::kTableOutOfBounds}, 1},
    // call_indirect reaching a null entry: Reef's kind covers null entries and wrong types.
    {"uninitialized element", {TrapKind::kIndirectCallMismatch}, 1},
    {"indirect call type mismatch", {TrapKind::kIndirectCallMismatch}, 1},
    {"call stack exhausted", {TrapKind::kCallStackExhausted, TrapKind::kValueStackExhausted}, 2},
}};

constexpr std::array<std::string_view, 13> kTrapKindNames = {{
#define REEF_X(name, text, summary) text,
    REEF_TRAP_KINDS(REEF_X)
#undef REEF_X
}};

template <typename Float, typename Bits>
bool MatchesNan(ScriptValue::Pattern pattern, Float value) {
  if (!std::isnan(value)) return false;
  constexpr Bits kQuiet = Bits{1} << (std::numeric_limits<Float>::digits - 2);
  constexpr Bits kPayload = (Bits{1} << (std::numeric_limits<Float>::digits - 1)) - 1;
  const Bits payload = std::bit_cast<Bits>(value) & kPayload;
  return pattern == ScriptValue::Pattern::kCanonicalNan ? payload == kQuiet
                                                        : (payload & kQuiet) != 0;
}

}  // namespace

bool MatchesValue(const ScriptValue& expected, const WasmValue& actual) {
  if (wasm::ValTypeName(wasm::TypeOf(actual)) != expected.type) return false;
  switch (expected.pattern) {
    case ScriptValue::Pattern::kAny:
      return true;
    case ScriptValue::Pattern::kCanonicalNan:
    case ScriptValue::Pattern::kArithmeticNan:
      if (const float* f = std::get_if<float>(&actual)) {
        return MatchesNan<float, uint32_t>(expected.pattern, *f);
      }
      if (const double* d = std::get_if<double>(&actual)) {
        return MatchesNan<double, uint64_t>(expected.pattern, *d);
      }
      return false;
    case ScriptValue::Pattern::kExact:
      break;
  }
  std::optional<WasmValue> want = expected.ToWasmValue();
  return want && CanonicalValue(*want) == CanonicalValue(actual);
}

std::string CompareResults(std::span<const ScriptValue> expected,
                           std::span<const WasmValue> actual) {
  if (expected.size() != actual.size()) {
    return fmt::format("expected {} results, got {}", expected.size(), actual.size());
  }
  std::string diff;
  for (size_t i = 0; i < expected.size(); ++i) {
    if (MatchesValue(expected[i], actual[i])) continue;
    diff += fmt::format("{}result {}: expected {}, got {}", diff.empty() ? "" : "; ", i,
                        expected[i].ToString(), CanonicalValue(actual[i]));
  }
  return diff;
}

std::string CanonicalValue(const WasmValue& value) {
  return std::visit(
      [](auto v) {
        using T = decltype(v);
        constexpr bool kWide = sizeof(T) == 8;
        using Bits = std::conditional_t<kWide, uint64_t, uint32_t>;
        return fmt::format("{}:0x{:0{}x}", wasm::ValTypeName(wasm::TypeOf(WasmValue(v))),
                           std::bit_cast<Bits>(v), kWide ? 16 : 8);
      },
      value);
}

std::string CanonicalResults(std::span<const WasmValue> values) {
  std::string out = "results";
  for (const WasmValue& v : values) out += " " + CanonicalValue(v);
  return out;
}

std::span<const TrapKind> TrapKindsFor(std::string_view spec_message) {
  for (const TrapRow& row : kTrapTable) {
    if (spec_message.starts_with(row.spec_message)) {
      return std::span<const TrapKind>(row.kinds.data(), row.count);
    }
  }
  return {};
}

std::optional<TrapKind> InstantiationTrapKind(const Status& status) {
  if (status.code() != Code::kTrapped) return std::nullopt;
  // "start function trapped: <kind> in `f` at +N: ..." (a Trap::ToString()), or
  // "instantiation trapped: <interpreter message>".
  std::string_view message = status.message();
  size_t colon = message.find(": ");
  std::string_view rest = colon == std::string_view::npos ? message : message.substr(colon + 2);
  for (size_t i = 0; i < kTrapKindNames.size(); ++i) {
    if (rest.starts_with(fmt::format("{} in `", kTrapKindNames[i]))) {
      return static_cast<TrapKind>(i);
    }
  }
  return wasm::ClassifyTrapMessage(rest);
}

}  // namespace reef::spec
