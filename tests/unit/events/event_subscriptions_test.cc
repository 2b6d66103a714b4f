// Event-store subscriptions over the WebSocket protocol (events/http/event_subscriptions.h):
// a real Server on loopback, the real protocol client, a real event store.
#include "events/http/event_subscriptions.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <thread>

#include "client/client.h"
#include "event_store_test_support.h"
#include "server/server.h"

namespace reef::events {
namespace {

using json = nlohmann::json;
using std::chrono::milliseconds;
using testing::MakeEvent;

class EventSubscriptionsTest : public testing::EventStoreTest {
 protected:
  void Start(http::EventSubscriptionLimits limits = {}, uint64_t max_outgoing_bytes = 16 << 20) {
    subscriptions_ = std::make_unique<http::EventSubscriptions>(*store_, limits);
    server::ServerOptions options;
    options.listen = "127.0.0.1:0";
    options.limits.max_outgoing_bytes = max_outgoing_bytes;
    ASSERT_TRUE(subscriptions_->RegisterOps(options.dispatcher).ok());
    auto server = server::Server::Start(std::move(options));
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
    client_ = Connect();
  }

  std::unique_ptr<client::Client> Connect() {
    client::ClientOptions options;
    options.address = server_->address();
    auto connected = client::Client::Connect(options);
    EXPECT_TRUE(connected.ok()) << connected.status().ToString();
    return connected.ok() ? std::move(*connected) : nullptr;
  }

  void TearDown() override {
    client_.reset();
    if (server_) server_->Stop();
    if (subscriptions_) subscriptions_->Stop();
    server_.reset();
    subscriptions_.reset();
  }

  void AppendTagged(int count, const std::string& tag, size_t data_bytes = 0) {
    std::vector<Event> batch;
    for (int i = 0; i < count; ++i) {
      batch.push_back(
          MakeEvent("E", {tag}, fmt::format(R"({{"pad":"{}"}})", std::string(data_bytes, 'x'))));
    }
    ASSERT_TRUE(store_->Append(std::move(batch)).ok());
  }

