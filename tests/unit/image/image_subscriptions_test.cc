// Per-connection state of the image (docs/protocol.md "Subscriptions and events"): the events
// cursor, log follow with its server-side filter, change notifications, and cleanup when a
// connection closes.
#include <gtest/gtest.h>

#include <string>
#include <thread>

#include "image_test_support.h"

namespace reef::image {
namespace {

using test_support::Client;
using test_support::ConstantActorWat;
using test_support::json;
using test_support::LoggingActorWat;

class ImageSubscriptionsTest : public test_support::ImageFixture {
 protected:
  void Create(Client& client, const std::string& path, const std::string& text) {
    client.Ok("write", {{"path", path}, {"kind", "wat"}, {"text", text}, {"expected", nullptr}});
  }
  std::string SpawnActor(Client& client, const std::string& path, json state = 0) {
    return client.Ok("spawn", {{"path", path}, {"state", std::move(state)}}).value("actor", "");
  }
};

std::vector<std::string> Kinds(const json& events) {
  std::vector<std::string> kinds;
  for (const json& event : events) kinds.push_back(event["kind"]);
  return kinds;
}

TEST_F(ImageSubscriptionsTest, EventsWithoutAfterDrainTheConnectionsQueue) {
  auto client = Connect();
  auto other = Connect();
  Create(*client, "actors/one", ConstantActorWat(1));
  std::string actor = SpawnActor(*client, "actors/one");

  // Given one spawned event: the first read returns it and moves this connection's cursor
  json first = client->Ok("events");
  EXPECT_EQ(Kinds(first["events"]), std::vector<std::string>{"spawned"});
  EXPECT_EQ(first["events"][0]["actor"], actor);
  EXPECT_EQ(first["missed"], false);
  EXPECT_EQ(first["more"], false);
  // then a second read is empty
  EXPECT_TRUE(client->Ok("events")["events"].empty());
  // a read with `after` does not move the cursor
  EXPECT_EQ(client->Ok("events", {{"after", 0}})["events"].size(), 1u);
  // each connection has its own cursor
  EXPECT_EQ(other->Ok("events")["events"].size(), 1u);
  // and later events arrive once
  client->Ok("send", {{"actor", actor}, {"message", 5}});
  client->Ok("tick");
  EXPECT_EQ(Kinds(client->Ok("events")["events"]), std::vector<std::string>{"committed"});
  EXPECT_TRUE(client->Ok("events")["events"].empty());
  // filters and paging
  json paged = client->Ok("events", {{"after", 0}, {"limit", 1}});
  EXPECT_EQ(paged["events"].size(), 1u);
  EXPECT_EQ(paged["more"], true);
  EXPECT_EQ(paged["next_after"], paged["events"][0]["seq"]);
  json committed = client->Ok("events", {{"after", 0}, {"kinds", {"committed"}}});
  EXPECT_EQ(Kinds(committed["events"]), std::vector<std::string>{"committed"});
}

TEST_F(ImageSubscriptionsTest, LogFollowDeliversOnlyMatchingEntriesToTheSubscriber) {
  auto follower = Connect();
  auto bystander = Connect();
  Create(*follower, "actors/loud", LoggingActorWat("from-loud", 2));
  Create(*follower, "actors/quiet", LoggingActorWat("from-quiet", 2));
  std::string loud = SpawnActor(*follower, "actors/loud");
  std::string quiet = SpawnActor(*follower, "actors/quiet");

  // Given a follower subscribed to the quiet actor's logs only
  json subscribed = follower->Ok("subscribe", {{"topic", "logs"}, {"actors", {"@" + quiet}}});
  EXPECT_EQ(subscribed["topic"], "logs");
  EXPECT_EQ(subscribed["after"], 0);
  // when both actors log (the loud one first)
  follower->Ok("send", {{"actor", loud}, {"message", nullptr}});
  follower->Ok("tick", {{"count", 10}});
  follower->Ok("send", {{"actor", quiet}, {"message", nullptr}});
  follower->Ok("tick", {{"count", 10}});
  // then the follower's first log event is the quiet actor's entry
  json event = follower->NextEvent();
  while (event["event"] != "log") event = follower->NextEvent();
  EXPECT_EQ(event["data"]["actor"], quiet) << event.dump();
  EXPECT_EQ(event["data"]["message"], "from-quiet");
  EXPECT_EQ(event["data"]["level"], "info");
  // and the bystander, never subscribed, gets its responses and no event
  bystander->Ok("ps");
  EXPECT_TRUE(bystander->events.empty());
  // history is non-destructive and sees both
  json history = bystander->Ok("logs");
  ASSERT_EQ(history["entries"].size(), 2u);
  EXPECT_EQ(history["entries"][0]["actor"], loud);
  EXPECT_EQ(bystander->Ok("logs", {{"actors", {quiet}}})["entries"].size(), 1u);
  EXPECT_EQ(bystander->Ok("logs", {{"min_level", "warn"}})["entries"].size(), 0u);
  // after unsubscribing, nothing more arrives
  EXPECT_EQ(follower->Ok("unsubscribe", {{"topic", "logs"}}),
            (json{{"topic", "logs"}, {"subscribed", false}}));
  follower->events.clear();
  follower->Ok("send", {{"actor", quiet}, {"message", nullptr}});
  follower->Ok("tick", {{"count", 10}});
  follower->Ok("ps");
  for (const json& e : follower->events) EXPECT_NE(e["event"], "log") << e.dump();
}

TEST_F(ImageSubscriptionsTest, LaggingLogFollowerFailsExplicitly) {
  auto follower = Connect();
  Create(*follower, "actors/loud", LoggingActorWat("x", 2));
  // Given a follower whose pump is slower than 1,024 entries arriving in one tick: many
  // actors each logging once per tick, ticked in one request
  std::vector<std::string> actors;
  for (int i = 0; i < 40; ++i) actors.push_back(SpawnActor(*follower, "actors/loud"));
  follower->Ok("subscribe", {{"topic", "logs"}});
  for (const std::string& actor : actors) {
    for (int m = 0; m < 40; ++m) follower->Ok("send", {{"actor", actor}, {"message", m}});
  }
  follower->Ok("tick", {{"count", 100}});
  // then either every entry arrived in order, or the follow failed loudly; never a gap
  uint64_t last = 0;
  bool failed = false;
  int logs = 0;
  while (logs < 1600 && !failed) {
    json event = follower->NextEvent();
    if (event["event"] == "subscription-failed") {
      failed = true;
      EXPECT_EQ(event["data"]["topic"], "logs");
      EXPECT_NE(event["data"]["message"].get<std::string>().find("lagged"), std::string::npos);
    } else if (event["event"] == "log") {
      uint64_t seq = event["data"]["seq"];
      EXPECT_EQ(seq, last + 1) << "entries are never skipped silently";
      last = seq;
      ++logs;
    }
  }
  EXPECT_TRUE(failed || logs == 1600);
}

TEST_F(ImageSubscriptionsTest, FollowerThatDoesNotReadGetsSubscriptionFailed) {
  auto follower = Connect();
  auto driver = Connect();
  Create(*driver, "actors/chatty",
         LoggingActorWat("a log line long enough to fill buffers", 2, 500));
  std::vector<std::string> actors;
  for (int i = 0; i < 20; ++i) actors.push_back(SpawnActor(*driver, "actors/chatty"));
  // Given a follower that stops reading
  follower->Ok("subscribe", {{"topic", "logs"}});
  // when far more entries are logged than its outgoing queue, socket buffers and the
  // 1,024-entry live buffer hold (20 actors x 10 messages x 500 entries)
  for (const std::string& actor : actors) {
    for (int m = 0; m < 10; ++m) driver->Ok("send", {{"actor", actor}, {"message", m}});
  }
  driver->Ok("tick", {{"count", 20}, {"budget", 1000000}});
  EXPECT_EQ(driver->Ok("logs", {{"after", 99990}, {"limit", 1}})["entries"].size(), 1u)
      << "100,000 entries were logged";
  // then, reading again, it sees contiguous entries and then one explicit failure
  uint64_t last = 0;
  for (int read = 0; read < 200000; ++read) {
    json event = follower->NextEvent();
    if (event["event"] == "subscription-failed") {
      EXPECT_EQ(event["data"]["topic"], "logs");
      EXPECT_NE(event["data"]["message"].get<std::string>().find("lagged"), std::string::npos)
          << event.dump();
      EXPECT_LT(last, 100000u);
      // and nothing more arrives for the failed subscription
      follower->Ok("ps");
      for (const json& e : follower->events) EXPECT_NE(e["event"], "log") << e.dump();
      return;
    }
    ASSERT_EQ(event["event"], "log") << event.dump();
    uint64_t seq = event["data"]["seq"];
    ASSERT_EQ(seq, last + 1) << "entries are never skipped silently";
    last = seq;
  }
  ADD_FAILURE() << "the follower never lagged";
}

TEST_F(ImageSubscriptionsTest, ChangesAreNotifiedWithoutTickingOrMovingCursors) {
  auto watcher = Connect();
  auto editor = Connect();
  Create(*editor, "actors/one", ConstantActorWat(1));
  std::string actor = SpawnActor(*editor, "actors/one");
  // Given a watcher subscribed to changes that has not read events yet
  json subscribed = watcher->Ok("subscribe", {{"topic", "changes"}});
  EXPECT_EQ(subscribed["topic"], "changes");
  // when another client sends, ticks and writes
  editor->Ok("send", {{"actor", actor}, {"message", 1}});
  editor->Ok("tick");
  json read = editor->Ok("read", {{"path", "actors/one"}});
  editor->Ok("write", {{"path", "actors/one"},
                       {"kind", "wat"},
                       {"text", ConstantActorWat(2)},
                       {"expected", read["source_id"]}});
  // then the watcher gets one "changed" per mutating op, in order, and no event for reads
  json send = watcher->NextEvent();
  EXPECT_EQ(send,
            (json{{"v", 1},
                  {"event", "changed"},
                  {"data", {{"op", "send"}, {"actors", {actor}}, {"paths", json::array()}}}}));
  json tick = watcher->NextEvent();
  EXPECT_EQ(tick["data"]["op"], "tick");
  EXPECT_EQ(tick["data"]["actors"], nullptr);
  json write = watcher->NextEvent();
  EXPECT_EQ(write["data"]["op"], "write");
  EXPECT_EQ(write["data"]["paths"], (json{"actors/one"}));
  // and the notifications neither ticked the image nor moved the watcher's events cursor
  EXPECT_EQ(Kinds(watcher->Ok("events")["events"]),
            (std::vector<std::string>{"spawned", "committed"}));
  EXPECT_EQ(editor->Ok("inspect", {{"actor", actor}})["state"], 1);
  // and after unsubscribing nothing more arrives
  watcher->Ok("unsubscribe", {{"topic", "changes"}});
  editor->Ok("send", {{"actor", actor}, {"message", 1}});
  watcher->Ok("ps");
  EXPECT_TRUE(watcher->events.empty());
  EXPECT_TRUE(editor->events.empty()) << "the editor never subscribed";
}

// Subscribes `client` to logs, retrying while the follower limit is reached by
// connections whose close the server has not processed yet (disconnects are asynchronous).
bool SubscribeLogsWithRetry(Client& client) {
  for (int attempt = 0; attempt < 250; ++attempt) {
    json response = client.Request("subscribe", {{"topic", "logs"}});
    if (response["ok"] == true) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

TEST_F(ImageSubscriptionsTest, ClosedConnectionsAreForgotten) {
  // Given more connections than the follower limit (64), each following logs, then closing
  for (int i = 0; i < 80; ++i) {
    auto client = Connect();
    ASSERT_TRUE(SubscribeLogsWithRetry(*client)) << "connection " << i;
    client->Ok("subscribe", {{"topic", "changes"}});
  }
  // then their follows were dropped when they closed: a new follower is accepted
  auto client = Connect();
  EXPECT_TRUE(SubscribeLogsWithRetry(*client));
}

TEST_F(ImageSubscriptionsTest, FollowersAreBounded) {
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < 64; ++i) {
    clients.push_back(Connect());
    clients.back()->Ok("subscribe", {{"topic", "logs"}});
  }
  auto one_more = Connect();
  json error = one_more->Error("subscribe", {{"topic", "logs"}});
  EXPECT_EQ(error["code"], "limit_exceeded");
  EXPECT_NE(error["message"].get<std::string>().find("max_log_followers"), std::string::npos);
  // resubscribing replaces a connection's follow rather than adding one
  clients[0]->Ok("subscribe", {{"topic", "logs"}, {"min_level", "warn"}});
}

}  // namespace
}  // namespace reef::image
