// The event store's HTTP routes on a real Server over loopback (docs/http-api.md).
#include "events/http/event_routes.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "event_store_test_support.h"
#include "events/http/event_json.h"
#include "support/http_test_client.h"

namespace reef::events {
namespace {

using json = nlohmann::json;
using boost::beast::http::verb;

class EventRoutesTest : public testing::EventStoreTest {
 protected:
  void SetUp() override {
    EventStoreTest::SetUp();
    StartServer();
  }
  void TearDown() override { server_.reset(); }

  void StartServer() {
    server::ServerOptions options;
    options.listen = "127.0.0.1:0";
    options.routes = http::EventRoutes(*store_, route_options_);
    auto server = server::Server::Start(std::move(options));
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
  }

  reef::testing::HttpResult Post(const std::string& target, const json& body) {
    return reef::testing::HttpCall(server_->port(), verb::post, target, body.dump());
  }
  reef::testing::HttpResult PostText(const std::string& target, const std::string& body) {
    return reef::testing::HttpCall(server_->port(), verb::post, target, body);
  }

  http::EventRouteOptions route_options_;
  std::unique_ptr<server::Server> server_;
};

TEST_F(EventRoutesTest, AppendReadAndHeadRoundTripJsonAndBase64Data) {
  auto appended = Post("/events/append", {{"events",
                                           {{{"type", "CourseDefined"},
                                             {"tags", {"course:c1", "course:c1"}},
                                             {"data", {{"courseId", "c1"}, {"capacity", 10}}},
                                             {"metadata", {{"correlation_id", "req-7"}}}},
                                            {{"type", "Blob"}, {"data_base64", "AP8="}}}}});
  ASSERT_EQ(appended.status, 200u) << appended.text;
  EXPECT_EQ(appended.body, (json{{"position", 2}}));

  auto head = reef::testing::HttpGet(server_->port(), "/events/head");
  EXPECT_EQ(head.body, (json{{"head", 2}}));

  auto read = Post("/events/read", json::object());
  ASSERT_EQ(read.status, 200u) << read.text;
  EXPECT_EQ(read.body["head"], 2);
  EXPECT_EQ(read.body["truncated"], false);
  const json& events = read.body["events"];
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0]["position"], 1);
  EXPECT_EQ(events[0]["type"], "CourseDefined");
  EXPECT_EQ(events[0]["tags"], (json{"course:c1"}));  // duplicates dropped
  EXPECT_EQ(events[0]["data"], (json{{"courseId", "c1"}, {"capacity", 10}}));
  EXPECT_EQ(events[0]["metadata"]["correlation_id"], "req-7");
  EXPECT_TRUE(ParseEventId(events[0]["id"].get<std::string>()).ok());
  EXPECT_EQ(events[1]["data_base64"], "AP8=");  // bytes that are not JSON stay base64
  EXPECT_FALSE(events[1].contains("data"));

  auto forced = Post("/events/read", {{"data_encoding", "base64"}, {"limit", 1}});
  ASSERT_EQ(forced.status, 200u);
  EXPECT_EQ(forced.body["events"][0]["data_base64"],
            Base64Encode(R"({"capacity":10,"courseId":"c1"})"));
}

TEST_F(EventRoutesTest, ConditionalAppendConflictIs409AndRetryReturnsThePosition) {
  json event = {{"type", "Registered"},
                {"tags", {"user:ada"}},
                {"id", "3f1c2a60-1d6e-4b8e-9a3e-6f0d5c4b3a21"}};
  json condition = {{"fail_if_events_match", {{"items", {{{"tags", {"user:ada"}}}}}}},
                    {"after", 0}};
  json request = {{"events", {event}}, {"condition", condition}};
  auto first = Post("/events/append", request);
  ASSERT_EQ(first.status, 200u) << first.text;
  // The same request again (a retry): the original position, nothing written.
  auto retry = Post("/events/append", request);
  ASSERT_EQ(retry.status, 200u) << retry.text;
  EXPECT_EQ(retry.body["position"], 1);
  // Another event for the same user under the same condition: a conflict.
  request["events"][0]["id"] = "3f1c2a60-1d6e-4b8e-9a3e-6f0d5c4b3a22";
  auto conflict = Post("/events/append", request);
  EXPECT_EQ(conflict.status, 409u);
  EXPECT_EQ(conflict.body["error"]["code"], "conflict");
  EXPECT_EQ(store_->Head(), 1u);
}

