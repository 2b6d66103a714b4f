// Round-trip properties of the CBOR and JSON codecs over random Values within the default
// limits (rapidcheck).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <vector>

#include "core/cbor.h"
#include "core/json.h"
#include "core/limits.h"
#include "value_test_util.h"

namespace reef {
namespace {

using testing_util::GenValue;

// A random Value inside the default limits.
Value AnyValue() {
  const Value v = *GenValue(4);
  RC_PRE(CheckLimits(v, ValueLimits{}).ok());
  return v;
}

RC_GTEST_PROP(CborPropertyTest, DecodeOfEncodeIsTheSameValue, ()) {
  const Value v = AnyValue();
  const auto bytes = EncodeCbor(v, ValueLimits{});
  RC_ASSERT(bytes.ok());
  const auto back = DecodeCbor(*bytes, ValueLimits{});
  RC_ASSERT(back.ok());
  RC_ASSERT(*back == v);
}

RC_GTEST_PROP(CborPropertyTest, EncodingIsDeterministic, ()) {
  const Value v = AnyValue();
  const auto bytes = EncodeCbor(v, ValueLimits{});
  RC_ASSERT(bytes.ok());
  const auto again = EncodeCbor(*DecodeCbor(*bytes, ValueLimits{}), ValueLimits{});
  RC_ASSERT(again.ok());
  RC_ASSERT(*again == *bytes);
}

RC_GTEST_PROP(CborPropertyTest, DecodeOfArbitraryBytesReturnsValueOrError,
              (const std::vector<std::uint8_t>& bytes)) {
  const auto v = DecodeCbor(bytes, ValueLimits{});
  if (v.ok()) {
    RC_ASSERT(CheckLimits(*v, ValueLimits{}).ok());
    RC_ASSERT(EncodeCbor(*v, ValueLimits{}).ok());
  }
}

RC_GTEST_PROP(JsonPropertyTest, ParseOfTextIsTheSameValue, ()) {
  const Value v = AnyValue();
  const auto text = ValueToJsonText(v, ValueLimits{});
  RC_ASSERT(text.ok());
  const auto back = ValueFromJson(*text, ValueLimits{});
  RC_ASSERT(back.ok());
  RC_ASSERT(*back == v);
}

RC_GTEST_PROP(JsonPropertyTest, DomRoundTripIsTheSameValue, ()) {
  const Value v = AnyValue();
  const auto back = ValueFromJson(ValueToJson(v), ValueLimits{});
  RC_ASSERT(back.ok());
  RC_ASSERT(*back == v);
}

RC_GTEST_PROP(JsonPropertyTest, TextIsDeterministic, ()) {
  const Value v = AnyValue();
  const auto text = ValueToJsonText(v, ValueLimits{});
  RC_ASSERT(text.ok());
  const auto again = ValueToJsonText(*ValueFromJson(*text, ValueLimits{}), ValueLimits{});
  RC_ASSERT(again.ok());
  RC_ASSERT(*again == *text);
}

RC_GTEST_PROP(CborPropertyTest, JsonAndCborAgree, ()) {
  // JSON -> Value -> CBOR gives the same bytes as the original value's CBOR.
  const Value v = AnyValue();
  const auto via_json = ValueFromJson(*ValueToJsonText(v, ValueLimits{}), ValueLimits{});
  RC_ASSERT(via_json.ok());
  RC_ASSERT(*EncodeCbor(*via_json, ValueLimits{}) == *EncodeCbor(v, ValueLimits{}));
}

}  // namespace
}  // namespace reef
