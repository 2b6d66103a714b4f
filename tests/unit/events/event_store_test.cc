// The event store's API contract, one ambiguity per test: exclusive `after`, inclusive `from`,
// the empty query, duplicate tags, limits, retries, the read head, reopening.
#include "events/event_store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <fstream>
#include <thread>

#include "event_store_test_support.h"

namespace reef::events {
namespace {

using testing::AnyStoreTest;
using testing::EventStoreTest;
using testing::FailIf;
using testing::Item;
using testing::MakeEvent;
using testing::QueryOf;

TEST_P(AnyStoreTest, PositionsStartAtOneAndAreGaplessAcrossAppends) {
  EXPECT_EQ(store_->Head(), 0u);
  EXPECT_EQ(MustAppend({MakeEvent("A")}), 1u);
  EXPECT_EQ(MustAppend({MakeEvent("B"), MakeEvent("C")}), 3u);
  EXPECT_EQ(store_->Head(), 3u);
  EXPECT_EQ(ReadPositions(Query{}), (std::vector<Position>{1, 2, 3}));
}

TEST_P(AnyStoreTest, StoredEventKeepsEveryFieldExactly) {
  Event event = MakeEvent("CourseDefined", {"course:c1"}, std::string("\0bin\xff", 5));
  event.id = *ParseEventId("0190a6c8-7f3e-7c3a-9d2e-1234567890ab");
  event.metadata = {1700000000123, "corr-1", "cause-1", "key-1"};
  MustAppend({event});
  auto read = store_->Read(Query{});
  ASSERT_TRUE(read.ok());
  ASSERT_EQ(read->events.size(), 1u);
  EXPECT_EQ(read->events[0].position, 1u);
  EXPECT_EQ(read->events[0].event, event);
}

TEST_P(AnyStoreTest, AppendFillsANilIdAndAZeroTimestamp) {
  auto before = std::chrono::system_clock::now();
  MustAppend({MakeEvent("A"), MakeEvent("A")});
  auto read = store_->Read(Query{});
  ASSERT_TRUE(read.ok());
  const Event& a = read->events[0].event;
  const Event& b = read->events[1].event;
  EXPECT_NE(a.id, EventId{});
  EXPECT_NE(a.id, b.id);
  EXPECT_EQ(a.id[6] >> 4, 4);  // version 4
  EXPECT_GE(
      a.metadata.timestamp_ms,
      std::chrono::duration_cast<std::chrono::milliseconds>(before.time_since_epoch()).count());
}

TEST_P(AnyStoreTest, DuplicateTagsAreStoredOnceInFirstOccurrenceOrder) {
  MustAppend({MakeEvent("A", {"b", "a", "b", "c", "a"})});
  auto read = store_->Read(Query{});
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read->events[0].event.tags, (std::vector<std::string>{"b", "a", "c"}));
  // A query naming a tag twice still matches.
  EXPECT_EQ(ReadPositions(QueryOf({Item({}, {"a", "a"})})), (std::vector<Position>{1}));
}

TEST_P(AnyStoreTest, EmptyQueryMatchesAllAndEmptyItemIsRejected) {
  MustAppend({MakeEvent("A", {"x"}), MakeEvent("B")});
  EXPECT_EQ(ReadPositions(Query{}), (std::vector<Position>{1, 2}));
  auto read = store_->Read(QueryOf({Item({}, {})}));
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), Code::kInvalidArgument);
  EXPECT_NE(read.status().message().find("query item 0 has neither types nor tags"),
            std::string::npos);
  auto appended = store_->Append({MakeEvent("C")}, FailIf(QueryOf({Item({}, {})}), 0));
  EXPECT_EQ(appended.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(store_->Head(), 2u);
}

TEST_P(AnyStoreTest, ItemsAreOredAndAnItemNeedsOneOfItsTypesAndAllItsTags) {
  MustAppend({
      MakeEvent("A", {"x", "y"}),  // 1
      MakeEvent("B", {"x"}),       // 2
      MakeEvent("A", {"y"}),       // 3
      MakeEvent("C", {"x", "y"}),  // 4
      MakeEvent("C"),              // 5
  });
  EXPECT_EQ(ReadPositions(QueryOf({Item({"A", "C"}, {"x", "y"})})), (std::vector<Position>{1, 4}));
  EXPECT_EQ(ReadPositions(QueryOf({Item({"B"}), Item({}, {"y"})})),
            (std::vector<Position>{1, 2, 3, 4}));
  EXPECT_EQ(ReadPositions(QueryOf({Item({"C"})})), (std::vector<Position>{4, 5}));
  EXPECT_EQ(ReadPositions(QueryOf({Item({"Unknown"}), Item({}, {"nope"})})),
            (std::vector<Position>{}));
}

