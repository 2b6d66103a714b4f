// Broadcast<T>: bounded per-subscriber buffers, server-side filters, explicit lag failure.
#include "actor/broadcast.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace reef::actor {
namespace {

using std::chrono::milliseconds;

std::vector<int> PollAll(Subscription<int>& subscription) {
  auto items = subscription.Poll(1'000'000);
  EXPECT_TRUE(items.ok()) << items.status().ToString();
  return items.ok() ? *items : std::vector<int>{};
}

TEST(BroadcastTest, DeliversPublishedItemsInPublishOrder) {
  Broadcast<int> broadcast;
  auto subscription = broadcast.Subscribe();

  for (int i = 1; i <= 5; ++i) EXPECT_EQ(broadcast.Publish(i), 1u);

  EXPECT_EQ(PollAll(*subscription), (std::vector<int>{1, 2, 3, 4, 5}));
  EXPECT_TRUE(PollAll(*subscription).empty());
}

TEST(BroadcastTest, SubscriberReceivesOnlyItemsPublishedAfterSubscribing) {
  Broadcast<int> broadcast;
  broadcast.Publish(1);

  auto subscription = broadcast.Subscribe();
  broadcast.Publish(2);

  EXPECT_EQ(PollAll(*subscription), (std::vector<int>{2}));
}

TEST(BroadcastTest, ServerSideFilterSelectsItemsPerSubscriber) {
  Broadcast<int> broadcast;
  auto even = broadcast.Subscribe([](const int& i) { return i % 2 == 0; });
  auto all = broadcast.Subscribe();

  for (int i = 1; i <= 6; ++i) broadcast.Publish(i);

  EXPECT_EQ(PollAll(*even), (std::vector<int>{2, 4, 6}));
  EXPECT_EQ(PollAll(*all), (std::vector<int>{1, 2, 3, 4, 5, 6}));
}

TEST(BroadcastTest, PollReturnsAtMostMaxItemsOldestFirst) {
  Broadcast<int> broadcast;
  auto subscription = broadcast.Subscribe();
  for (int i = 1; i <= 5; ++i) broadcast.Publish(i);

  auto first = subscription->Poll(2);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(*first, (std::vector<int>{1, 2}));
  EXPECT_EQ(PollAll(*subscription), (std::vector<int>{3, 4, 5}));
}

TEST(BroadcastTest, LaggingSubscriberFailsExplicitlyInsteadOfDroppingSilently) {
  Broadcast<int> broadcast;
  auto slow = broadcast.Subscribe({}, /*capacity=*/2);
  auto fast = broadcast.Subscribe({}, /*capacity=*/8);

  // Given a full buffer, when one more item arrives, the slow subscriber fails.
  EXPECT_EQ(broadcast.Publish(1), 2u);
  EXPECT_EQ(broadcast.Publish(2), 2u);
  EXPECT_EQ(broadcast.Publish(3), 1u);

  EXPECT_TRUE(slow->failed());
  EXPECT_EQ(slow->dropped(), 3u);
  auto polled = slow->Poll(10);
  ASSERT_FALSE(polled.ok());
  EXPECT_EQ(polled.status().code(), Code::kUnavailable);
  EXPECT_NE(polled.status().message().find("subscription lagged: 3 entries dropped"),
            std::string::npos)
      << polled.status().message();
  EXPECT_NE(polled.status().message().find("capacity 2"), std::string::npos);
  EXPECT_EQ(PollAll(*fast), (std::vector<int>{1, 2, 3}));
}

TEST(BroadcastTest, LaggedSubscriptionStaysFailedAndReceivesNothingMore) {
  Broadcast<int> broadcast;
  auto slow = broadcast.Subscribe({}, 1);
  broadcast.Publish(1);
  broadcast.Publish(2);  // lags

  EXPECT_EQ(broadcast.Publish(3), 0u);
  EXPECT_EQ(broadcast.subscriber_count(), 0u);
  EXPECT_FALSE(slow->Poll(10).ok());
  EXPECT_FALSE(slow->Wait(10, milliseconds(1)).ok());
  EXPECT_TRUE(slow->failed());
}

TEST(BroadcastTest, ClosedSubscriptionGetsNothingAndIsDropped) {
  Broadcast<int> broadcast;
  auto subscription = broadcast.Subscribe();
  broadcast.Publish(1);

  subscription->Close();

  EXPECT_EQ(broadcast.Publish(2), 0u);
  EXPECT_EQ(broadcast.subscriber_count(), 0u);
  EXPECT_TRUE(subscription->closed());
  auto polled = subscription->Poll(10);
  ASSERT_FALSE(polled.ok());
  EXPECT_EQ(polled.status().code(), Code::kFailedPrecondition);
}

TEST(BroadcastTest, DroppingTheLastReferenceUnsubscribes) {
  Broadcast<int> broadcast;
  auto subscription = broadcast.Subscribe();
  EXPECT_EQ(broadcast.subscriber_count(), 1u);

  subscription.reset();

  EXPECT_EQ(broadcast.subscriber_count(), 0u);
  EXPECT_EQ(broadcast.Publish(1), 0u);
}

TEST(BroadcastTest, WaitReturnsNothingWhenTheTimeoutPasses) {
  Broadcast<int> broadcast;
  auto subscription = broadcast.Subscribe();

  auto start = std::chrono::steady_clock::now();
  auto items = subscription->Wait(10, milliseconds(20));

  ASSERT_TRUE(items.ok());
  EXPECT_TRUE(items->empty());
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(20));
}

