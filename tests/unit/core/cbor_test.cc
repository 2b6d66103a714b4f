#include "core/cbor.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "value_test_util.h"

namespace reef {
namespace {

using testing_util::Hex;
using testing_util::kRefId;
using testing_util::RefValue;
using testing_util::ToHex;

// Tag 1380271430, text(21), kRefId.
constexpr std::string_view kRefCbor =
    "da5245454675"
    "5631537447585238"
    "5f5a356a64486936"
    "422d6d7954";

Result<Value> Decode(std::string_view hex, const ValueLimits& limits = {}) {
  const std::vector<std::uint8_t> bytes = Hex(hex);
  return DecodeCbor(bytes, limits);
}

std::string EncodeHex(const Value& v, const ValueLimits& limits = {}) {
  auto bytes = EncodeCbor(v, limits);
  if (!bytes.ok()) return "error: " + bytes.status().ToString();
  return ToHex(*bytes);
}

// Asserts that `hex` decodes to `expected` and that `expected` encodes back to `hex`.
void ExpectBothWays(std::string_view hex, const Value& expected) {
  auto decoded = Decode(hex);
  ASSERT_TRUE(decoded.ok()) << hex << ": " << decoded.status().ToString();
  EXPECT_EQ(*decoded, expected) << hex;
  EXPECT_EQ(EncodeHex(expected), hex);
}

// Asserts that `hex` is rejected as InvalidArgument with a message containing `fragment`.
void ExpectInvalid(std::string_view hex, std::string_view fragment) {
  auto decoded = Decode(hex);
  ASSERT_FALSE(decoded.ok()) << hex << " decoded";
  EXPECT_EQ(decoded.status().code(), Code::kInvalidArgument) << hex;
  EXPECT_NE(decoded.status().message().find(fragment), std::string::npos)
      << hex << ": " << decoded.status().message();
}

// ---- RFC 8949 Appendix A ----------------------------------------------------------------

TEST(CborTest, Rfc8949AppendixAIntegersRoundTrip) {
  ExpectBothWays("00", Value::Int(0));
  ExpectBothWays("01", Value::Int(1));
  ExpectBothWays("0a", Value::Int(10));
  ExpectBothWays("17", Value::Int(23));
  ExpectBothWays("1818", Value::Int(24));
  ExpectBothWays("1819", Value::Int(25));
  ExpectBothWays("1864", Value::Int(100));
  ExpectBothWays("1903e8", Value::Int(1000));
  ExpectBothWays("1a000f4240", Value::Int(1000000));
  ExpectBothWays("1b000000e8d4a51000", Value::Int(1000000000000));
  ExpectBothWays("20", Value::Int(-1));
  ExpectBothWays("29", Value::Int(-10));
  ExpectBothWays("3863", Value::Int(-100));
  ExpectBothWays("3903e7", Value::Int(-1000));
}

TEST(CborTest, Int64ExtremesRoundTrip) {
  ExpectBothWays("1b7fffffffffffffff", Value::Int(INT64_MAX));
  ExpectBothWays("3b7fffffffffffffff", Value::Int(INT64_MIN));
}

TEST(CborTest, Rfc8949AppendixAFloatsRoundTrip) {
  ExpectBothWays("f90000", Value::Float(0.0));
  ExpectBothWays("f98000", Value::Float(-0.0));
  ExpectBothWays("f93c00", Value::Float(1.0));
  ExpectBothWays("fb3ff199999999999a", Value::Float(1.1));
  ExpectBothWays("f93e00", Value::Float(1.5));
  ExpectBothWays("f97bff", Value::Float(65504.0));
  ExpectBothWays("fa47c35000", Value::Float(100000.0));
  ExpectBothWays("fa7f7fffff", Value::Float(3.4028234663852886e+38));
  ExpectBothWays("fb7e37e43c8800759c", Value::Float(1.0e+300));
  ExpectBothWays("f90001", Value::Float(5.960464477539063e-8));
  ExpectBothWays("f90400", Value::Float(0.00006103515625));
  ExpectBothWays("f9c400", Value::Float(-4.0));
  ExpectBothWays("fbc010666666666666", Value::Float(-4.1));
}

TEST(CborTest, Rfc8949AppendixALongerFloatEncodingsDecodeToTheSameValue) {
  // The Appendix A single and double forms of 1.0 and 100000.0 are accepted ...
  EXPECT_EQ(*Decode("fa3f800000"), Value::Float(1.0));
  EXPECT_EQ(*Decode("fb3ff0000000000000"), Value::Float(1.0));
  EXPECT_EQ(*Decode("fb40f86a0000000000"), Value::Float(100000.0));
  // ... and re-encoded in the shortest width.
  EXPECT_EQ(EncodeHex(*Decode("fb3ff0000000000000")), "f93c00");
}

TEST(CborTest, Rfc8949AppendixASimpleValuesRoundTrip) {
  ExpectBothWays("f4", Value::Bool(false));
  ExpectBothWays("f5", Value::Bool(true));
  ExpectBothWays("f6", Value::Null());
}

TEST(CborTest, Rfc8949AppendixAStringsRoundTrip) {
  ExpectBothWays("60", Value::String(""));
  ExpectBothWays("6161", Value::String("a"));
  ExpectBothWays("6449455446", Value::String("IETF"));
  ExpectBothWays("62225c", Value::String("\"\\"));
  ExpectBothWays("62c3bc", Value::String("\u00fc"));
  ExpectBothWays("63e6b0b4", Value::String("\u6c34"));
  ExpectBothWays("64f0908591", Value::String("\U00010151"));
}

TEST(CborTest, Rfc8949AppendixAArraysRoundTrip) {
  ExpectBothWays("80", Value::ListOf({}));
  ExpectBothWays("83010203", Value::ListOf({Value::Int(1), Value::Int(2), Value::Int(3)}));
  ExpectBothWays("8301820203820405",
                 Value::ListOf({Value::Int(1), Value::ListOf({Value::Int(2), Value::Int(3)}),
                                Value::ListOf({Value::Int(4), Value::Int(5)})}));
  List items;
  for (int i = 1; i <= 25; ++i) items.push_back(Value::Int(i));
  ExpectBothWays("98190102030405060708090a0b0c0d0e0f101112131415161718181819",
                 Value::ListOf(std::move(items)));
}

TEST(CborTest, Rfc8949AppendixAMapsWithTextKeysRoundTrip) {
  ExpectBothWays("a0", Value::RecordOf({}));
  ExpectBothWays("a26161016162820203",
                 Value::RecordOf(
                     {{"a", Value::Int(1)}, {"b", Value::ListOf({Value::Int(2), Value::Int(3)})}}));
  ExpectBothWays("826161a161626163",
                 Value::ListOf({Value::String("a"), Value::RecordOf({{"b", Value::String("c")}})}));
  ExpectBothWays("a56161614161626142616361436164614461656145",
                 Value::RecordOf({{"a", Value::String("A")},
                                  {"b", Value::String("B")},
                                  {"c", Value::String("C")},
                                  {"d", Value::String("D")},
                                  {"e", Value::String("E")}}));
}

// ---- Actor refs ---------------------------------------------------------------------------

TEST(CborTest, ActorRefIsTheReefTagAroundItsNanoId) {
  ExpectBothWays(kRefCbor, RefValue());
  EXPECT_EQ(Hex(kRefCbor).size(), 27u);
}

TEST(CborTest, DecodeAcceptsActorRefTagWithLongerHead) {
  auto v = Decode("db0000000052454546" + std::string(kRefCbor.substr(10)));
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(*v, RefValue());
}

TEST(CborTest, DecodeRejectsActorRefTagAroundInvalidNanoId) {
  std::string twenty_a;
  for (int i = 0; i < 20; ++i) twenty_a += "61";
  ExpectInvalid("da5245454674" + twenty_a, "byte offset 5: actor ref must be 21 characters");
  ExpectInvalid("da52454546752b" + twenty_a, "byte offset 5: actor ref character at offset 0");
}

TEST(CborTest, DecodeRejectsActorRefTagAroundNonText) {
  ExpectInvalid("da5245454601", "byte offset 5: actor ref tag must wrap a text string");
  ExpectInvalid("da524545465541414141414141414141414141414141414141414141",
                "actor ref tag must wrap a text string");
}

// ---- Deterministic encoding ----------------------------------------------------------------

TEST(CborTest, EncodeSortsRecordKeysShorterFirstThenBytewise) {
  // Given keys whose bytewise order differs from their encoded order
  const Value v = Value::RecordOf(
      {{"b", Value::Int(1)}, {"aa", Value::Int(2)}, {"a", Value::Int(3)}, {"B", Value::Int(4)}});
  // Then the encoding lists B, a, b (one byte) before aa (two bytes)
  EXPECT_EQ(EncodeHex(v),
            "a4"
            "6142"
            "04"
            "6161"
            "03"
            "6162"
            "01"
            "626161"
            "02");
}

TEST(CborTest, EncodeSortsLongKeysAfterShortOnesAcrossHeadSizes) {
  const std::string long_key(24, 'a');  // head 0x78 0x18
  const Value v = Value::RecordOf({{long_key, Value::Null()}, {"z", Value::Null()}});
  EXPECT_EQ(EncodeHex(v).substr(0, 8), "a2617af6");
}

TEST(CborTest, EncodeChoosesShortestExactFloatWidth) {
  EXPECT_EQ(EncodeHex(Value::Float(65505.0)), "fa477fe100");  // not a half
  EXPECT_EQ(EncodeHex(Value::Float(0.5)), "f93800");
  EXPECT_EQ(EncodeHex(Value::Float(1.0 / 3)), "fb3fd5555555555555");
  EXPECT_EQ(EncodeHex(Value::Float(0x1p-24 * 3)), "f90003");   // half subnormal
  EXPECT_EQ(EncodeHex(Value::Float(0x1p-25)), "fa33000000");   // below half range
  EXPECT_EQ(EncodeHex(Value::Float(0x1p-149)), "fa00000001");  // single subnormal
  EXPECT_EQ(EncodeHex(Value::Float(4.9406564584124654e-324)), "fb0000000000000001");
  EXPECT_EQ(EncodeHex(Value::Float(65536.0)), "fa47800000");
  EXPECT_EQ(EncodeHex(Value::Float(16777217.0)), "fb4170000010000000");  // 2^24 + 1
}

TEST(CborTest, EncodeUsesShortestIntegerHeads) {
  EXPECT_EQ(EncodeHex(Value::Int(255)), "18ff");
  EXPECT_EQ(EncodeHex(Value::Int(256)), "190100");
  EXPECT_EQ(EncodeHex(Value::Int(65535)), "19ffff");
  EXPECT_EQ(EncodeHex(Value::Int(65536)), "1a00010000");
  EXPECT_EQ(EncodeHex(Value::Int(4294967295)), "1affffffff");
  EXPECT_EQ(EncodeHex(Value::Int(4294967296)), "1b0000000100000000");
  EXPECT_EQ(EncodeHex(Value::Int(-24)), "37");
  EXPECT_EQ(EncodeHex(Value::Int(-25)), "3818");
}

TEST(CborTest, DecodeAcceptsNonShortestHeadsAndUnsortedKeys) {
  EXPECT_EQ(*Decode("1800"), Value::Int(0));
  EXPECT_EQ(*Decode("1b0000000000000001"), Value::Int(1));
  EXPECT_EQ(*Decode("7800"), Value::String(""));
  EXPECT_EQ(*Decode("9900020102"), Value::ListOf({Value::Int(1), Value::Int(2)}));
  EXPECT_EQ(*Decode("a2616202616101"),
            Value::RecordOf({{"a", Value::Int(1)}, {"b", Value::Int(2)}}));
}

// ---- Rejection rules ----------------------------------------------------------------------

TEST(CborTest, DecodeRejectsEmptyInput) {
  ExpectInvalid("", "byte offset 0: unexpected end");
}

TEST(CborTest, DecodeRejectsTrailingBytes) {
  ExpectInvalid("0000", "byte offset 1: 1 trailing bytes");
  ExpectInvalid("80f6f6", "byte offset 1: 2 trailing bytes");
}

TEST(CborTest, DecodeRejectsTruncatedInput) {
  ExpectInvalid("18", "byte offset 0: unexpected end of input inside a head");
  ExpectInvalid("1a0000", "byte offset 0: unexpected end of input inside a head");
  ExpectInvalid("6261", "byte offset 0: text string length 2 exceeds the remaining 1 bytes");
  ExpectInvalid("830102", "byte offset 0: list length 3 exceeds the remaining 2 bytes");
  ExpectInvalid("a16161", "byte offset 3: unexpected end of input");
}

TEST(CborTest, DecodeRejectsHugeLengthHeadsWithoutAllocating) {
  ExpectInvalid("9bffffffffffffffff00", "list length 18446744073709551615 exceeds");
  ExpectInvalid("bbffffffffffffffff00", "record length 18446744073709551615 exceeds");
  ExpectInvalid("7bffffffffffffffff00", "text string length 18446744073709551615 exceeds");
  ExpectInvalid("7a7fffffff", "text string length 2147483647 exceeds");
}

TEST(CborTest, DecodeRejectsIndefiniteLength) {
  ExpectInvalid("5f42010243030405ff", "byte offset 0: indefinite lengths are not supported");
  ExpectInvalid("7f657374726561646d696e67ff", "indefinite lengths are not supported");
  ExpectInvalid("9fff", "indefinite lengths are not supported");
  ExpectInvalid("bf6161f5ff", "indefinite lengths are not supported");
  ExpectInvalid("82019f02ff", "byte offset 2: indefinite lengths are not supported");
}

TEST(CborTest, DecodeRejectsStrayBreakStopCode) {
  ExpectInvalid("ff", "break stop code");
}

TEST(CborTest, DecodeRejectsReservedAdditionalInformation) {
  for (const char* hex : {"1c", "1d", "1e", "3c", "5c", "7c", "9c", "bc", "dc", "fc"}) {
    ExpectInvalid(hex, "byte offset 0: reserved additional information");
  }
}

TEST(CborTest, DecodeRejectsByteStrings) {
  ExpectInvalid("40", "byte offset 0: byte strings are not supported");
  ExpectInvalid(
      "8201"
      "4401020304",
      "byte offset 2: byte strings");
}

TEST(CborTest, DecodeRejectsUnknownTags) {
  ExpectInvalid("c074323031332d30332d32315432303a30343a30305a", "byte offset 0: unsupported tag 0");
  ExpectInvalid("c11a514b67b0", "unsupported tag 1");
  ExpectInvalid("d9d9f780", "unsupported tag 55799");
  ExpectInvalid(
      "da5245454775"
      "5631537447585238"
      "5f5a356a64486936"
      "422d6d7954",
      "unsupported tag 1380271431");
}

TEST(CborTest, DecodeRejectsOtherSimpleValues) {
  ExpectInvalid("f7", "byte offset 0: simple value 23 is not supported");
  ExpectInvalid("f0", "simple value 16 is not supported");
  ExpectInvalid("f8ff", "simple value 255 is not supported");
  ExpectInvalid("f820", "simple value 32 is not supported");
  ExpectInvalid("f814", "simple value 20 is not supported");  // two-byte form of false
}

TEST(CborTest, DecodeRejectsNanAndInfinities) {
  for (const char* hex : {"f97c00", "f97e00", "f9fc00", "fa7f800000", "fa7fc00000", "faff800000",
                          "fb7ff0000000000000", "fb7ff8000000000000", "fbfff0000000000000"}) {
    ExpectInvalid(hex, "byte offset 0: NaN and infinities are not allowed");
  }
}

TEST(CborTest, DecodeRejectsIntegersOutsideInt64) {
  ExpectInvalid("1bffffffffffffffff", "byte offset 0: integer outside the int64 range");
  ExpectInvalid("3bffffffffffffffff", "integer outside the int64 range");
  ExpectInvalid("1b8000000000000000", "integer outside the int64 range");  // 2^63
  ExpectInvalid("3b8000000000000000", "integer outside the int64 range");  // -2^63 - 1
}

TEST(CborTest, DecodeRejectsInvalidUtf8AtItsOffset) {
  ExpectInvalid("62c328", "byte offset 1: text string is not valid UTF-8");
  ExpectInvalid(
      "8263616263"
      "63eda080",
      "byte offset 6: text string is not valid UTF-8");
  ExpectInvalid("a162ff61f6", "byte offset 2: text string is not valid UTF-8");  // key
}

TEST(CborTest, DecodeRejectsDuplicateKeys) {
  ExpectInvalid("a2616101616102", "byte offset 4: duplicate record key");
  // The same key with a non-shortest head is still the same key.
  ExpectInvalid("a261610178016102", "byte offset 4: duplicate record key");
}

TEST(CborTest, DecodeRejectsNonTextKeys) {
  ExpectInvalid("a201020304", "byte offset 1: record key is not a text string");  // RFC A
  ExpectInvalid("a14161f6", "record key is not a text string");
  ExpectInvalid("a1f6f6", "record key is not a text string");
  ExpectInvalid("a1" + std::string(kRefCbor) + "f6", "record key is not a text string");
}

// ---- Limits -------------------------------------------------------------------------------

// `depth` list heads 0x81 around an empty list: the innermost list sits at `depth`.
std::string NestedListHex(std::size_t depth) {
  std::string hex;
  for (std::size_t i = 0; i < depth; ++i) hex += "81";
  return hex + "80";
}

TEST(CborTest, DecodeDepthExactlyAtLimitPasses) {
  EXPECT_TRUE(Decode(NestedListHex(32)).ok());
}

TEST(CborTest, DecodeDepthOneOverLimitFailsNamingTheLimit) {
  auto v = Decode(NestedListHex(33));
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), Code::kLimitExceeded);
  EXPECT_EQ(v.status().message(), "value depth exceeds limit max_depth=32");
}