TEST_P(AnyStoreTest, AfterIsExclusive) {
  MustAppend({MakeEvent("A", {"k"})});  // 1
  MustAppend({MakeEvent("B")});         // 2
  Query query = QueryOf({Item({}, {"k"})});
  // The matching event is at 1: after=1 does not see it, after=0 does.
  EXPECT_EQ(MustAppend({MakeEvent("A", {"k"})}, FailIf(query, 1)), 3u);
  auto conflict = store_->Append({MakeEvent("A", {"k"})}, FailIf(query, 2));
  ASSERT_FALSE(conflict.ok());
  EXPECT_EQ(conflict.status().code(), Code::kConflict);
  EXPECT_NE(conflict.status().message().find("event 3"), std::string::npos);
  EXPECT_EQ(store_->Append({MakeEvent("A")}, FailIf(query, 0)).status().code(), Code::kConflict);
  // No `after` means every event counts.
  EXPECT_EQ(store_->Append({MakeEvent("A")}, FailIf(query, std::nullopt)).status().code(),
            Code::kConflict);
  EXPECT_EQ(store_->Head(), 3u);
  EXPECT_EQ(store_->Stats().conflicts, 3u);
}

TEST_P(AnyStoreTest, EmptyConditionQueryFailsOnAnyLaterEvent) {
  MustAppend({MakeEvent("A")});
  EXPECT_EQ(MustAppend({MakeEvent("B")}, FailIf(Query{}, 1)), 2u);
  EXPECT_EQ(store_->Append({MakeEvent("C")}, FailIf(Query{}, 1)).status().code(), Code::kConflict);
}

TEST_P(AnyStoreTest, FromIsInclusiveForwardsAndBackwards) {
  for (int i = 0; i < 5; ++i) MustAppend({MakeEvent("A")});
  ReadOptions forwards;
  forwards.from = 3;
  EXPECT_EQ(ReadPositions(Query{}, forwards), (std::vector<Position>{3, 4, 5}));
  ReadOptions backwards;
  backwards.from = 3;
  backwards.backwards = true;
  EXPECT_EQ(ReadPositions(Query{}, backwards), (std::vector<Position>{3, 2, 1}));
  backwards.from.reset();
  backwards.limit = 2;
  EXPECT_EQ(ReadPositions(Query{}, backwards), (std::vector<Position>{5, 4}));
  forwards.from = 9;
  EXPECT_EQ(ReadPositions(Query{}, forwards), (std::vector<Position>{}));
}

TEST_P(AnyStoreTest, ReadHeadIsTheAfterForADecisionOnThatRead) {
  MustAppend({MakeEvent("A", {"k"}), MakeEvent("B"), MakeEvent("A", {"k"}), MakeEvent("B")});
  Query query = QueryOf({Item({}, {"k"})});
  // Read to the end: the store's head, though the last match is at 3.
  auto all = store_->Read(query);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->head, 4u);
  // Stopped by the limit: the last returned position.
  ReadOptions limited;
  limited.limit = 1;
  auto first = store_->Read(query, limited);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(testing::PositionsOf(first->events), (std::vector<Position>{1}));
  EXPECT_EQ(first->head, 1u);
  // Backwards: min(from, head).
  ReadOptions back;
  back.backwards = true;
  back.limit = 1;
  EXPECT_EQ(store_->Read(query, back)->head, 4u);
  back.from = 2;
  EXPECT_EQ(store_->Read(query, back)->head, 2u);
  // A decision on the limited read conflicts with the unseen match at 3.
  EXPECT_EQ(store_->Append({MakeEvent("A", {"k"})}, FailIf(query, first->head)).status().code(),
            Code::kConflict);
  EXPECT_EQ(MustAppend({MakeEvent("A", {"k"})}, FailIf(query, all->head)), 5u);
  // Limit 0 reads nothing, so it vouches for nothing from `from` on.
  ReadOptions none;
  none.limit = 0;
  none.from = 3;
  auto empty = store_->Read(query, none);
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->events.empty());
  EXPECT_EQ(empty->head, 2u);
}

