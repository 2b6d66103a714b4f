// The DCB conformance scenarios (dcb.events) against both backends (the embedded store on a real
// directory, PostgreSQL in a real cluster), with real threads: consistency under concurrent
// conditional writers, monotonic reads, and parallel writes on disjoint tags without false
// conflicts. Also subscriptions: catch-up then live, never a hole, and (embedded) the fallback
// of a slow subscriber. Every AnyStoreTest of the event store tests is instantiated here.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "event_store_test_support.h"
#include "events/event_store.h"

namespace reef::events {
namespace {

using namespace std::chrono_literals;
using testing::AnyStoreTest;
using testing::EventStoreTest;
using testing::FailIf;
using testing::Item;
using testing::MakeEvent;
using testing::QueryOf;

// A random query over a small vocabulary, so writers often overlap.
Query RandomQuery(std::mt19937& rng) {
  static const std::vector<std::string> kTypes = {"Opened", "Moved", "Closed"};
  std::uniform_int_distribution<int> type(0, 2), tag(0, 5), count(1, 2);
  Query query;
  for (int i = count(rng); i > 0; --i) {
    QueryItem item;
    if (rng() % 2) item.types.push_back(kTypes[type(rng)]);
    if (item.types.empty() || rng() % 2) item.tags.push_back("k:" + std::to_string(tag(rng)));
    query.items.push_back(std::move(item));
  }
  return query;
}

Event RandomEvent(std::mt19937& rng) {
  static const std::vector<std::string> kTypes = {"Opened", "Moved", "Closed"};
  std::uniform_int_distribution<int> type(0, 2), tag(0, 5);
  return MakeEvent(kTypes[type(rng)],
                   {"k:" + std::to_string(tag(rng)), "k:" + std::to_string(tag(rng))});
}

TEST_P(AnyStoreTest, ConsistencyTwentyConcurrentWritersNeverAppendPastAMatchingEvent) {
  // Given 20 writers that each read a random query and append with the condition built from
  // that read (query + read head),
  struct Accepted {
    Query query;
    Position after;
    Position first;
  };
  constexpr int kWriters = 20;
  constexpr int kAttempts = 60;
  std::mutex mu;
  std::vector<Accepted> accepted;
  std::atomic<int> conflicts{0};
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      std::mt19937 rng(1000 + w);
      for (int i = 0; i < kAttempts; ++i) {
        Query query = RandomQuery(rng);
        auto read = store_->Read(query);
        ASSERT_TRUE(read.ok()) << read.status().ToString();
        std::vector<Event> events = {RandomEvent(rng)};
        if (rng() % 3 == 0) events.push_back(RandomEvent(rng));
        events[0].id = *NewEventId();
        const EventId first_id = events[0].id;
        auto appended = store_->Append(std::move(events), FailIf(query, read->head));
        if (!appended.ok()) {
          ASSERT_EQ(appended.status().code(), Code::kConflict) << appended.status().ToString();
          conflicts.fetch_add(1);
          continue;
        }
        // The append's first position (PostgreSQL's positions of one append need not be
        // adjacent).
        auto first = store_->ReadById(first_id);
        ASSERT_TRUE(first.ok() && first->has_value());
        std::lock_guard lock(mu);
        accepted.push_back({query, read->head, (*first)->position});
      }
    });
  }
  for (auto& writer : writers) writer.join();
  // Then both outcomes happened,
  ASSERT_GT(accepted.size(), 0u);
  EXPECT_GT(conflicts.load(), 0);
  EXPECT_EQ(static_cast<int>(accepted.size()) + conflicts.load(), kWriters * kAttempts);
  // and re-reading each query just below each appended event finds nothing after the `after`
  // it was appended with: no write slipped in between the decision's read and its append.
  for (const Accepted& a : accepted) {
    ReadOptions below;
    below.backwards = true;
    below.from = a.first - 1;
    below.limit = 1;
    auto last = store_->Read(a.query, below);
    ASSERT_TRUE(last.ok());
    Position last_match = last->events.empty() ? 0 : last->events[0].position;
    EXPECT_LE(last_match, a.after) << "appended at " << a.first;
  }
}

TEST_P(AnyStoreTest, MonotonicReadsNeverSeeAHoleOrAReorder) {
  std::atomic<bool> writing{true};
  std::vector<std::thread> writers;
  for (int w = 0; w < 4; ++w) {
    writers.emplace_back([&, w] {
      std::mt19937 rng(w);
      for (int i = 0; i < 150; ++i) {
        std::vector<Event> events(1 + rng() % 5, RandomEvent(rng));
        ASSERT_TRUE(store_->Append(std::move(events)).ok());
      }
    });
  }
  std::vector<std::thread> readers;
  std::atomic<int> reads{0};
  for (int r = 0; r < 3; ++r) {
    readers.emplace_back([&] {
      Position previous_head = 0;
      while (writing.load()) {
        auto read = store_->Read(Query{});
        ASSERT_TRUE(read.ok());
        // Every position from 1 to the head, in order: no hole, no reorder.
        ASSERT_EQ(read->events.size(), read->head);
        for (size_t i = 0; i < read->events.size(); ++i) {
          ASSERT_EQ(read->events[i].position, i + 1);
        }
        ASSERT_GE(read->head, previous_head);  // and the head never goes back
        previous_head = read->head;
        reads.fetch_add(1);
      }
    });
  }
  for (auto& writer : writers) writer.join();
  writing.store(false);
  for (auto& reader : readers) reader.join();
  EXPECT_GT(reads.load(), 0);
}