TEST(BroadcastTest, WaitWakesWhenAnItemIsPublished) {
  Broadcast<int> broadcast;
  auto subscription = broadcast.Subscribe();

  std::thread publisher([&] {
    std::this_thread::sleep_for(milliseconds(10));
    broadcast.Publish(7);
  });
  auto items = subscription->Wait(10, milliseconds(10'000));
  publisher.join();

  ASSERT_TRUE(items.ok());
  EXPECT_EQ(*items, (std::vector<int>{7}));
}

TEST(BroadcastTest, CloseWakesAWaitingSubscriber) {
  Broadcast<int> broadcast;
  auto subscription = broadcast.Subscribe();

  std::thread closer([&] {
    std::this_thread::sleep_for(milliseconds(10));
    subscription->Close();
  });
  auto items = subscription->Wait(10, milliseconds(10'000));
  closer.join();

  ASSERT_FALSE(items.ok());
  EXPECT_EQ(items.status().code(), Code::kFailedPrecondition);
}

TEST(BroadcastTest, DestroyingTheBroadcastEndsSubscriptionsAfterTheyDrain) {
  auto broadcast = std::make_unique<Broadcast<int>>();
  auto subscription = broadcast->Subscribe();
  broadcast->Publish(1);

  broadcast.reset();

  EXPECT_EQ(PollAll(*subscription), (std::vector<int>{1}));
  auto after = subscription->Wait(10, milliseconds(10'000));
  ASSERT_FALSE(after.ok());
  EXPECT_EQ(after.status().code(), Code::kUnavailable);
}

// ---------------------------------------------------------------------------------------------
// Concurrency: 4 publisher threads, 2 subscribers consuming concurrently.

struct Item {
  int publisher;
  int index;
};

constexpr int kPublishers = 4;
constexpr int kItemsPerPublisher = 5'000;

// Drains `subscription` until every item arrived or it failed, taking up to `batch` items at
// a time and pausing `pause` after each batch. Returns what it received.
std::vector<Item> Consume(Subscription<Item>& subscription, const std::atomic<bool>& done,
                          Status* final_status, std::size_t batch = 256,
                          milliseconds pause = milliseconds(0)) {
  std::vector<Item> received;
  while (true) {
    auto items = subscription.Wait(batch, milliseconds(5));
    if (pause.count() > 0) std::this_thread::sleep_for(pause);
    if (!items.ok()) {
      *final_status = items.status();
      return received;
    }
    received.insert(received.end(), items->begin(), items->end());
    if (items->empty() && done.load()) {
      auto rest = subscription.Poll(1'000'000);  // items published just before `done`
      if (!rest.ok()) {
        *final_status = rest.status();
        return received;
      }
      received.insert(received.end(), rest->begin(), rest->end());
      if (rest->empty()) return received;
    }
  }
}

// Per publisher, the received indices are 0, 1, 2, ... without gap, duplicate or reordering.
// Returns how many items of each publisher arrived.
std::vector<int> CheckGapFreePrefixes(const std::vector<Item>& received) {
  std::vector<int> next(kPublishers, 0);
  for (const Item& item : received) {
    EXPECT_EQ(item.index, next[item.publisher]) << "publisher " << item.publisher;
    next[item.publisher] = item.index + 1;
  }
  return next;
}

void PublishConcurrently(Broadcast<Item>& broadcast, std::atomic<bool>& done) {
  std::vector<std::thread> publishers;
  for (int p = 0; p < kPublishers; ++p) {
    publishers.emplace_back([&broadcast, p] {
      for (int i = 0; i < kItemsPerPublisher; ++i) broadcast.Publish(Item{p, i});
    });
  }
  for (auto& thread : publishers) thread.join();
  done.store(true);
}

TEST(BroadcastConcurrencyTest, NoLossDuplicateOrReorderWhenBuffersAreLargeEnough) {
  Broadcast<Item> broadcast;
  const std::size_t capacity = kPublishers * kItemsPerPublisher;
  auto first = broadcast.Subscribe({}, capacity);
  auto second = broadcast.Subscribe({}, capacity);
  std::atomic<bool> done{false};
  std::vector<Item> got_first, got_second;
  Status status_first, status_second;

  std::thread consumer_first([&] { got_first = Consume(*first, done, &status_first); });
  std::thread consumer_second([&] { got_second = Consume(*second, done, &status_second); });
  PublishConcurrently(broadcast, done);
  consumer_first.join();
  consumer_second.join();

  EXPECT_TRUE(status_first.ok()) << status_first.ToString();
  EXPECT_TRUE(status_second.ok()) << status_second.ToString();
  EXPECT_EQ(CheckGapFreePrefixes(got_first), std::vector<int>(kPublishers, kItemsPerPublisher));
  EXPECT_EQ(CheckGapFreePrefixes(got_second), std::vector<int>(kPublishers, kItemsPerPublisher));
  // Both subscribers saw the same global order.
  ASSERT_EQ(got_first.size(), got_second.size());
  for (std::size_t i = 0; i < got_first.size(); ++i) {
    ASSERT_EQ(got_first[i].publisher, got_second[i].publisher) << "position " << i;
    ASSERT_EQ(got_first[i].index, got_second[i].index) << "position " << i;
  }
}

TEST(BroadcastConcurrencyTest, TooSmallBufferFailsExplicitlyAndWhatArrivedHasNoGaps) {
  Broadcast<Item> broadcast;
  auto large = broadcast.Subscribe({}, kPublishers * kItemsPerPublisher);
  auto small = broadcast.Subscribe({}, 16);
  std::atomic<bool> done{false};
  std::vector<Item> got_large, got_small;
  Status status_large, status_small;

  std::thread consumer_large([&] { got_large = Consume(*large, done, &status_large); });
  std::thread consumer_small([&] {  // a slow consumer: one item per millisecond
    got_small = Consume(*small, done, &status_small, 1, milliseconds(1));
  });
  PublishConcurrently(broadcast, done);
  consumer_large.join();
  consumer_small.join();

  EXPECT_TRUE(status_large.ok()) << status_large.ToString();
  EXPECT_EQ(CheckGapFreePrefixes(got_large), std::vector<int>(kPublishers, kItemsPerPublisher));
  // The small subscriber cannot hold 20,000 items: it failed loudly, and what it did receive
  // before failing is a gap-free prefix of every publisher's sequence.
  EXPECT_EQ(status_small.code(), Code::kUnavailable) << status_small.ToString();
  EXPECT_TRUE(small->failed());
  EXPECT_GT(small->dropped(), 0u);
  CheckGapFreePrefixes(got_small);
  EXPECT_LT(got_small.size(), got_large.size());
}

}  // namespace
}  // namespace reef::actor