TEST_P(AnyStoreTest, RetryOfAnAppendThatAlreadySucceededReturnsItsPosition) {
  Query query = QueryOf({Item({}, {"order:1"})});
  std::vector<Event> events = {MakeEvent("Placed", {"order:1"}), MakeEvent("Paid", {"order:1"})};
  for (Event& e : events) e.id = *NewEventId();
  EXPECT_EQ(MustAppend(events, FailIf(query, 0)), 2u);
  MustAppend({MakeEvent("Unrelated")});
  // The same request again (the client never saw the answer): the original position.
  EXPECT_EQ(MustAppend(events, FailIf(query, 0)), 2u);
  EXPECT_EQ(store_->Head(), 3u);
  // Still a retry after others appended matching events: the events are stored already.
  MustAppend({MakeEvent("Shipped", {"order:1"})});
  EXPECT_EQ(MustAppend(events, FailIf(query, 0)), 2u);
  // Same ids with other data is not a retry: the ids are taken.
  std::vector<Event> changed = events;
  changed[1].data = R"({"other":true})";
  auto refused = store_->Append(changed, FailIf(QueryOf({Item({"Placed", "Paid"})}), 0));
  EXPECT_EQ(refused.status().code(), Code::kDuplicateEventId);
  EXPECT_EQ(store_->Head(), 4u);
}

TEST_P(AnyStoreTest, EventIdsAreUniqueInTheStore) {
  Event original = MakeEvent("Deposited", {"account:1"}, R"({"amount":10})");
  original.id = *NewEventId();
  ASSERT_EQ(MustAppend({original}), 1u);
  // The same id with other data and no condition: refused, naming the id and its position.
  Event other = original;
  other.data = R"({"amount":99})";
  auto refused = store_->Append({other});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Code::kDuplicateEventId);
  EXPECT_NE(refused.status().message().find(FormatEventId(original.id)), std::string::npos);
  EXPECT_NE(refused.status().message().find("position 1"), std::string::npos)
      << refused.status().message();
  // The same event sent again, unconditionally or with `after` at the current head: a retry,
  // answered with its original position.
  EXPECT_EQ(MustAppend({original}), 1u);
  EXPECT_EQ(MustAppend({original}, FailIf(QueryOf({Item({}, {"account:1"})}), store_->Head())), 1u);
  // An append that reuses one stored id among new ones is refused whole.
  Event fresh = MakeEvent("Deposited", {"account:1"});
  auto mixed = store_->Append({fresh, original});
  EXPECT_EQ(mixed.status().code(), Code::kDuplicateEventId);
  // Other metadata is not the same event either.
  Event relabelled = original;
  relabelled.metadata.correlation_id = "another-request";
  EXPECT_EQ(store_->Append({relabelled}).status().code(), Code::kDuplicateEventId);
  EXPECT_EQ(store_->Read(Query{})->events.size(), 1u);
  if (GetParam() == testing::Backend::kEmbedded) {  // PostgreSQL's refused appends leave gaps
    EXPECT_EQ(store_->Head(), 1u);
  }
  EXPECT_EQ(store_->Stats().duplicate_ids, 3u);
}

TEST_P(AnyStoreTest, IdsStayUniqueAcrossReopenAndTableGrowth) {
  // Given more events than the id index's first table holds, stored in several appends.
  std::vector<EventId> ids;
  for (int batch = 0; batch < 30; ++batch) {
    std::vector<Event> events;
    for (int i = 0; i < 100; ++i) {
      events.push_back(MakeEvent("E", {}, std::to_string(batch * 100 + i)));
      events.back().id = *NewEventId();
      ids.push_back(events.back().id);
    }
    MustAppend(events);
  }
  Reopen();
  // Then every id is found by ReadById, and reusing any is refused.
  for (size_t i = 0; i < ids.size(); i += 97) {
    auto found = store_->ReadById(ids[i]);
    ASSERT_TRUE(found.ok() && found->has_value()) << i;
    EXPECT_EQ((*found)->position, i + 1);
    EXPECT_EQ((*found)->event.data, std::to_string(i));
    Event reuse = MakeEvent("E", {}, "other");
    reuse.id = ids[i];
    EXPECT_EQ(store_->Append({reuse}).status().code(), Code::kDuplicateEventId) << i;
  }
  auto missing = store_->ReadById(*NewEventId());
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());
  if (GetParam() == testing::Backend::kEmbedded) {  // its own index (PostgreSQL's is a table's)
    EXPECT_GT(store_->Stats().id_index_bytes, 0u);
    EXPECT_LE(store_->Stats().id_index_bytes, ids.size() * 22);
  }
}