TEST_P(AnyStoreTest, ParallelWritesOnDisjointTagsHaveZeroFalseConflicts) {
  constexpr int kWriters = 16;
  constexpr int kEach = 40;
  std::atomic<int> conflicts{0};
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      Query mine = QueryOf({Item({}, {"writer:" + std::to_string(w)})});
      for (int i = 0; i < kEach; ++i) {
        auto read = store_->Read(mine);
        ASSERT_TRUE(read.ok());
        auto appended = store_->Append({MakeEvent("Wrote", {"writer:" + std::to_string(w)})},
                                       FailIf(mine, read->head));
        if (!appended.ok()) conflicts.fetch_add(1);
      }
    });
  }
  for (auto& writer : writers) writer.join();
  EXPECT_EQ(conflicts.load(), 0);
  EXPECT_EQ(store_->Head(), Position{kWriters * kEach});
}

// ---- Subscriptions --------------------------------------------------------------------------

// Takes events from `sub` until `count` arrived or 5 s passed.
std::vector<SequencedEvent> Take(Subscription& sub, size_t count, size_t batch = 100) {
  std::vector<SequencedEvent> out;
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (out.size() < count && std::chrono::steady_clock::now() < deadline) {
    auto next = sub.Next(batch, 100ms);
    EXPECT_TRUE(next.ok()) << next.status().ToString();
    if (!next.ok()) break;
    out.insert(out.end(), next->begin(), next->end());
  }
  return out;
}

TEST_P(AnyStoreTest, SubscriptionCatchesUpThenFollowsLiveAppends) {
  MustAppend({MakeEvent("A", {"x"}), MakeEvent("B", {"y"}), MakeEvent("A", {"x"})});
  auto sub = store_->Subscribe(QueryOf({Item({}, {"x"})}), 1);
  ASSERT_TRUE(sub.ok());
  auto caught_up = Take(**sub, 1);
  EXPECT_EQ(testing::PositionsOf(caught_up), (std::vector<Position>{3}));  // after=1 excluded
  auto none = (*sub)->Next(10, 50ms);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  EXPECT_TRUE((*sub)->live());
  std::thread writer([&] {
    std::this_thread::sleep_for(20ms);
    MustAppend({MakeEvent("A", {"y"}), MakeEvent("C", {"x"})});
  });
  auto live = Take(**sub, 1);
  writer.join();
  ASSERT_EQ(live.size(), 1u);
  EXPECT_EQ(live[0].position, 5u);
  EXPECT_EQ(live[0].event.type, "C");
  EXPECT_EQ((*sub)->position(), 5u);
}

TEST_P(AnyStoreTest, SubscriptionDeliversEveryEventInOrderWhileWritersRun) {
  auto sub = store_->Subscribe(Query{}, 0);
  ASSERT_TRUE(sub.ok());
  constexpr int kWriters = 4, kEach = 200;
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) ASSERT_TRUE(store_->Append({MakeEvent("A")}).ok());
    });
  }
  auto got = Take(**sub, kWriters * kEach, 7);
  for (auto& writer : writers) writer.join();
  ASSERT_EQ(got.size(), size_t{kWriters * kEach});
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i].position, i + 1);
}

TEST_F(EventStoreTest, SlowSubscriberFallsBackToCatchUpWithoutLosingEvents) {
  EventStoreOptions options;
  options.subscription_buffer_events = 8;
  Reopen(options);
  auto sub = store_->Subscribe(Query{}, 0);
  ASSERT_TRUE(sub.ok());
  auto empty = (*sub)->Next(1, 10ms);  // now live, with an 8-event buffer
  ASSERT_TRUE(empty.ok());
  ASSERT_TRUE((*sub)->live());
  // The subscriber takes nothing while 100 events arrive: the buffer overflows.
  for (int i = 0; i < 100; ++i) MustAppend({MakeEvent("A")});
  EXPECT_FALSE((*sub)->live());
  EXPECT_EQ((*sub)->fallbacks(), 1u);
  auto got = Take(**sub, 100, 3);
  ASSERT_EQ(got.size(), 100u);
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i].position, i + 1);
  // Caught up, it goes live again.
  ASSERT_TRUE((*sub)->Next(1, 10ms).ok());
  EXPECT_TRUE((*sub)->live());
}

TEST_P(AnyStoreTest, SubscriptionAfterTheHeadWaitsForLaterPositions) {
  MustAppend({MakeEvent("A")});
  auto sub = store_->Subscribe(Query{}, 3);
  ASSERT_TRUE(sub.ok());
  ASSERT_TRUE((*sub)->Next(10, 10ms)->empty());
  for (int i = 0; i < 4; ++i) MustAppend({MakeEvent("A")});
  EXPECT_EQ(testing::PositionsOf(Take(**sub, 2)), (std::vector<Position>{4, 5}));
}

TEST_P(AnyStoreTest, SubscriptionFailsCleanlyOnceTheStoreIsClosed) {
  auto sub = store_->Subscribe(Query{}, 0);
  ASSERT_TRUE(sub.ok());
  store_.reset();
  auto next = (*sub)->Next(1, 10ms);
  ASSERT_FALSE(next.ok());
  EXPECT_EQ(next.status().code(), Code::kUnavailable);
}

INSTANTIATE_TEST_SUITE_P(Backends, AnyStoreTest,
                         ::testing::Values(testing::Backend::kEmbedded,
                                           testing::Backend::kPostgres),
                         testing::BackendName);

}  // namespace
}  // namespace reef::events
