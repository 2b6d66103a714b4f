// Round-trip properties of the CBOR and JSON codecs over random Values within the default
// limits (rapidcheck).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <string>
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

// ---- CborValue: checking without decoding agrees with DecodeCbor ----

// Appends a head for (major, arg) in a random valid width, not only the shortest one.
void LooseHead(std::vector<std::uint8_t>& out, std::uint8_t major, std::uint64_t arg) {
  std::vector<int> widths;  // additional information: 0 = inline, 24..27
  if (arg < 24) widths.push_back(0);
  if (arg <= 0xff) widths.push_back(24);
  if (arg <= 0xffff) widths.push_back(25);
  if (arg <= 0xffffffff) widths.push_back(26);
  widths.push_back(27);
  const int info = *rc::gen::elementOf(widths);
  if (info == 0) {
    out.push_back(static_cast<std::uint8_t>((major << 5) | arg));
    return;
  }
  out.push_back(static_cast<std::uint8_t>((major << 5) | info));
  const int bytes = 1 << (info - 24);
  for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<std::uint8_t>(arg >> (8 * i)));
}

// A valid but (mostly) not deterministic encoding of `v`: random head widths, record keys in
// random order, floats as doubles. With `duplicate`, some record repeats its first key.
void LooseEncode(const Value& v, std::vector<std::uint8_t>& out, bool duplicate) {
  switch (v.kind()) {
    case Kind::kInt:
      if (v.as_int() >= 0) return LooseHead(out, 0, static_cast<std::uint64_t>(v.as_int()));
      return LooseHead(out, 1, static_cast<std::uint64_t>(-(v.as_int() + 1)));
    case Kind::kFloat: {
      out.push_back(0xfb);
      const auto bits = std::bit_cast<std::uint64_t>(v.as_float());
      for (int i = 7; i >= 0; --i) out.push_back(static_cast<std::uint8_t>(bits >> (8 * i)));
      return;
    }
    case Kind::kString:
      LooseHead(out, 3, v.as_string().size());
      out.insert(out.end(), v.as_string().begin(), v.as_string().end());
      return;
    case Kind::kList:
      LooseHead(out, 4, v.as_list().size());
      for (const Value& item : v.as_list()) LooseEncode(item, out, duplicate);
      return;
    case Kind::kRecord: {
      std::vector<const Record::value_type*> fields;
      for (const auto& field : v.as_record()) fields.push_back(&field);
      for (size_t i = fields.size(); i > 1; --i) {  // Fisher-Yates, rapidcheck's choices
        std::swap(fields[i - 1], fields[*rc::gen::inRange<size_t>(0, i)]);
      }
      const bool repeat = duplicate && !fields.empty();
      LooseHead(out, 5, fields.size() + (repeat ? 1 : 0));
      if (repeat) {  // the first key again, anywhere after it
        const size_t at = *rc::gen::inRange<size_t>(1, fields.size() + 1);
        fields.insert(fields.begin() + static_cast<std::ptrdiff_t>(at), fields.front());
      }
      for (const auto* field : fields) {
        LooseHead(out, 3, field->first.size());
        out.insert(out.end(), field->first.begin(), field->first.end());
        LooseEncode(field->second, out, duplicate);
      }
      return;
    }
    default: {  // null, bool, actor ref: one encoding only
      const auto bytes = *EncodeCbor(v, ValueLimits{});
      out.insert(out.end(), bytes.begin(), bytes.end());
    }
  }
}

bool HasFloat(const Value& v) {
  if (v.is_float()) return true;
  if (v.is_list()) return std::ranges::any_of(v.as_list(), HasFloat);
  if (v.is_record()) {
    return std::ranges::any_of(v.as_record(), [](const auto& f) { return HasFloat(f.second); });
  }
  return false;
}

// The fast check (IsPlainDeterministicCbor) says yes only where DecodeCbor accepts the bytes
// and they are already EncodeCbor's encoding of the value.
void AssertFastCheckIsSound(const std::vector<std::uint8_t>& bytes, const ValueLimits& limits) {
  if (!IsPlainDeterministicCbor(bytes, limits)) return;
  const auto decoded = DecodeCbor(bytes, limits);
  RC_ASSERT(decoded.ok());
  RC_ASSERT(*EncodeCbor(*decoded, limits) == bytes);
}

RC_GTEST_PROP(CborValueTest, TheFastCheckTakesEveryDeterministicEncodingWithoutFloats, ()) {
  const Value v = AnyValue();
  const auto bytes = *EncodeCbor(v, ValueLimits{});
  RC_ASSERT(IsPlainDeterministicCbor(bytes, ValueLimits{}) == !HasFloat(v));
  // Tighter limits: yes only when the value keeps within them.
  const ValueLimits small{3, 12, 40, 64, 4096};
  RC_ASSERT(IsPlainDeterministicCbor(bytes, small) ==
            (!HasFloat(v) && bytes.size() <= small.max_cbor_bytes && CheckLimits(v, small).ok()));
}

