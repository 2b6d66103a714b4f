#include "core/value.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "core/limits.h"
#include "core/utf8.h"
#include "value_test_util.h"

namespace reef {
namespace {

using testing_util::RefFromSeed;

TEST(ValueTest, DefaultIsNull) {
  // Given / when
  Value v;
  // Then
  EXPECT_TRUE(v.is_null());
  EXPECT_EQ(v.kind(), Kind::kNull);
  EXPECT_EQ(v, Value::Null());
}

TEST(ValueTest, FactoriesSetKindAndAccessorsReturnContents) {
  const ActorRef ref = RefFromSeed(7);
  EXPECT_EQ(Value::Bool(true).as_bool(), true);
  EXPECT_EQ(Value::Int(-5).as_int(), -5);
  EXPECT_EQ(Value::Float(2.5).as_float(), 2.5);
  EXPECT_EQ(Value::String("hé").as_string(), "hé");
  EXPECT_EQ(Value::ListOf({Value::Int(1)}).as_list().size(), 1u);
  EXPECT_EQ(Value::RecordOf({{"k", Value::Null()}}).as_record().count("k"), 1u);
  EXPECT_EQ(Value::Ref(ref).as_actor_ref(), ref);
}

TEST(ValueTest, KindNamesAreStableLowercase) {
  EXPECT_EQ(Value().kind_name(), "null");
  EXPECT_EQ(Value::Bool(false).kind_name(), "bool");
  EXPECT_EQ(Value::Int(0).kind_name(), "int");
  EXPECT_EQ(Value::Float(0).kind_name(), "float");
  EXPECT_EQ(Value::String("").kind_name(), "string");
  EXPECT_EQ(Value::ListOf({}).kind_name(), "list");
  EXPECT_EQ(Value::RecordOf({}).kind_name(), "record");
  EXPECT_EQ(Value::Ref(RefFromSeed(1)).kind_name(), "actor_ref");
}

TEST(ValueTest, EqualityIsDeepAndKindSensitive) {
  const Value a = Value::RecordOf({{"x", Value::ListOf({Value::Int(1), Value::String("s")})}});
  const Value b = Value::RecordOf({{"x", Value::ListOf({Value::Int(1), Value::String("s")})}});
  const Value c = Value::RecordOf({{"x", Value::ListOf({Value::Int(1), Value::String("t")})}});
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(Value::Int(1), Value::Float(1.0));
  EXPECT_NE(Value::Bool(false), Value::Null());
}

TEST(ValueTest, FloatsCompareByBitPatternSoNegativeZeroDiffers) {
  EXPECT_NE(Value::Float(0.0), Value::Float(-0.0));
  EXPECT_EQ(Value::Float(-0.0), Value::Float(-0.0));
}

TEST(ValueTest, RecordKeysAreKeptInBytewiseOrder) {
  // Given fields inserted out of order
  Value v = Value::RecordOf({{"b", Value()}, {"a", Value()}, {"B", Value()}});
  // Then iteration is bytewise
  std::string order;
  for (const auto& [key, field] : v.as_record()) order += key;
  EXPECT_EQ(order, "Bab");
}

TEST(ValueTest, MoveLeavesContentsInTarget) {
  Value src = Value::ListOf({Value::String(std::string(100, 'x'))});
  Value dst = std::move(src);
  EXPECT_EQ(dst.as_list()[0].as_string().size(), 100u);
}

TEST(ValueTest, MutableAccessorsEditInPlace) {
  Value v = Value::RecordOf({});
  v.as_record().emplace("n", Value::Int(1));
  Value list = Value::ListOf({});
  list.as_list().push_back(std::move(v));
  EXPECT_EQ(list, Value::ListOf({Value::RecordOf({{"n", Value::Int(1)}})}));
}

TEST(ValueActorRefTest, ParseAcceptsTwentyOneAlphabetCharacters) {
  auto ref = ActorRef::Parse("V1StGXR8_Z5jdHi6B-myT");
  ASSERT_TRUE(ref.ok()) << ref.status().ToString();
  EXPECT_EQ(ref->str(), "V1StGXR8_Z5jdHi6B-myT");
}

TEST(ValueActorRefTest, ParseRejectsWrongLength) {
  auto ref = ActorRef::Parse("V1StGXR8_Z5jdHi6B-my");
  ASSERT_FALSE(ref.ok());
  EXPECT_EQ(ref.status().code(), Code::kInvalidArgument);
  EXPECT_NE(ref.status().message().find("21 characters"), std::string::npos);
}

TEST(ValueActorRefTest, ParseRejectsCharacterOutsideAlphabet) {
  auto ref = ActorRef::Parse("V1StGXR8_Z5jdHi6B+myT");
  ASSERT_FALSE(ref.ok());
  EXPECT_EQ(ref.status().code(), Code::kInvalidArgument);
  EXPECT_NE(ref.status().message().find("offset 17"), std::string::npos);
}

TEST(ValueActorRefTest, GenerateGivesDistinctValidRefs) {
  auto a = ActorRef::Generate();
  auto b = ActorRef::Generate();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(IsValidNanoId(a->str()));
  EXPECT_NE(*a, *b);
}

TEST(ValueActorRefTest, ReplyAddressesHaveAShapeNoGeneratedRefHas) {
  // Without the rule about 1 in 4,096 NanoIDs starts with "__": 40,000 draws would give ~10.
  for (int i = 0; i < 40'000; ++i) {
    auto ref = ActorRef::Generate();
    ASSERT_TRUE(ref.ok());
    ASSERT_FALSE(ref->is_reply_address()) << ref->str();
  }
  auto address = ActorRef::GenerateReplyAddress();
  ASSERT_TRUE(address.ok());
  EXPECT_TRUE(address->is_reply_address());
  EXPECT_TRUE(address->str().starts_with("__"));
  auto parsed = ActorRef::Parse(address->str());
  ASSERT_TRUE(parsed.ok()) << "a reply address is a valid actor ref";
  EXPECT_EQ(*parsed, *address);
  EXPECT_NE(*ActorRef::GenerateReplyAddress(), *address);
}

TEST(ValueUtf8Test, AcceptsWellFormedText) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("plain"));
  EXPECT_TRUE(IsValidUtf8("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"));  // é € 😀
  EXPECT_TRUE(IsValidUtf8("\xf4\x8f\xbf\xbf"));                      // U+10FFFF
  EXPECT_TRUE(IsValidUtf8(std::string("a\0b", 3)));
}

TEST(ValueUtf8Test, RejectsIllFormedTextAtItsOffset) {
  EXPECT_EQ(FindInvalidUtf8("ab\x80"), 2u);            // stray continuation
  EXPECT_EQ(FindInvalidUtf8("\xc0\xaf"), 0u);          // overlong "/"
  EXPECT_EQ(FindInvalidUtf8("\xe0\x80\xaf"), 0u);      // overlong, 3 bytes
  EXPECT_EQ(FindInvalidUtf8("x\xed\xa0\x80"), 1u);     // surrogate U+D800
  EXPECT_EQ(FindInvalidUtf8("\xf4\x90\x80\x80"), 0u);  // above U+10FFFF
  EXPECT_EQ(FindInvalidUtf8("\xe2\x82"), 0u);          // truncated
  EXPECT_EQ(FindInvalidUtf8("\xff"), 0u);              // never valid
}

}  // namespace
}  // namespace reef
