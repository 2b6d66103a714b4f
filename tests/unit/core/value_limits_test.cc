#include <gtest/gtest.h>

#include <string>

#include "core/limits.h"
#include "core/value.h"

namespace reef {
namespace {

// A list nested `depth` levels below the root: depth 0 is an empty list at the root.
Value NestedList(std::size_t depth) {
  Value v = Value::ListOf({});
  for (std::size_t i = 0; i < depth; ++i) v = Value::ListOf({std::move(v)});
  return v;
}

// A list holding `n - 1` nulls: `n` nodes with the root.
Value FlatNodes(std::size_t n) {
  return Value::ListOf(List(n - 1, Value()));
}

TEST(ValueLimitsTest, DefaultsAreTheAbiDefaults) {
  const ValueLimits limits;
  EXPECT_EQ(limits.max_depth, 32u);
  EXPECT_EQ(limits.max_nodes, 4096u);
  EXPECT_EQ(limits.max_string_bytes, 1u << 20);
  EXPECT_EQ(limits.max_cbor_bytes, 4u << 20);
  EXPECT_EQ(limits.max_json_bytes, 4u << 20);
  EXPECT_EQ(TransitionLimits{}.max_sends_per_transition, 4096u);
}

TEST(ValueLimitsTest, DepthExactlyAtLimitPasses) {
  EXPECT_TRUE(CheckLimits(NestedList(32), ValueLimits{}).ok());
}

TEST(ValueLimitsTest, DepthOneOverLimitFailsNamingTheLimit) {
  // Given a value whose deepest node is at depth 33
  const Value v = NestedList(33);
  // When
  const Status s = CheckLimits(v, ValueLimits{});
  // Then
  EXPECT_EQ(s.code(), Code::kLimitExceeded);
  EXPECT_EQ(s.message(), "value depth exceeds limit max_depth=32");
}

TEST(ValueLimitsTest, ScalarRootIsDepthZero) {
  EXPECT_TRUE(CheckLimits(Value::Int(1), ValueLimits{.max_depth = 0}).ok());
  EXPECT_FALSE(CheckLimits(Value::ListOf({Value()}), ValueLimits{.max_depth = 0}).ok());
}

TEST(ValueLimitsTest, NodesExactlyAtLimitPass) {
  EXPECT_TRUE(CheckLimits(FlatNodes(4096), ValueLimits{}).ok());
}

TEST(ValueLimitsTest, NodesOneOverLimitFailNamingTheLimit) {
  const Status s = CheckLimits(FlatNodes(4097), ValueLimits{});
  EXPECT_EQ(s.code(), Code::kLimitExceeded);
  EXPECT_EQ(s.message(), "value node count exceeds limit max_nodes=4096");
}

TEST(ValueLimitsTest, RecordKeysAreNotNodes) {
  const Value v = Value::RecordOf({{"a", Value()}, {"b", Value()}});
  EXPECT_TRUE(CheckLimits(v, ValueLimits{.max_nodes = 3}).ok());
  EXPECT_FALSE(CheckLimits(v, ValueLimits{.max_nodes = 2}).ok());
}

TEST(ValueLimitsTest, StringBytesExactlyAtLimitPass) {
  // Given 1 MiB split between a key and two strings
  const std::size_t mib = 1 << 20;
  const Value v =
      Value::RecordOf({{std::string(10, 'k'), Value::ListOf({
                                                  Value::String(std::string(mib - 20, 's')),
                                                  Value::String(std::string(10, 't')),
                                              })}});
  EXPECT_TRUE(CheckLimits(v, ValueLimits{}).ok());
}

TEST(ValueLimitsTest, StringBytesOneOverLimitFailNamingTheLimit) {
  const std::size_t mib = 1 << 20;
  const Value v =
      Value::RecordOf({{std::string(11, 'k'), Value::String(std::string(mib - 10, 's'))}});
  const Status s = CheckLimits(v, ValueLimits{});
  EXPECT_EQ(s.code(), Code::kLimitExceeded);
  EXPECT_EQ(s.message(), "value string and key bytes exceed limit max_string_bytes=1048576");
}

TEST(ValueLimitsTest, ActorRefsDoNotCountAsStringBytes) {
  auto ref = ActorRef::Parse("V1StGXR8_Z5jdHi6B-myT");
  ASSERT_TRUE(ref.ok());
  EXPECT_TRUE(CheckLimits(Value::Ref(*ref), ValueLimits{.max_string_bytes = 0}).ok());
}

TEST(ValueLimitsTest, ConfiguredLimitIsNamedWithItsValue) {
  const Status s = CheckLimits(NestedList(4), ValueLimits{.max_depth = 3});
  EXPECT_EQ(s.message(), "value depth exceeds limit max_depth=3");
}

}  // namespace
}  // namespace reef
