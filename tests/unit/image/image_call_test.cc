// Calls between the image's actors over the real protocol: an actor that calls another is
// `awaiting` in `inspect` (with what it waits for) until the reply comes, in manual mode where
// ticks drive it; a reply that comes after the caller was killed is dropped, never failing
// the replier (docs/runtime.md "Calls between actors").
#include <gtest/gtest.h>

#include <string>

#include "image_test_support.h"

namespace reef::image {
namespace {

using test_support::Client;
using test_support::json;

// Calls the actor in the message (a ref) with null and keeps the reply as its state.
constexpr const char* kAsker = R"(#include "reef.h"
static reef_cbor handle(reef_cbor state, reef_cbor sender, reef_cbor message) {
  (void)state; (void)sender;
  reef_actor_ref target;
  if (reef_read_actor(&message, &target) != REEF_OK) reef_fail("asker: send me a ref");
  reef_cbor reply;
  int rc = reef_call(&target, reef_value_null(), 60000, &reply);
  if (rc != REEF_OK) reef_failf("asker: %s", reef_strerror(rc));
  return reply;
}
REEF_ACTOR(handle);
)";

// Answers every message with its state.
constexpr const char* kAnswerer = R"(#include "reef.h"
static reef_cbor handle(reef_cbor state, reef_cbor sender, reef_cbor message) {
  (void)message;
  reef_reply(sender, state);
  return state;
}
REEF_ACTOR(handle);
)";

class ImageCallTest : public test_support::ImageFixture {
 protected:
  void SetUp() override {
    test_support::ImageFixture::SetUp();
    if (!HaveClang()) GTEST_SKIP() << "no clang for wasm32 configured";
    client_ = Connect();
    for (const auto& [path, text] : {std::pair{"test/asker", kAsker}, {"test/answer", kAnswerer}}) {
      client_->Ok("write", {{"path", path}, {"kind", "c"}, {"text", text}, {"expected", nullptr}});
    }
    asker_ = Spawn("test/asker", 0);
    answerer_ = Spawn("test/answer", 42);
  }
  std::string Spawn(const std::string& path, json state) {
    return client_->Ok("spawn", {{"path", path}, {"state", std::move(state)}}).value("actor", "");
  }
  json Inspect(const std::string& actor) { return client_->Ok("inspect", {{"actor", actor}}); }
  void Ask() { client_->Ok("send", {{"actor", asker_}, {"message", {{"$actor", answerer_}}}}); }

  std::unique_ptr<Client> client_;
  std::string asker_, answerer_;
};

TEST_F(ImageCallTest, TheCallerIsAwaitingUntilTheReplyComesThenCommitsIt) {
  client_->Ok("pause", {{"actor", answerer_}});
  Ask();
  client_->Ok("tick", {{"count", 3}});
  json waiting = Inspect(asker_);
  EXPECT_EQ(waiting["status"], "awaiting") << waiting.dump();
  EXPECT_EQ(waiting["awaiting"]["call"], answerer_) << waiting.dump();
  EXPECT_EQ(waiting["awaiting"]["timeout_ms"], 60000);
  EXPECT_EQ(waiting["telemetry"]["function"], "reef.call");
  client_->Ok("resume", {{"actor", answerer_}});
  client_->Ok("tick", {{"count", 3}});
  json done = Inspect(asker_);
  EXPECT_EQ(done["status"], "idle") << done.dump();
  EXPECT_EQ(done["state"], 42);
  EXPECT_TRUE(done["awaiting"].is_null());
}

TEST_F(ImageCallTest, AReplyToAKilledCallerIsDroppedAndTheReplierCommits) {
  client_->Ok("pause", {{"actor", answerer_}});
  Ask();
  client_->Ok("tick", {{"count", 2}});
  ASSERT_EQ(Inspect(asker_)["status"], "awaiting");
  client_->Ok("kill", {{"actor", asker_}});
  client_->Ok("resume", {{"actor", answerer_}});
  json report = client_->Ok("tick", {{"count", 3}});
  EXPECT_EQ(report["failures"], 0) << report.dump();
  json replier = Inspect(answerer_);
  EXPECT_EQ(replier["status"], "idle") << replier.dump();
  EXPECT_EQ(replier["queued"].size(), 0u);
  json caller = Inspect(asker_);
  EXPECT_EQ(caller["status"], "stopped");
  EXPECT_EQ(caller["state"], 0) << "the reply never reaches the killed caller";
}

// The bundled examples: actors/asker calls a counter with {"op": "get"} and keeps its value.
TEST_F(ImageCallTest, TheBundledAskerGetsACountersValue) {
  std::string counter = Spawn("actors/counter", 41);
  std::string asker = Spawn("actors/asker", 0);
  client_->Ok("pause", {{"actor", counter}});
  client_->Ok("send",
              {{"actor", asker}, {"message", {{"op", "ask"}, {"target", {{"$actor", counter}}}}}});
  client_->Ok("tick", {{"count", 100}});
  json waiting = Inspect(asker);
  EXPECT_EQ(waiting["status"], "awaiting") << waiting.dump();
  EXPECT_EQ(waiting["awaiting"]["call"], counter);
  client_->Ok("resume", {{"actor", counter}});
  json report = client_->Ok("tick", {{"count", 100}});
  EXPECT_EQ(report["failures"], 0) << report.dump();
  EXPECT_EQ(Inspect(asker)["state"], 41);
  EXPECT_EQ(Inspect(counter)["state"], 41);
}

}  // namespace
}  // namespace reef::image
