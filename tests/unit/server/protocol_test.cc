#include "server/protocol.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace reef::server