TEST_P(AnyStoreTest, ConcurrentAppendsOfOneIdStoreItOnce) {
  // Given rounds of two appends in flight at once, reusing one id with different data.
  for (int round = 0; round < 40; ++round) {
    EventId id = *NewEventId();
    std::barrier start(2);
    Result<Position> results[2] = {Status::Internal("unset"), Status::Internal("unset")};
    std::thread threads[2];
    for (int t = 0; t < 2; ++t) {
      threads[t] = std::thread([&, t] {
        Event event = MakeEvent("Placed", {}, std::to_string(t));
        event.id = id;
        start.arrive_and_wait();
        results[t] = store_->Append({event});
      });
    }
    for (auto& thread : threads) thread.join();
    // Then exactly one is stored; the other is refused as a duplicate.
    EXPECT_NE(results[0].ok(), results[1].ok()) << round;
    const auto& refused = results[0].ok() ? results[1] : results[0];
    EXPECT_EQ(refused.status().code(), Code::kDuplicateEventId) << round;
  }
  EXPECT_EQ(store_->Read(Query{})->events.size(), 40u);
  // The embedded store's positions have no gap; PostgreSQL's sequence skips the positions of
  // the refused appends.
  if (GetParam() == testing::Backend::kEmbedded) {
    EXPECT_EQ(store_->Head(), 40u);
  }
}

TEST_P(AnyStoreTest, EventAndAppendSizeLimitsAreEnforcedWithClearErrors) {
  EventStoreOptions options;
  options.limits.max_event_bytes = 1000;
  options.limits.max_append_bytes = 2500;
  Reopen(options);
  auto big = store_->Append({MakeEvent("A", {}, std::string(1000, 'x'))});
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), Code::kLimitExceeded);
  EXPECT_NE(big.status().message().find("max_event_bytes"), std::string::npos);
  std::vector<Event> many(3, MakeEvent("A", {}, std::string(900, 'x')));
  auto batch = store_->Append(many);
  ASSERT_FALSE(batch.ok());
  EXPECT_EQ(batch.status().code(), Code::kLimitExceeded);
  EXPECT_NE(batch.status().message().find("max_append_bytes"), std::string::npos);
  EXPECT_EQ(store_->Head(), 0u);
  // Just under both limits is fine.
  std::string fits(1000 - kEventOverheadBytes - 1, 'x');
  EXPECT_EQ(MustAppend({MakeEvent("A", {}, fits)}), 1u);
  EXPECT_EQ(MustAppend(std::vector<Event>(2, MakeEvent("A", {}, std::string(900, 'x')))), 3u);
}

TEST_P(AnyStoreTest, DefaultLimitsAreOneMebibytePerEventAndSixteenPerAppend) {
  EXPECT_EQ(store_->limits().max_event_bytes, 1u << 20);
  EXPECT_EQ(store_->limits().max_append_bytes, 16u << 20);
  auto big = store_->Append({MakeEvent("A", {}, std::string(1u << 20, 'x'))});
  EXPECT_EQ(big.status().code(), Code::kLimitExceeded);
}

TEST_P(AnyStoreTest, BadEventsAreRejectedWithTheirIndex) {
  struct Case {
    Event event;
    std::string message;
  };
  std::vector<Case> cases = {
      {MakeEvent(""), "event 1: type is empty"},
      {MakeEvent("A", {""}), "event 1: tag is empty"},
      {MakeEvent(std::string(257, 't')), "max_type_bytes"},
      {MakeEvent("A", {std::string("\xc3\x28", 2)}), "not valid UTF-8"},
  };
  for (const Case& c : cases) {
    auto appended = store_->Append({MakeEvent("Fine"), c.event});
    ASSERT_FALSE(appended.ok()) << c.message;
    EXPECT_NE(appended.status().message().find(c.message), std::string::npos)
        << appended.status().message();
  }
  EXPECT_EQ(store_->Append({}).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(store_->Head(), 0u);
}

TEST_P(AnyStoreTest, ReopeningKeepsEveryEventAndTheIndex) {
  MustAppend({MakeEvent("A", {"t:1"}), MakeEvent("B", {"t:2"})});
  MustAppend({MakeEvent("A", {"t:2"})});
  Reopen();
  EXPECT_EQ(store_->Head(), 3u);
  EXPECT_EQ(ReadPositions(QueryOf({Item({}, {"t:2"})})), (std::vector<Position>{2, 3}));
  EXPECT_EQ(MustAppend({MakeEvent("C")}), 4u);
}

TEST_F(EventStoreTest, SegmentsRollOverAndReopen) {
  EventStoreOptions options;
  options.limits.max_append_bytes = 4096;
  options.segment_bytes = 8192;
  Reopen(options);
  for (int i = 0; i < 100; ++i) {
    MustAppend({MakeEvent("A", {"n:" + std::to_string(i % 7)}, std::string(200, 'd'))});
  }
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir_.path() / "events")) {
    files += entry.path().extension() == ".log";
  }
  EXPECT_GT(files, 2u);
  Reopen(options);
  EXPECT_EQ(store_->Head(), 100u);
  EXPECT_EQ(ReadPositions(QueryOf({Item({}, {"n:3"})})).size(), 14u);
  auto read = store_->Read(Query{});
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read->events.size(), 100u);
}

