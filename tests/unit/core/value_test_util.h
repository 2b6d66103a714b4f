// Test helpers for core values: gtest printing and rapidcheck generators of Values that stay
// within a given size, so every generated value is inside the default ValueLimits.
#pragma once

#include <rapidcheck.h>

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/value.h"

namespace reef {

// gtest prints a Value as its JSON text.
inline void PrintTo(const Value& v, std::ostream* os) {
  *os << ValueToJson(v).dump();
}

namespace testing_util {

// Bytes of a hex string such as "f93c00".
inline std::vector<std::uint8_t> Hex(std::string_view hex) {
  std::vector<std::uint8_t> out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<std::uint8_t>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

// Lowercase hex of `bytes`.
inline std::string ToHex(const std::vector<std::uint8_t>& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (std::uint8_t b : bytes) {
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

// The actor ref the codec tests encode: "V1StGXR8_Z5jdHi6B-myT" as a Value.
inline constexpr std::string_view kRefId = "V1StGXR8_Z5jdHi6B-myT";
inline Value RefValue() {
  return Value::Ref(*ActorRef::Parse(kRefId));
}

// A valid actor ref built from `seed` (deterministic).
inline ActorRef RefFromSeed(std::uint64_t seed) {
  std::string id(kNanoIdLength, 'A');
  for (auto& c : id) {
    c = kNanoIdAlphabet[seed & 63];
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  }
  return *ActorRef::Parse(id);
}

// Random UTF-8 text: ASCII (markers and JSON-special characters likely) and multi-byte code
// points of every UTF-8 length.
inline rc::Gen<std::string> GenUtf8() {
  return rc::gen::map(
      rc::gen::container<std::vector<std::uint32_t>>(rc::gen::oneOf(
          rc::gen::elementOf(std::vector<std::uint32_t>{'$', 'a', 'c', 't', 'o', 'r', 'e', 'd', '"',
                                                        '\\', '/', '~', 0, '\n', 0x7f}),
          rc::gen::inRange<std::uint32_t>(0x20, 0x7f), rc::gen::inRange<std::uint32_t>(0x80, 0x800),
          rc::gen::inRange<std::uint32_t>(0xe000, 0x10000),
          rc::gen::inRange<std::uint32_t>(0x10000, 0x110000))),
      [](const std::vector<std::uint32_t>& cps) {
        std::string s;
        for (std::uint32_t cp : cps) {
          if (cp < 0x80) {
            s += static_cast<char>(cp);
          } else if (cp < 0x800) {
            s += static_cast<char>(0xc0 | (cp >> 6));
            s += static_cast<char>(0x80 | (cp & 0x3f));
          } else if (cp < 0x10000) {
            s += static_cast<char>(0xe0 | (cp >> 12));
            s += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
            s += static_cast<char>(0x80 | (cp & 0x3f));
          } else {
            s += static_cast<char>(0xf0 | (cp >> 18));
            s += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
            s += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
            s += static_cast<char>(0x80 | (cp & 0x3f));
          }
        }
        return s;
      });
}

// Random finite doubles, with the interesting ones (integral, half/single-exact, -0.0,
// extremes, subnormals) likely.
inline rc::Gen<double> GenFiniteDouble() {
  return rc::gen::oneOf(
      rc::gen::elementOf(std::vector<double>{0.0, -0.0, 1.0, -1.0, 1.5, 65504.0, 65505.0,
                                             5.960464477539063e-8, 1e300, -1e-300, 0.1,
                                             3.4028234663852886e38, 1.7976931348623157e308,
                                             4.9406564584124654e-324, 9007199254740993.0}),
      rc::gen::map(rc::gen::arbitrary<std::int32_t>(),
                   [](std::int32_t i) { return static_cast<double>(i) / 8; }),
      rc::gen::map(rc::gen::arbitrary<float>(),
                   [](float f) { return std::isfinite(f) ? static_cast<double>(f) : 0.5; }),
      rc::gen::map(rc::gen::arbitrary<std::uint64_t>(), [](std::uint64_t bits) {
        const double d = std::bit_cast<double>(bits);
        return std::isfinite(d) ? d : -2.25;
      }));
}

// Random Values of nesting depth at most `depth`.
inline rc::Gen<Value> GenValue(int depth) {
  auto scalars = rc::gen::oneOf(
      rc::gen::just(Value::Null()), rc::gen::map(rc::gen::arbitrary<bool>(), Value::Bool),
      rc::gen::map(rc::gen::arbitrary<std::int64_t>(), Value::Int),
      rc::gen::map(GenFiniteDouble(), Value::Float),
      rc::gen::map(GenUtf8(), [](std::string s) { return Value::String(std::move(s)); }),
      rc::gen::map(rc::gen::arbitrary<std::uint64_t>(),
                   [](std::uint64_t seed) { return Value::Ref(RefFromSeed(seed)); }));
  if (depth <= 0) return scalars;
  auto child = rc::gen::lazy([depth] { return GenValue(depth - 1); });
  auto keys = rc::gen::oneOf(
      GenUtf8(), rc::gen::elementOf(std::vector<std::string>{"$actor", "$record", "a", "", "$"}));
  return rc::gen::oneOf(
      scalars, scalars,
      rc::gen::map(rc::gen::resize(8, rc::gen::container<List>(child)),
                   [](List items) { return Value::ListOf(std::move(items)); }),
      rc::gen::map(
          rc::gen::resize(8, rc::gen::container<std::map<std::string, Value>>(keys, child)),
          [](const std::map<std::string, Value>& m) {
            return Value::RecordOf(Record(m.begin(), m.end()));
          }));
}

}  // namespace testing_util
}  // namespace reef