TEST_F(EventRoutesTest, EventsCarryTheApplicationsOwnMetadata) {
  // Keys besides Reef's own are kept as the application's metadata, and read back with them.
  json metadata = {{"correlation_id", "req-1"}, {"minutesAgo", 5}, {"source", {{"app", "web"}}}};
  ASSERT_EQ(
      Post("/events/append", {{"events", {{{"type", "Seen"}, {"metadata", metadata}}}}}).status,
      200u);
  auto read = Post("/events/read", json::object());
  ASSERT_EQ(read.status, 200u) << read.text;
  json got = read.body["events"][0]["metadata"];
  EXPECT_EQ(got["correlation_id"], "req-1");
  EXPECT_EQ(got["minutesAgo"], 5);
  EXPECT_EQ(got["source"], json({{"app", "web"}}));
  EXPECT_TRUE(got.contains("timestamp_ms"));
  // Bounded: 4,096 bytes of JSON at most, named in the error.
  json big = {{"blob", std::string(5000, 'x')}};
  auto refused = Post("/events/append", {{"events", {{{"type", "Seen"}, {"metadata", big}}}}});
  EXPECT_EQ(refused.status, 413u) << refused.text;
  EXPECT_NE(refused.text.find("max_user_metadata_bytes"), std::string::npos) << refused.text;
  auto not_object = Post("/events/append", {{"events", {{{"type", "Seen"}, {"metadata", 5}}}}});
  EXPECT_EQ(not_object.status, 400u) << not_object.text;
  EXPECT_EQ(store_->Head(), 1u);
}

TEST_F(EventRoutesTest, ReusingAStoredEventIdIs409DuplicateEventId) {
  json event = {{"type", "Deposited"},
                {"tags", {"account:1"}},
                {"data", {{"amount", 10}}},
                {"id", "3f1c2a60-1d6e-4b8e-9a3e-6f0d5c4b3a21"}};
  ASSERT_EQ(Post("/events/append", {{"events", {event}}}).status, 200u);
  // The same event again, with no condition: a retry, answered with its position.
  auto retry = Post("/events/append", {{"events", {event}}});
  ASSERT_EQ(retry.status, 200u) << retry.text;
  EXPECT_EQ(retry.body["position"], 1);
  // The same id with other data: refused, naming the id and where it is stored.
  event["data"]["amount"] = 99;
  auto reused = Post("/events/append", {{"events", {event}}});
  EXPECT_EQ(reused.status, 409u);
  EXPECT_EQ(reused.body["error"]["code"], "duplicate_event_id");
  std::string message = reused.body["error"]["message"];
  EXPECT_NE(message.find("3f1c2a60-1d6e-4b8e-9a3e-6f0d5c4b3a21"), std::string::npos) << message;
  EXPECT_NE(message.find("position 1"), std::string::npos) << message;
  EXPECT_EQ(store_->Head(), 1u);
}

TEST_F(EventRoutesTest, TheNilUuidIsNotAnEventId) {
  // It means "no id" inside the store; given by a client it would be swapped for a random id,
  // and a retry would then store the event twice.
  auto nil = Post("/events/append",
                  {{"events", {{{"type", "T"}, {"id", "00000000-0000-0000-0000-000000000000"}}}}});
  EXPECT_EQ(nil.status, 400u) << nil.text;
  EXPECT_EQ(nil.body["error"]["code"], "invalid_argument");
  std::string message = nil.body["error"]["message"];
  EXPECT_NE(message.find("events[0].id"), std::string::npos) << message;
  EXPECT_NE(message.find("nil UUID"), std::string::npos) << message;
  EXPECT_EQ(store_->Head(), 0u);
}