TEST_F(EventStoreTest, ASecondOpenOfTheSameDirectoryIsRefused) {
  auto second = OpenEventStore(dir_.path() / "events");
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), Code::kUnavailable);
  EXPECT_NE(second.status().message().find("in use by another process"), std::string::npos);
}

TEST_F(EventStoreTest, ATornAppendAtTheEndIsCutAwayOnOpen) {
  MustAppend({MakeEvent("A")});
  MustAppend({MakeEvent("B")});
  store_.reset();
  auto segment = dir_.path() / "events" / "segment-00000000000000000001.log";
  auto size = std::filesystem::file_size(segment);
  std::filesystem::resize_file(segment, size - 10);  // the second append loses its end
  Reopen();
  EXPECT_EQ(store_->Head(), 1u);
  EXPECT_EQ(MustAppend({MakeEvent("C")}), 2u);
  Reopen();
  EXPECT_EQ(store_->Head(), 2u);
}

TEST_F(EventStoreTest, DamageBeforeTheEndIsDataLossNotSilentTruncation) {
  MustAppend({MakeEvent("A", {}, "first")});
  MustAppend({MakeEvent("B", {}, "second")});
  store_.reset();
  auto segment = dir_.path() / "events" / "segment-00000000000000000001.log";
  {
    std::fstream file(segment, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(32 + 32 + 44 + 1);  // inside the first event's type+data
    file.put('X');
  }
  auto opened = OpenEventStore(dir_.path() / "events");
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), Code::kDataLoss);
  EXPECT_NE(opened.status().message().find("segment-00000000000000000001.log"), std::string::npos);
}

TEST_P(AnyStoreTest, ReadEachStopsWhenTheVisitorSaysSo) {
  for (int i = 0; i < 10; ++i) MustAppend({MakeEvent("A")});
  std::vector<Position> seen;
  auto head = store_->ReadEach(Query{}, {}, [&](const EventView& view) {
    seen.push_back(view.position);
    return seen.size() < 3;
  });
  ASSERT_TRUE(head.ok());
  EXPECT_EQ(seen, (std::vector<Position>{1, 2, 3}));
  EXPECT_EQ(*head, 3u);
}

TEST_F(EventStoreTest, ConcurrentAppendsShareSyncs) {
  constexpr int kThreads = 16;
  constexpr int kEach = 50;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) ASSERT_TRUE(store_->Append({MakeEvent("A")}).ok());
    });
  }
  for (auto& thread : threads) thread.join();
  EventStoreStats stats = store_->Stats();
  EXPECT_EQ(store_->Head(), Position{kThreads * kEach});
  EXPECT_EQ(stats.appends, uint64_t{kThreads * kEach});
  // Group commit: fewer syncs than appends (each sync covers every append queued meanwhile).
  EXPECT_LT(stats.syncs, stats.appends);
}

TEST_P(AnyStoreTest, OneFailingConditionInABatchDoesNotFailTheOthers) {
  MustAppend({MakeEvent("A", {"busy"})});
  Query busy = QueryOf({Item({}, {"busy"})});
  constexpr int kThreads = 16;
  std::vector<std::thread> threads;
  std::atomic<int> ok{0}, conflicts{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        // Even threads always conflict (after=0 sees the "busy" event); odd ones never do.
        bool fail = t % 2 == 0;
        auto appended = store_->Append({MakeEvent("B", {"t:" + std::to_string(t)})},
                                       FailIf(fail ? busy : QueryOf({Item({"Never"})}), 0));
        (appended.ok() ? ok : conflicts).fetch_add(1);
        if (!appended.ok()) {
          EXPECT_EQ(appended.status().code(), Code::kConflict);
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(ok.load(), kThreads / 2 * 20);
  EXPECT_EQ(conflicts.load(), kThreads / 2 * 20);
  EXPECT_EQ(store_->Head(), Position{1 + kThreads / 2 * 20});
}

}  // namespace
}  // namespace reef::events