TEST(CborTest, DecodeStopsAtTheDepthLimitOnHugeNesting) {
  // Given 1,000,000 nested list heads (would overflow the stack if followed)
  const std::vector<std::uint8_t> bytes(1000000, 0x81);
  // When / then: rejected for depth, not for truncation
  auto v = DecodeCbor(bytes, ValueLimits{});
  EXPECT_EQ(v.status().code(), Code::kLimitExceeded);
}

TEST(CborTest, DecodeNodesExactlyAtLimitPass) {
  // A list of 4,095 zeros: 4,096 nodes.
  std::vector<std::uint8_t> bytes = {0x99, 0x0f, 0xff};
  bytes.resize(bytes.size() + 4095, 0x00);
  EXPECT_TRUE(DecodeCbor(bytes, ValueLimits{}).ok());
}

TEST(CborTest, DecodeNodesOneOverLimitFailNamingTheLimit) {
  std::vector<std::uint8_t> bytes = {0x99, 0x10, 0x00};
  bytes.resize(bytes.size() + 4096, 0x00);
  auto v = DecodeCbor(bytes, ValueLimits{});
  EXPECT_EQ(v.status().code(), Code::kLimitExceeded);
  EXPECT_EQ(v.status().message(), "value node count exceeds limit max_nodes=4096");
}

