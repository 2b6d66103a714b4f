// LifecycleEvents: the kind table, increasing seqs, the retained window, filtered subscriptions.
#include "actor/lifecycle_events.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <thread>
#include <vector>

#include "unit/actor/test_guests.h"

namespace reef::actor {
namespace {

using test_support::NumberedRef;

LifecyclePage MustRecent(const LifecycleEvents& events, uint64_t after, size_t limit,
                         const LifecycleFilter& filter = {}) {
  auto page = events.Recent(after, limit, filter);
  EXPECT_TRUE(page.ok()) << page.status().ToString();
  return page.ok() ? *page : LifecyclePage{};
}

std::vector<uint64_t> Seqs(const std::vector<LifecycleEvent>& events) {
  std::vector<uint64_t> seqs;
  for (const LifecycleEvent& event : events) seqs.push_back(event.seq);
  return seqs;
}

TEST(LifecycleKindTest, NamesAreStableAndLowercase) {
  const std::vector<std::pair<LifecycleKind, std::string>> expected = {
      {LifecycleKind::kSpawned, "spawned"},     {LifecycleKind::kCommitted, "committed"},
      {LifecycleKind::kFailed, "failed"},       {LifecycleKind::kStopped, "stopped"},
      {LifecycleKind::kRestarted, "restarted"}, {LifecycleKind::kPaused, "paused"},
      {LifecycleKind::kResumed, "resumed"},     {LifecycleKind::kInstalled, "installed"},
      {LifecycleKind::kMigrated, "migrated"},   {LifecycleKind::kLog, "log"},
      {LifecycleKind::kRemoved, "removed"},
  };
  ASSERT_EQ(expected.size(), kLifecycleKindCount);
  for (const auto& [kind, name] : expected) {
    EXPECT_EQ(LifecycleKindName(kind), name);
    EXPECT_FALSE(LifecycleKindSummary(kind).empty());
    auto parsed = ParseLifecycleKind(name);
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, kind);
  }
}

TEST(LifecycleKindTest, ParseRejectsUnknownNameListingTheValidOnes) {
  auto parsed = ParseLifecycleKind("Spawned");

  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), Code::kInvalidArgument);
  EXPECT_NE(parsed.status().message().find("spawned, committed"), std::string::npos);
}

TEST(LifecycleEventsTest, PublishAssignsIncreasingSeqStartingAtOne) {
  LifecycleEvents events;

  EXPECT_EQ(events.Publish(LifecycleKind::kSpawned, NumberedRef(1), 1, ""), 1u);
  EXPECT_EQ(events.Publish(LifecycleKind::kFailed, NumberedRef(1), 1, "trap: unreachable"), 2u);
  EXPECT_EQ(events.last_seq(), 2u);

  LifecyclePage page = MustRecent(events, 0, 10);
  ASSERT_EQ(page.events.size(), 2u);
  EXPECT_EQ(page.events[1].kind, LifecycleKind::kFailed);
  EXPECT_EQ(page.events[1].actor, NumberedRef(1));
  EXPECT_EQ(page.events[1].detail, "trap: unreachable");
  EXPECT_GT(page.events[1].unix_ms, 1'600'000'000'000);
}

TEST(LifecycleEventsTest, RecentReadsPagesWithoutConsuming) {
  LifecycleEvents events;
  for (int i = 0; i < 5; ++i) events.Publish(LifecycleKind::kCommitted, NumberedRef(1), 1, "");

  LifecyclePage first = MustRecent(events, 0, 2);
  LifecyclePage second = MustRecent(events, first.next_after, 2);
  LifecyclePage last = MustRecent(events, second.next_after, 2);

  EXPECT_EQ(Seqs(first.events), (std::vector<uint64_t>{1, 2}));
  EXPECT_TRUE(first.more);
  EXPECT_EQ(Seqs(second.events), (std::vector<uint64_t>{3, 4}));
  EXPECT_EQ(Seqs(last.events), (std::vector<uint64_t>{5}));
  EXPECT_FALSE(last.more);
  EXPECT_EQ(MustRecent(events, 0, 10).events.size(), 5u);
}

