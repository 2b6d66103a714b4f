#include "server/protocol.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace reef::server {
namespace {

using json = nlohmann::json;

TEST(ProtocolTest, ParseRequestAcceptsAMinimalRequest) {
  json id;
  auto request = ParseRequest(R"({"v":1,"id":"a","op":"ping"})", &id);

  ASSERT_TRUE(request.ok()) << request.status().ToString();
  EXPECT_EQ(request->id, "a");
  EXPECT_EQ(request->op, "ping");
  EXPECT_EQ(request->args, json::object());
}

TEST(ProtocolTest, ANumberBeyondFloat64IsRefusedNamingTheNumberRule) {
  json id;
  auto request = ParseRequest(R"({"v":1,"id":1,"op":"x","args":{"n":1e400}})", &id);
  ASSERT_FALSE(request.ok());
  EXPECT_NE(request.status().message().find("number 1e400 is outside the float64 range"),
            std::string::npos)
      << request.status().message();
}

TEST(ProtocolTest, DeepNestingIsRejectedBeforeParsing) {
  std::string frame = R"({"v":1,"id":9,"op":"ping","args":{"x":)" + std::string(100'000, '[') +
                      std::string(100'000, ']') + "}}";
  json id;

  auto request = ParseRequest(frame, &id);

  ASSERT_FALSE(request.ok());
  EXPECT_EQ(request.status().code(), Code::kInvalidArgument);
  EXPECT_NE(request.status().message().find("deeper than"), std::string::npos);
}

TEST(ProtocolTest, IdOfAnotherTypeIsRejectedAndNotEchoed) {
  json id;
  auto request = ParseRequest(R"({"v":1,"id":[1],"op":"ping"})", &id);

  ASSERT_FALSE(request.ok());
  EXPECT_TRUE(id.is_null());
  EXPECT_NE(request.status().message().find("string or number"), std::string::npos);
}

TEST(ProtocolTest, RegisterRefusesADuplicateName) {
  ProtocolDispatcher dispatcher;
  ASSERT_TRUE(RegisterBuiltinOps(dispatcher).ok());

  Status again = dispatcher.Register(
      "ping", "again", [](const json&, Connection&) -> Result<json> { return json::object(); });

  EXPECT_EQ(again.code(), Code::kAlreadyExists);
}

TEST(ProtocolTest, NumbersOutOfRangeAreErrorsNotCrashesOrSilentRounding) {
  // A float64 overflow (nlohmann throws out_of_range 406 on it), and integer literals past
  // int64/uint64 (nlohmann would turn them into doubles and lose their value).
  for (const char* frame : {R"({"v":1,"id":1e400,"op":"ping"})",
                            R"({"v":1,"id":1,"op":"send","args":{"message":-1e999}})",
                            R"({"v":1,"id":1,"op":"spawn","args":{"state":-9223372036854775809}})",
                            R"({"v":1,"id":1,"op":"spawn","args":{"state":18446744073709551616}})",
                            R"({"v":1,"id":1,"op":"spawn","args":{"state":9223372036854775808}})",
                            R"({"v":1,"id":1,"op":"spawn","args":{"state":18446744073709551615}})",
                            R"({"v":1,"id":1,"op":"spawn","args":{"state":1e-400}})"}) {
    json id;
    auto request = ParseRequest(frame, &id);
    ASSERT_FALSE(request.ok()) << frame;
    EXPECT_EQ(request.status().code(), Code::kInvalidArgument) << frame;
    EXPECT_TRUE(request.status().message().find("range") != std::string::npos ||
                request.status().message().find("number") != std::string::npos)
        << request.status().ToString();
  }
  // while in-range extremes and floats still parse, with their exact values
  json id;
  auto request = ParseRequest(
      R"({"v":1,"id":2,"op":"x","args":{"a":-9223372036854775808,"b":9223372036854775807,"c":1.5e300,"d":0e-999}})",
      &id);
  ASSERT_TRUE(request.ok()) << request.status().ToString();
  EXPECT_EQ(request->args["a"].get<int64_t>(), INT64_MIN);
  EXPECT_EQ(request->args["b"].get<int64_t>(), INT64_MAX);
  EXPECT_EQ(request->args["d"].get<double>(), 0.0);
  EXPECT_EQ(request->args["c"].get<double>(), 1.5e300);
}

TEST(ProtocolTest, MalformedJsonNamesTheBytePosition) {
  json id;
  auto request = ParseRequest(R"({"v":1,"id":1,"op":})", &id);
  ASSERT_FALSE(request.ok());
  EXPECT_NE(request.status().message().find("malformed JSON at byte 20"), std::string::npos)
      << request.status().ToString();
}

}  // namespace
}  // namespace reef::server