TEST(CborTest, DecodeCountsNodesAcrossNestedContainers) {
  // [[0, 0], 0]: 5 nodes.
  EXPECT_TRUE(Decode("8282000000", ValueLimits{.max_nodes = 5}).ok());
  EXPECT_EQ(Decode("8282000000", ValueLimits{.max_nodes = 4}).status().code(),
            Code::kLimitExceeded);
}

TEST(CborTest, DecodeStringBytesExactlyAtLimitPass) {
  // {"k": "<1 MiB - 1 bytes>"}
  std::vector<std::uint8_t> bytes = {0xa1, 0x61, 'k', 0x7a, 0x00, 0x0f, 0xff, 0xff};
  bytes.resize(bytes.size() + (1 << 20) - 1, 'x');
  EXPECT_TRUE(DecodeCbor(bytes, ValueLimits{}).ok());
}

TEST(CborTest, DecodeStringBytesOneOverLimitFailNamingTheLimit) {
  std::vector<std::uint8_t> bytes = {0xa1, 0x62, 'k', 'k', 0x7a, 0x00, 0x0f, 0xff, 0xff};
  bytes.resize(bytes.size() + (1 << 20) - 1, 'x');
  auto v = DecodeCbor(bytes, ValueLimits{});
  EXPECT_EQ(v.status().code(), Code::kLimitExceeded);
  EXPECT_EQ(v.status().message(),
            "value string and key bytes exceed limit max_string_bytes=1048576");
}