  // The positions of the next `count` "event" pushes (fewer when none comes for 5 s); a
  // "subscription-failed" push ends the list early and is kept in *failed.
  std::vector<uint64_t> Receive(size_t count, json* failed = nullptr) {
    std::vector<uint64_t> positions;
    while (positions.size() < count) {
      auto event = client_->NextEvent(milliseconds(5'000));
      if (!event.ok() || !event->has_value()) break;
      if ((*event)->kind == "subscription-failed") {
        if (failed != nullptr) *failed = (*event)->data;
        break;
      }
      EXPECT_EQ((*event)->kind, "event");
      positions.push_back((*event)->data["event"]["position"].get<uint64_t>());
    }
    return positions;
  }

  std::unique_ptr<http::EventSubscriptions> subscriptions_;
  std::unique_ptr<server::Server> server_;
  std::unique_ptr<client::Client> client_;
};

std::vector<uint64_t> Range(uint64_t first, uint64_t last) {
  std::vector<uint64_t> out;
  for (uint64_t p = first; p <= last; ++p) out.push_back(p);
  return out;
}

TEST_F(EventSubscriptionsTest, CatchesUpThenFollowsLiveAndResumesFromAPosition) {
  Start();
  AppendTagged(3, "a");
  AppendTagged(2, "b");
  // Given a subscription to tag "a" after position 1...
  auto subscribed =
      client_->Call("events-subscribe", {{"query", {{"items", {{{"tags", {"a"}}}}}}}, {"after", 1}},
                    milliseconds(5'000));
  ASSERT_TRUE(subscribed.ok()) << subscribed.status().ToString();
  EXPECT_EQ((*subscribed)["head"], 5);
  // then the stored matches come first, then new appends as they are made, in order.
  EXPECT_EQ(Receive(2), Range(2, 3));
  AppendTagged(1, "b");
  AppendTagged(2, "a");
  EXPECT_EQ(Receive(2), Range(7, 8));
  // A client that saw up to 7 resumes after it and gets only what follows.
  auto again = Connect();
  client_ = std::move(again);
  ASSERT_TRUE(client_
                  ->Call("events-subscribe",
                         {{"query", {{"items", {{{"tags", {"a"}}}}}}}, {"after", 7}},
                         milliseconds(5'000))
                  .ok());
  EXPECT_EQ(Receive(1), Range(8, 8));
}

TEST_F(EventSubscriptionsTest, AnAfterPastTheHeadIsRefusedNamingTheHead) {
  Start();
  AppendTagged(3, "a");
  // after 9 would silently skip positions 4..9 once they are appended
  auto refused = client_->Call("events-subscribe", {{"after", 9}}, milliseconds(5'000));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Code::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("after 9 is past the head of the store (3)"),
            std::string::npos)
      << refused.status().message();
  // after == head waits for the next event
  ASSERT_TRUE(client_->Call("events-subscribe", {{"after", 3}}, milliseconds(5'000)).ok());
  AppendTagged(1, "a");
  EXPECT_EQ(Receive(1), Range(4, 4));
}

TEST_F(EventSubscriptionsTest, ASlowConsumerIsToldWhereToResumeInsteadOfLosingEvents) {
  // Given a subscription whose client does not read while 5,000 events of 4 KiB are sent
  // (more than the socket buffers and a 1 MiB outgoing queue hold).
  Start({.lag_timeout = milliseconds(300)}, /*max_outgoing_bytes=*/1 << 20);
  for (int i = 0; i < 5; ++i) AppendTagged(1'000, "t", 4'096);
  ASSERT_TRUE(client_->Call("events-subscribe", json::object(), milliseconds(5'000)).ok());
  for (int i = 0; i < 1'500 && subscriptions_->open() > 0; ++i) {  // 30 s: a loaded ASan build
    std::this_thread::sleep_for(milliseconds(20));
  }
  ASSERT_EQ(subscriptions_->open(), 0u) << "the subscription did not give up on its slow client";
  // When the client reads: a gapless prefix, then "subscription-failed" naming its end.
  json failed;
  std::vector<uint64_t> got = Receive(5'000, &failed);
  ASSERT_FALSE(got.empty());
  ASSERT_LT(got.size(), 5'000u);
  EXPECT_EQ(got, Range(1, got.size()));
  EXPECT_EQ(failed["topic"], "events");
  EXPECT_EQ(failed["position"], got.back());
  EXPECT_NE(failed["message"].get<std::string>().find("too slowly"), std::string::npos);
  // Then resuming after that position delivers the rest with nothing lost. On a loaded
  // machine the resumed subscription can fall behind too (its client reads 4 KiB events while
  // the lag timeout is 300 ms); each failure names where to resume, so resume until the end.
  uint64_t last = got.back();
  for (int resumes = 0; last < 5'000 && resumes < 50; ++resumes) {
    ASSERT_TRUE(client_->Call("events-subscribe", {{"after", last}}, milliseconds(5'000)).ok());
    json again;
    std::vector<uint64_t> more = Receive(5'000 - last, &again);
    ASSERT_FALSE(more.empty()) << "resumed after " << last;
    EXPECT_EQ(more, Range(last + 1, last + more.size()));
    if (more.back() < 5'000) {
      EXPECT_EQ(again["position"], more.back());
    }
    last = more.back();
  }
  EXPECT_EQ(last, 5'000u);
}

TEST_F(EventSubscriptionsTest, SubscriptionsAreBoundedAndUnsubscribeEndsOne) {
  Start({.max_subscriptions = 64, .max_per_connection = 2});
  auto first = client_->Call("events-subscribe", json::object(), milliseconds(5'000));
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(client_->Call("events-subscribe", json::object(), milliseconds(5'000)).ok());
  auto third = client_->Call("events-subscribe", json::object(), milliseconds(5'000));
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.status().code(), Code::kLimitExceeded);
  EXPECT_NE(third.status().message().find("max_per_connection"), std::string::npos);
  ASSERT_TRUE(client_
                  ->Call("events-unsubscribe", {{"subscription", (*first)["subscription"]}},
                         milliseconds(5'000))
                  .ok());
  EXPECT_EQ(subscriptions_->open(), 1u);
  auto unknown = client_->Call("events-unsubscribe", {{"subscription", 999}}, milliseconds(5'000));
  EXPECT_EQ(unknown.status().code(), Code::kNotFound);
  auto bad = client_->Call("events-subscribe", {{"after", -1}}, milliseconds(5'000));
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace reef::events