RC_GTEST_PROP(CborValueTest, TheFastCheckNeverTakesWhatDecodeCborRefusesOrWouldReencode, ()) {
  const Value v = AnyValue();
  std::vector<std::uint8_t> bytes = *EncodeCbor(v, ValueLimits{});
  // One to three damaged bytes: flipped bits, a cut tail or an extra byte.
  const int damages = *rc::gen::inRange(1, 4);
  for (int i = 0; i < damages && !bytes.empty(); ++i) {
    const size_t at = *rc::gen::inRange<size_t>(0, bytes.size());
    switch (*rc::gen::inRange(0, 3)) {
      case 0:
        bytes[at] ^= *rc::gen::inRange<std::uint8_t>(1, 255);
        break;
      case 1:
        bytes.resize(at);
        break;
      default:
        bytes.insert(bytes.begin() + static_cast<std::ptrdiff_t>(at),
                     *rc::gen::arbitrary<std::uint8_t>());
    }
  }
  AssertFastCheckIsSound(bytes, ValueLimits{});
  AssertFastCheckIsSound(bytes, ValueLimits{3, 12, 40, 64, 4096});
}

RC_GTEST_PROP(CborValueTest, AnyValidEncodingBecomesTheDeterministicOne, ()) {
  const Value v = AnyValue();
  std::vector<std::uint8_t> loose;
  LooseEncode(v, loose, false);
  const auto checked = CborValue::FromBytes(loose, ValueLimits{});
  RC_ASSERT(checked.ok());
  const auto canonical = *EncodeCbor(v, ValueLimits{});
  RC_ASSERT(std::vector<std::uint8_t>(checked->bytes().begin(), checked->bytes().end()) ==
            canonical);
  RC_ASSERT(checked->ToValue() == v);
}

RC_GTEST_PROP(CborValueTest, ADuplicateKeyInAnyOrderIsRefusedAsDecodeCborRefusesIt, ()) {
  const Value v = AnyValue();
  std::vector<std::uint8_t> loose;
  LooseEncode(v, loose, true);
  // Sometimes a later error too (a trailing byte): the duplicate is still the one reported.
  if (*rc::gen::arbitrary<bool>()) loose.push_back(0x00);
  const auto decoded = DecodeCbor(loose, ValueLimits{});
  const auto checked = CborValue::FromBytes(loose, ValueLimits{});
  RC_ASSERT(decoded.ok() == checked.ok());
  if (!decoded.ok()) RC_ASSERT(decoded.status().message() == checked.status().message());
}

RC_GTEST_PROP(CborValueTest, ArbitraryBytesAreRefusedExactlyWhenDecodeCborRefusesThem,
              (const std::vector<std::uint8_t>& bytes)) {
  // Small limits, so the limit errors are reached too.
  const ValueLimits limits{3, 12, 40, 64, 4096};
  AssertFastCheckIsSound(bytes, limits);
  const auto decoded = DecodeCbor(bytes, limits);
  const auto checked = CborValue::FromBytes(bytes, limits);
  RC_ASSERT(decoded.ok() == checked.ok());
  if (decoded.ok()) {
    RC_ASSERT(checked->ToValue() == *decoded);
  } else {
    RC_ASSERT(decoded.status().ToString() == checked.status().ToString());
  }
}

TEST(CborValueTest, KeepsDeterministicBytesAndTheRefEncodingMatchesEncodeCbor) {
  const ActorRef ref = *ActorRef::Parse("V1StGXR8_Z5jdHi6B-myT");
  const auto via_value = *EncodeCbor(Value::Ref(ref), ValueLimits{});
  const auto direct = EncodeCborRef(ref);
  EXPECT_EQ(std::vector<std::uint8_t>(direct.begin(), direct.end()), via_value);
  EXPECT_TRUE(CborValue().is_null());
  EXPECT_EQ(CborValue().ToValue(), Value::Null());
  const Value record = Value::RecordOf({{"n", Value::Int(500)}, {"peer", Value::Ref(ref)}});
  const auto bytes = *EncodeCbor(record, ValueLimits{});
  const auto kept = CborValue::FromBytes(bytes, ValueLimits{});
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(std::vector<std::uint8_t>(kept->bytes().begin(), kept->bytes().end()), bytes);
  EXPECT_FALSE(kept->is_null());
  EXPECT_EQ(kept->ToValue(), record);
  EXPECT_EQ(*CborValue::Encode(record, ValueLimits{}), *kept);
}

TEST(CborValueTest, ADuplicateKeyIsReportedEvenWhenALimitIsBrokenLaterInTheInput) {
  // {"a": 0, "a": 0, "b": [[...[0]...]]} with the innermost 0 at depth 33 (limit 32): decoding
  // stops at the duplicate (InvalidArgument, the ABI's -1), so checking must report it too,
  // not the depth limit (LimitExceeded, -2) it meets further on.
  std::vector<std::uint8_t> bytes = {0xa3, 0x61, 'a', 0x00, 0x61, 'a', 0x00, 0x61, 'b'};
  bytes.insert(bytes.end(), 32, 0x81);
  bytes.push_back(0x00);
  const auto decoded = DecodeCbor(bytes, ValueLimits{});
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.status().code(), Code::kInvalidArgument) << decoded.status().ToString();
  const auto checked = CborValue::FromBytes(bytes, ValueLimits{});
  ASSERT_FALSE(checked.ok());
  EXPECT_EQ(checked.status().ToString(), decoded.status().ToString());
}

}  // namespace
}  // namespace reef
