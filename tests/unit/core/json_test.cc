#include "core/json.h"

#include <gtest/gtest.h>

#include <string>

#include "value_test_util.h"

namespace reef {
namespace {

using testing_util::kRefId;
using testing_util::RefValue;

Value Parse(std::string_view text, const ValueLimits& limits = {}) {
  auto v = ValueFromJson(text, limits);
  EXPECT_TRUE(v.ok()) << text << ": " << v.status().ToString();
  return v.ok() ? *v : Value::String("<error>");
}

std::string Text(const Value& v, const ValueLimits& limits = {}) {
  auto text = ValueToJsonText(v, limits);
  if (!text.ok()) return "error: " + text.status().ToString();
  return *text;
}

// Asserts that `text` is rejected with `code` and a message containing `fragment`.
void ExpectRejected(std::string_view text, std::string_view fragment,
                    Code code = Code::kInvalidArgument, const ValueLimits& limits = {}) {
  auto v = ValueFromJson(text, limits);
  ASSERT_FALSE(v.ok()) << text << " parsed";
  EXPECT_EQ(v.status().code(), code) << text << ": " << v.status().ToString();
  EXPECT_NE(v.status().message().find(fragment), std::string::npos)
      << text << ": " << v.status().message();
}

// ---- Plain JSON ---------------------------------------------------------------------------

TEST(JsonTest, ScalarsMapToTheirKinds) {
  EXPECT_EQ(Parse("null"), Value::Null());
  EXPECT_EQ(Parse("true"), Value::Bool(true));
  EXPECT_EQ(Parse("false"), Value::Bool(false));
  EXPECT_EQ(Parse("\"h\\u00e9\""), Value::String("h\u00e9"));
  EXPECT_EQ(Parse(" [1, \"a\"] "), Value::ListOf({Value::Int(1), Value::String("a")}));
  EXPECT_EQ(Parse("{\"b\": {}, \"a\": []}"),
            Value::RecordOf({{"a", Value::ListOf({})}, {"b", Value::RecordOf({})}}));
}

TEST(JsonTest, IntegerLiteralsAreInts) {
  EXPECT_EQ(Parse("0"), Value::Int(0));
  EXPECT_EQ(Parse("-0"), Value::Int(0));
  EXPECT_EQ(Parse("9223372036854775807"), Value::Int(INT64_MAX));
  EXPECT_EQ(Parse("-9223372036854775808"), Value::Int(INT64_MIN));
}

TEST(JsonTest, LiteralsWithFractionOrExponentAreFloats) {
  EXPECT_EQ(Parse("1.0"), Value::Float(1.0));
  EXPECT_EQ(Parse("1e2"), Value::Float(100.0));
  EXPECT_EQ(Parse("1E-2"), Value::Float(0.01));
  EXPECT_EQ(Parse("-0.0"), Value::Float(-0.0));
  EXPECT_EQ(Parse("1e19"), Value::Float(1e19));
}

TEST(JsonTest, RejectsIntegersOutsideInt64) {
  ExpectRejected("9223372036854775808", "integer 9223372036854775808 is outside the int64 range");
  ExpectRejected("-9223372036854775809", "integer -9223372036854775809 is outside the int64");
  ExpectRejected("[99999999999999999999]", "at /0: integer 99999999999999999999 is outside");
}

TEST(JsonTest, RejectsNumbersBeyondFloat64NamingTheNumberRule) {
  ExpectRejected("1e400",
                 "invalid JSON at byte offset 5: number 1e400 is outside the float64 range "
                 "(JSON numbers must be exact int64 or finite float64)");
  ExpectRejected("[-1.5e999]", "number -1.5e999 is outside the float64 range");
}

TEST(JsonTest, RefusesNumbersThatWouldChangeInsteadOfRoundingThem) {
  // Integers past int64 (unsigned or not) and floats that underflow are refused by one rule.
  ExpectRejected("12345678901234567890", "integer 12345678901234567890 is outside the int64 range");
  ExpectRejected("18446744073709551615", "outside the int64 range");
  ExpectRejected("18446744073709551616", "outside the int64 range");
  ExpectRejected("1e-400", "number 1e-400 is too close to zero for a float64");
  ExpectRejected("[2e-324]", "at /0: number 2e-324 is too close to zero");
  // Zero in any spelling, and the extremes of the ranges, are kept exactly.
  EXPECT_EQ(Parse("0e-999"), Value::Float(0.0));
  EXPECT_EQ(Parse("-0.000e5"), Value::Float(-0.0));
  EXPECT_EQ(Parse("2.2250738585072014e-308"), Value::Float(2.2250738585072014e-308));
  EXPECT_EQ(Parse("4.9406564584124654e-324"), Value::Float(4.9406564584124654e-324));
  EXPECT_EQ(Parse("9223372036854775807"), Value::Int(INT64_MAX));
  EXPECT_EQ(Parse("-9223372036854775808"), Value::Int(INT64_MIN));
}

TEST(JsonTest, FloatsWithIntegralValueAreWrittenAsFloats) {
  EXPECT_EQ(Text(Value::Float(1.0)), "1.0");
  EXPECT_EQ(Text(Value::Float(-0.0)), "-0.0");
  EXPECT_EQ(Text(Value::Float(1e20)), "1e+20");
  EXPECT_EQ(Text(Value::Int(1)), "1");
  EXPECT_EQ(Parse(Text(Value::Float(1e20))), Value::Float(1e20));
  EXPECT_EQ(Parse(Text(Value::Float(123456789012345678.0))), Value::Float(123456789012345678.0));
}

TEST(JsonTest, FloatsRoundTripExactly) {
  for (double d : {0.1, 1.0 / 3, 5e-324, 1.7976931348623157e308, -2.5e-10}) {
    EXPECT_EQ(Parse(Text(Value::Float(d))), Value::Float(d)) << d;
  }
}

TEST(JsonTest, RejectsDuplicateObjectKeys) {
  ExpectRejected("{\"a\": 1, \"a\": 2}", "at /a: duplicate object key");
}

TEST(JsonTest, RejectsInvalidUtf8NamingTheOffset) {
  ExpectRejected("[\"ok\", \"\xff\"]", "invalid JSON at byte offset");
  ExpectRejected("{\"\xc0\xaf\": 1}", "invalid JSON at byte offset");
}

TEST(JsonTest, RejectsMalformedText) {
  ExpectRejected("", "invalid JSON at byte offset");
  ExpectRejected("[1,", "invalid JSON at byte offset");
  ExpectRejected("1 2", "invalid JSON at byte offset");
  ExpectRejected("{'a': 1}", "invalid JSON at byte offset");
  ExpectRejected("/* c */ 1", "invalid JSON at byte offset");
  ExpectRejected("NaN", "invalid JSON at byte offset");
}

TEST(JsonTest, StringsWithEscapesRoundTrip) {
  static constexpr char kText[] = "q\"b\\s/\n\t\x01\0z\U0001F600";
  const Value v = Value::String(std::string(kText, sizeof(kText) - 1));
  EXPECT_EQ(Parse(Text(v)), v);
}

// ---- Markers ------------------------------------------------------------------------------

TEST(JsonTest, ActorMarkerDecodesToActorRef) {
  EXPECT_EQ(Parse("{\"$actor\": \"V1StGXR8_Z5jdHi6B-myT\"}"), RefValue());
}

TEST(JsonTest, ActorRefEncodesAsActorMarker) {
  EXPECT_EQ(Text(RefValue()), "{\"$actor\":\"V1StGXR8_Z5jdHi6B-myT\"}");
}

TEST(JsonTest, ActorMarkerWithInvalidNanoIdIsRejected) {
  ExpectRejected("{\"$actor\": \"short\"}", "at /: \"$actor\" marker: actor ref must be 21");
  ExpectRejected("{\"x\": {\"$actor\": \"V1StGXR8_Z5jdHi6B+myT\"}}",
                 "at /x: \"$actor\" marker: actor ref character at offset 17");
  ExpectRejected("[{\"$actor\": 5}]", "at /0: \"$actor\" marker needs a NanoID string, got int");
}

TEST(JsonTest, RecordMarkerTakesItsObjectLiterally) {
  // Given a record marker around an object that looks like an actor marker
  const Value v = Parse("{\"$record\": {\"$actor\": \"not-a-ref\"}}");
  // Then the inner object is a plain record
  EXPECT_EQ(v, Value::RecordOf({{"$actor", Value::String("not-a-ref")}}));
}

TEST(JsonTest, RecordMarkerIsLiteralAtOneLevelOnly) {
  // Given markers nested inside a record marker's object
  const Value v =
      Parse("{\"$record\": {\"$record\": {\"$actor\": \"V1StGXR8_Z5jdHi6B-myT\"}, \"n\": 1}}");
  // Then the inner values follow the normal rules
  EXPECT_EQ(v, Value::RecordOf({{"$record", RefValue()}, {"n", Value::Int(1)}}));
}

TEST(JsonTest, RecordMarkerAroundRecordMarkerYieldsLiteralKey) {
  EXPECT_EQ(Parse("{\"$record\": {\"$record\": {\"a\": 1}}}"),
            Value::RecordOf({{"$record", Value::RecordOf({{"a", Value::Int(1)}})}}));
}

TEST(JsonTest, RecordMarkerWithNonObjectIsRejected) {
  ExpectRejected("{\"$record\": [1]}", "at /: \"$record\" marker needs an object, got list");
}

TEST(JsonTest, MarkerKeysBesideOtherKeysArePlainFields) {
  EXPECT_EQ(Parse("{\"$actor\": 1, \"b\": 2}"),
            Value::RecordOf({{"$actor", Value::Int(1)}, {"b", Value::Int(2)}}));
  EXPECT_EQ(Text(Value::RecordOf({{"$actor", Value::Int(1)}, {"b", Value::Int(2)}})),
            "{\"$actor\":1,\"b\":2}");
}

TEST(JsonTest, EncodingEscapesRecordsThatLookLikeMarkers) {
  const Value looks_like_ref = Value::RecordOf({{"$actor", Value::String(std::string(kRefId))}});
  const Value looks_like_escape = Value::RecordOf({{"$record", Value::RecordOf({})}});
  EXPECT_EQ(Text(looks_like_ref), "{\"$record\":{\"$actor\":\"V1StGXR8_Z5jdHi6B-myT\"}}");
  EXPECT_EQ(Text(looks_like_escape), "{\"$record\":{\"$record\":{}}}");
  EXPECT_EQ(Parse(Text(looks_like_ref)), looks_like_ref);
  EXPECT_EQ(Parse(Text(looks_like_escape)), looks_like_escape);
}

TEST(JsonTest, ErrorsNameTheJsonPointerOfTheOffender) {
  ExpectRejected("{\"a/b\": [0, {\"c~\": {\"$actor\": null}}]}",
                 "at /a~1b/1/c~0: \"$actor\" marker needs a NanoID string, got null");
}

// ---- The nlohmann DOM overload ------------------------------------------------------------

TEST(JsonTest, DomOverloadUsesStoredNumberTypes) {
  auto v =
      ValueFromJson(nlohmann::json::parse("[1, 1.0, -2, {\"$actor\": \"V1StGXR8_Z5jdHi6B-myT\"}]"),
                    ValueLimits{});
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(*v, Value::ListOf({Value::Int(1), Value::Float(1.0), Value::Int(-2), RefValue()}));
}

TEST(JsonTest, DomOverloadRejectsUnsignedBeyondInt64AndInvalidUtf8) {
  EXPECT_EQ(ValueFromJson(nlohmann::json(std::uint64_t{1} << 63), ValueLimits{}).status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(ValueFromJson(nlohmann::json("\xff"), ValueLimits{}).status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(ValueFromJson(nlohmann::json::binary({1, 2}), ValueLimits{}).status().code(),
            Code::kInvalidArgument);
}

TEST(JsonTest, ValueToJsonBuildsTheDom) {
  const nlohmann::json j =
      ValueToJson(Value::RecordOf({{"r", RefValue()}, {"f", Value::Float(2)}}));
  EXPECT_EQ(j["r"]["$actor"], std::string(kRefId));
  EXPECT_TRUE(j["f"].is_number_float());
}

// ---- Limits -------------------------------------------------------------------------------

std::string NestedArrays(std::size_t depth) {
  return std::string(depth, '[') + "[]" + std::string(depth, ']');
}

TEST(JsonTest, DepthExactlyAtLimitPasses) {
  EXPECT_TRUE(ValueFromJson(NestedArrays(32), {}).ok());
}

TEST(JsonTest, DepthOneOverLimitFailsNamingTheLimit) {
  ExpectRejected(NestedArrays(33), "value depth exceeds limit max_depth=32", Code::kLimitExceeded);
}

TEST(JsonTest, DepthCountsValuesNotMarkerWrappers) {
  // Given 32 records below the root, each escaped by a "$record" wrapper (65 JSON levels)
  std::string text = "{}";
  for (int i = 0; i < 32; ++i) text = "{\"$record\": {\"$record\": " + text + "}}";
  // Then the value is 32 deep and passes
  EXPECT_TRUE(ValueFromJson(text, {}).ok()) << ValueFromJson(text, {}).status().ToString();
  ExpectRejected("{\"$record\": {\"$record\": " + text + "}}",
                 "value depth exceeds limit max_depth=32", Code::kLimitExceeded);
}

TEST(JsonTest, HugeNestingIsRejectedWithoutRecursingDeep) {
  ExpectRejected(std::string(1000000, '['), "max_depth=32", Code::kLimitExceeded);
}

TEST(JsonTest, NodesExactlyAtLimitPass) {
  std::string text = "[0";
  for (int i = 1; i < 4095; ++i) text += ",0";
  EXPECT_TRUE(ValueFromJson(text + "]", {}).ok());
  ExpectRejected(text + ",0]", "value node count exceeds limit max_nodes=4096",
                 Code::kLimitExceeded);
}

TEST(JsonTest, ActorMarkersCountAsOneNode) {
  std::string text = "[";
  for (int i = 0; i < 4095; ++i) {
    text += std::string(i ? "," : "") + "{\"$actor\":\"V1StGXR8_Z5jdHi6B-myT\"}";
  }
  EXPECT_TRUE(ValueFromJson(text + "]", {}).ok());
}

TEST(JsonTest, StringBytesExactlyAtLimitPass) {
  const std::string at = "{\"k\": \"" + std::string((1 << 20) - 1, 'x') + "\"}";
  const std::string over = "{\"kk\": \"" + std::string((1 << 20) - 1, 'x') + "\"}";
  EXPECT_TRUE(ValueFromJson(at, {}).ok());
  ExpectRejected(over, "value string and key bytes exceed limit max_string_bytes=1048576",
                 Code::kLimitExceeded);
}

TEST(JsonTest, TextOverSizeLimitFailsNamingTheLimit) {
  const std::string text = "\"" + std::string(98, 'x') + "\"";
  EXPECT_TRUE(ValueFromJson(text, ValueLimits{.max_json_bytes = 100}).ok());
  ExpectRejected(text + " ", "JSON text of 101 bytes exceeds limit max_json_bytes=100",
                 Code::kLimitExceeded, ValueLimits{.max_json_bytes = 100});
}

TEST(JsonTest, EncodeEnforcesLimits) {
  const Value v = Value::ListOf(List(10, Value::Int(1)));
  EXPECT_EQ(ValueToJsonText(v, ValueLimits{.max_nodes = 10}).status().code(), Code::kLimitExceeded);
  EXPECT_EQ(ValueToJsonText(v, ValueLimits{.max_json_bytes = 20}).status().message(),
            "JSON text of 21 bytes exceeds limit max_json_bytes=20");
}

}  // namespace
}  // namespace reef