TEST(LifecycleEventsTest, KeepsOnlyTheLastRetainedEvents) {
  LifecycleEvents events(LifecycleEventsOptions{.retained = 3});
  for (int i = 0; i < 10; ++i) events.Publish(LifecycleKind::kCommitted, NumberedRef(1), 1, "");

  LifecyclePage page = MustRecent(events, 0, 100);

  EXPECT_EQ(Seqs(page.events), (std::vector<uint64_t>{8, 9, 10}));
  EXPECT_EQ(page.first_retained, 8u);
}

TEST(LifecycleEventsTest, RecentFiltersByKindsAndActors) {
  LifecycleEvents events;
  events.Publish(LifecycleKind::kSpawned, NumberedRef(1), 1, "");
  events.Publish(LifecycleKind::kFailed, NumberedRef(2), 1, "boom");
  events.Publish(LifecycleKind::kFailed, NumberedRef(1), 1, "bang");
  events.Publish(LifecycleKind::kRestarted, NumberedRef(1), 2, "");

  LifecycleFilter filter{.kinds = {LifecycleKind::kFailed, LifecycleKind::kRestarted},
                         .actors = {NumberedRef(1)}};
  LifecyclePage page = MustRecent(events, 0, 10, filter);

  EXPECT_EQ(Seqs(page.events), (std::vector<uint64_t>{3, 4}));
  EXPECT_EQ(page.events[1].incarnation, 2u);
  EXPECT_EQ(page.next_after, 4u);
}

TEST(LifecycleEventsTest, RecentRejectsPageLimitOverTheCap) {
  LifecycleEvents events;

  auto page = events.Recent(0, 10'001);

  ASSERT_FALSE(page.ok());
  EXPECT_EQ(page.status().code(), Code::kInvalidArgument);
}

TEST(LifecycleEventsTest, SubscribeReceivesOnlyMatchingFutureEvents) {
  LifecycleEvents events;
  events.Publish(LifecycleKind::kFailed, NumberedRef(1), 1, "past");
  auto subscription = events.Subscribe({.kinds = {LifecycleKind::kFailed}});

  events.Publish(LifecycleKind::kSpawned, NumberedRef(2), 1, "");
  events.Publish(LifecycleKind::kFailed, NumberedRef(2), 1, "future");

  auto received = subscription->Poll(10);
  ASSERT_TRUE(received.ok());
  ASSERT_EQ(received->size(), 1u);
  EXPECT_EQ((*received)[0].detail, "future");
  EXPECT_EQ((*received)[0].seq, 3u);
}

TEST(LifecycleEventsTest, LaggingSubscriberFailsExplicitly) {
  LifecycleEvents events(LifecycleEventsOptions{.subscriber_buffer = 2});
  auto subscription = events.Subscribe({});

  for (int i = 0; i < 3; ++i) events.Publish(LifecycleKind::kCommitted, NumberedRef(1), 1, "");

  auto received = subscription->Poll(10);
  ASSERT_FALSE(received.ok());
  EXPECT_EQ(received.status().code(), Code::kUnavailable);
  EXPECT_TRUE(subscription->failed());
}

TEST(LifecycleEventsConcurrencyTest, ConcurrentPublishersGetUniqueSeqsDeliveredInOrder) {
  LifecycleEvents events;
  auto subscription = events.Subscribe({});
  constexpr int kThreads = 4, kPerThread = 200;

  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&events, t] {
      for (int i = 0; i < kPerThread; ++i)
        events.Publish(LifecycleKind::kLog, NumberedRef(t), 1, "");
    });
  }
  for (auto& thread : threads) thread.join();

  auto received = subscription->Poll(10'000);
  ASSERT_TRUE(received.ok());
  ASSERT_EQ(received->size(), size_t{kThreads * kPerThread});
  for (size_t i = 0; i < received->size(); ++i) EXPECT_EQ((*received)[i].seq, i + 1);
}

}  // namespace
}  // namespace reef::actor