TEST_F(EventRoutesTest, ReadTakesQueryFromBackwardsAndLimit) {
  for (int i = 1; i <= 5; ++i) {
    ASSERT_EQ(
        Post("/events/append", {{"events", {{{"type", i % 2 ? "Odd" : "Even"}, {"tags", {"n"}}}}}})
            .status,
        200u);
  }
  auto read = Post("/events/read", {{"query", {{"items", {{{"types", {"Odd"}}}}}}},
                                    {"from", 5},
                                    {"backwards", true},
                                    {"limit", 2}});
  ASSERT_EQ(read.status, 200u) << read.text;
  ASSERT_EQ(read.body["events"].size(), 2u);
  EXPECT_EQ(read.body["events"][0]["position"], 5);
  EXPECT_EQ(read.body["events"][1]["position"], 3);
  EXPECT_EQ(read.body["head"], 5);
}

TEST_F(EventRoutesTest, ReadsAreCutByTheRouteCapsAndSaySo) {
  route_options_.max_read_events = 3;
  server_.reset();
  StartServer();
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(Post("/events/append", {{"events", {{{"type", "A"}}}}}).status, 200u);
  }
  auto read = Post("/events/read", json::object());
  ASSERT_EQ(read.status, 200u);
  EXPECT_EQ(read.body["events"].size(), 3u);
  EXPECT_EQ(read.body["truncated"], true);
  EXPECT_EQ(read.body["head"], 3);  // read on from 4
}

TEST_F(EventRoutesTest, BadRequestsGetAnExplicitErrorAndChangeNothing) {
  struct Case {
    std::string body;
    unsigned status;
    std::string message;
  };
  std::vector<Case> cases = {
      {"{not json", 400, "malformed JSON at byte"},
      {"[]", 400, "must be a JSON object"},
      {R"({"events": []})", 400, "non-empty array"},
      {R"({"events": [{"type": "A"}], "extra": 1})", 400, "extra is not a known field"},
      {R"({"events": [{"type": "A", "colour": 1}]})", 400, "events[0].colour is not a known field"},
      {R"({"events": [{"type": 7}]})", 400, "events[0].type must be a string"},
      {R"({"events": [{"type": "A", "tags": ["ok", 3]}]})", 400,
       "events[0].tags[1] must be a string"},
      {R"({"events": [{"type": "A", "data": 1, "data_base64": "AA=="}]})", 400, "give one"},
      {R"({"events": [{"type": "A", "data_base64": "@@@@"}]})", 400, "is not base64"},
      {R"({"events": [{"type": "A", "id": "nope"}]})", 400, "events[0].id"},
      {R"({"events": [{"type": ""}]})", 400, "type is empty"},
      {R"({"events": [{"type": "A"}], "condition": {"after": 1}})", 400,
       "condition.fail_if_events_match is required"},
      {R"({"events": [{"type": "A"}], "condition": {"fail_if_events_match": {"items": [{}]}}})",
       400, "neither types nor tags"},
      {R"({"events": [{"type": "A"}], "condition": {"fail_if_events_match": {}, "after": -1}})",
       400, "condition.after must be a non-negative integer"},
  };
  for (const Case& c : cases) {
    auto result = PostText("/events/append", c.body);
    EXPECT_EQ(result.status, c.status) << c.body << " -> " << result.text;
    EXPECT_NE(result.text.find(c.message), std::string::npos) << c.body << " -> " << result.text;
  }
  auto bad_read = Post("/events/read", {{"from", 1.5}});
  EXPECT_EQ(bad_read.status, 400u);
  auto wrong_method = reef::testing::HttpGet(server_->port(), "/events/append");
  EXPECT_EQ(wrong_method.status, 405u);
  EXPECT_EQ(store_->Head(), 0u);
}

TEST_F(EventRoutesTest, AnAppendLargerThanTheServerLimitButWithinTheStoreLimitIsAccepted) {
  // 3 MiB of data: over the server's 1 MiB default body limit, within the 16 MiB append limit.
  json events = json::array();
  for (int i = 0; i < 3; ++i) {
    events.push_back({{"type", "Chunk"}, {"data", std::string(1'000'000, 'x')}});
  }
  auto appended = Post("/events/append", {{"events", events}});
  ASSERT_EQ(appended.status, 200u) << appended.ec.message() << " " << appended.text.substr(0, 300);
  EXPECT_EQ(appended.body["position"], 3);
  // Over the store's per-event limit: 413 with the limit's name.
  auto big = Post("/events/append",
                  {{"events", {{{"type", "Chunk"}, {"data", std::string(1u << 20, 'x')}}}}});
  EXPECT_EQ(big.status, 413u);
  EXPECT_NE(big.text.find("max_event_bytes"), std::string::npos);
}