TEST(CborTest, DecodeDoesNotCountActorRefsAsStringBytes) {
  EXPECT_TRUE(Decode(kRefCbor, ValueLimits{.max_string_bytes = 0}).ok());
}

TEST(CborTest, DecodeInputExactlyAtSizeLimitPasses) {
  // A 4 MiB buffer: a list of 1 string filling the rest.
  std::vector<std::uint8_t> bytes = {0x7a, 0x00, 0x3f, 0xff, 0xfb};
  bytes.resize(4 << 20, 'x');
  const ValueLimits limits{.max_string_bytes = 4 << 20};
  EXPECT_TRUE(DecodeCbor(bytes, limits).ok());
}

TEST(CborTest, DecodeInputOverSizeLimitFailsNamingTheLimit) {
  const std::vector<std::uint8_t> bytes((4 << 20) + 1, 0x00);
  auto v = DecodeCbor(bytes, ValueLimits{});
  EXPECT_EQ(v.status().code(), Code::kLimitExceeded);
  EXPECT_EQ(v.status().message(),
            "CBOR input of 4194305 bytes exceeds limit max_cbor_bytes=4194304");
}

TEST(CborTest, EncodeEnforcesValueLimits) {
  Value v = Value::ListOf({});
  for (int i = 0; i < 33; ++i) v = Value::ListOf({std::move(v)});
  auto bytes = EncodeCbor(v, ValueLimits{});
  EXPECT_EQ(bytes.status().code(), Code::kLimitExceeded);
  EXPECT_EQ(bytes.status().message(), "value depth exceeds limit max_depth=32");
}

TEST(CborTest, EncodeEnforcesOutputSizeLimit) {
  const Value v = Value::String(std::string(100, 'x'));
  EXPECT_TRUE(EncodeCbor(v, ValueLimits{.max_cbor_bytes = 102}).ok());
  auto bytes = EncodeCbor(v, ValueLimits{.max_cbor_bytes = 101});
  EXPECT_EQ(bytes.status().code(), Code::kLimitExceeded);
  EXPECT_EQ(bytes.status().message(), "encoded CBOR of 102 bytes exceeds limit max_cbor_bytes=101");
}

}  // namespace
}  // namespace reef