TEST_F(EventRoutesTest, DeeplyNestedDataIsRefusedAndTheServerKeepsServing) {
  std::string deep = std::string(100'000, '[') + std::string(100'000, ']');
  auto appended = PostText("/events/append", R"({"events":[{"type":"D","data":)" + deep + "}]}");
  EXPECT_EQ(appended.status, 400u);
  EXPECT_NE(appended.text.find("deeper than"), std::string::npos) << appended.text;
  // Data stored as bytes that would nest that deep comes back as base64, not as JSON.
  auto stored =
      Post("/events/append", {{"events", {{{"type", "D"}, {"data_base64", Base64Encode(deep)}}}}});
  ASSERT_EQ(stored.status, 200u) << stored.text;
  auto read = Post("/events/read", json::object());
  ASSERT_EQ(read.status, 200u);
  EXPECT_EQ(read.body["events"][0]["data_base64"], Base64Encode(deep));
  EXPECT_EQ(reef::testing::HttpGet(server_->port(), "/health").status, 200u);
  // The limit is exact: 64 levels of data are accepted and read back as JSON, 65 are not.
  std::string at_limit = std::string(64, '[') + std::string(64, ']');
  ASSERT_EQ(
      PostText("/events/append", R"({"events":[{"type":"D","data":)" + at_limit + "}]}").status,
      200u);
  auto last = Post("/events/read", {{"backwards", true}, {"limit", 1}});
  EXPECT_TRUE(last.body["events"][0].contains("data")) << last.text.substr(0, 200);
  std::string over = std::string(65, '[') + std::string(65, ']');
  EXPECT_EQ(PostText("/events/append", R"({"events":[{"type":"D","data":)" + over + "}]}").status,
            400u);
}

TEST_F(EventRoutesTest, IntegersBeyondSixtyFourBitsAndNonCanonicalBase64AreRefused) {
  auto big = PostText("/events/append",
                      R"({"events":[{"type":"N","data":{"n":12345678901234567890123}}]})");
  EXPECT_EQ(big.status, 400u);
  EXPECT_NE(big.text.find("outside the int64 range"), std::string::npos) << big.text;
  // Numbers that nlohmann would round or flush to zero are refused the same way.
  for (const char* number : {"12345678901234567890", "9223372036854775808", "1e-400"}) {
    auto changed =
        PostText("/events/append",
                 fmt::format(R"({{"events":[{{"type":"N","data":{{"n":{}}}}}]}})", number));
    EXPECT_EQ(changed.status, 400u) << number;
    EXPECT_EQ(changed.body["error"]["code"], "invalid_argument") << number;
  }
  auto loose = Post("/events/append", {{"events", {{{"type", "B"}, {"data_base64", "AB=="}}}}});
  EXPECT_EQ(loose.status, 400u);
  EXPECT_NE(loose.text.find("not canonical base64"), std::string::npos) << loose.text;
  EXPECT_EQ(store_->Head(), 0u);
}

TEST_F(EventRoutesTest, TruncatedIsFalseWhenTheCapEndsExactlyAtTheLastMatch) {
  route_options_.max_read_events = 3;
  server_.reset();
  StartServer();
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(Post("/events/append", {{"events", {{{"type", "A"}}}}}).status, 200u);
  }
  auto forwards = Post("/events/read", json::object());
  EXPECT_EQ(forwards.body["events"].size(), 3u);
  EXPECT_EQ(forwards.body["truncated"], false);
  auto backwards = Post("/events/read", {{"backwards", true}});
  EXPECT_EQ(backwards.body["truncated"], false);
  ASSERT_EQ(Post("/events/append", {{"events", {{{"type", "A"}}}}}).status, 200u);
  backwards = Post("/events/read", {{"backwards", true}});
  EXPECT_EQ(backwards.body["truncated"], true);
  EXPECT_EQ(backwards.body["events"].back()["position"], 2);  // read on from 1
}

}  // namespace
}  // namespace reef::events
