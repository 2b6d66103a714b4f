// Regression tests from the review of the event store: each names the behaviour that broke.
#include <gtest/gtest.h>

#include <barrier>
#include <random>
#include <thread>

#include "event_store_test_support.h"
#include "events/detail/log_format.h"
#include "events/event_store.h"

namespace reef::events {
namespace {

using testing::AnyStoreTest;
using testing::EventStoreTest;
using testing::FailIf;
using testing::Item;
using testing::MakeEvent;
using testing::QueryOf;

EventId IdOf(uint8_t last) {
  EventId id{};
  id[15] = last;
  return id;
}

TEST_P(AnyStoreTest, ARetryCheckNeverLooksBeforePositionOne) {
  // Given an event with id ...01 at position 1, an append whose third event reuses that id
  // (so its "original" would have started before position 1) is refused for the reused id.
  Event first = MakeEvent("A", {"t1"});
  first.id = IdOf(1);
  MustAppend({first});
  Event a = MakeEvent("A"), b = MakeEvent("A"), c = MakeEvent("A", {"t1"});
  a.id = IdOf(0x10);
  b.id = IdOf(0x11);
  c.id = IdOf(1);
  auto appended = store_->Append({a, b, c}, FailIf(QueryOf({Item({}, {"t1"})}), 0));
  ASSERT_FALSE(appended.ok());
  EXPECT_EQ(appended.status().code(), Code::kDuplicateEventId);
}

TEST_P(AnyStoreTest, ARetrySentWhileTheOriginalIsInFlightGetsTheOriginalPosition) {
  Query query = QueryOf({Item({}, {"order:1"})});
  for (int round = 0; round < 40; ++round) {
    Event event = MakeEvent("Placed", {"order:1"});
    event.id = *NewEventId();
    Position after = store_->Head();
    std::barrier start(2);
    Result<Position> results[2] = {Status::Internal("unset"), Status::Internal("unset")};
    std::thread threads[2];
    for (int t = 0; t < 2; ++t) {
      threads[t] = std::thread([&, t] {
        start.arrive_and_wait();
        results[t] = store_->Append({event}, FailIf(query, after));
      });
    }
    for (auto& thread : threads) thread.join();
    ASSERT_TRUE(results[0].ok()) << round << ": " << results[0].status().ToString();
    ASSERT_TRUE(results[1].ok()) << round << ": " << results[1].status().ToString();
    EXPECT_EQ(*results[0], *results[1]);
  }
  EXPECT_EQ(store_->Read(Query{})->events.size(), 40u);
}

TEST_P(AnyStoreTest, AnEventWithOnlyTheFirstOfAnItemsTagsDoesNotFailTheCondition) {
  // (The PostgreSQL store looks up an item's first tag before checking the item whole.)
  MustAppend({MakeEvent("Booked", {"room:1"})});
  Query both = QueryOf({Item({"Booked"}, {"room:1", "day:2"})});
  auto booked = store_->Append({MakeEvent("Booked", {"room:1", "day:2"})}, FailIf(both, 0));
  ASSERT_TRUE(booked.ok()) << booked.status().ToString();
  auto again = store_->Append({MakeEvent("Booked", {"room:1", "day:2"})}, FailIf(both, 0));
  EXPECT_EQ(again.status().code(), Code::kConflict);
}

TEST_P(AnyStoreTest, AConditionTermHoldingNulMatchesNothing) {
  // (No stored event carries U+0000 on PostgreSQL; the embedded store matches bytes.)
  MustAppend({MakeEvent("A", {"x"})});
  const std::string nul_tag("x\0", 2), nul_type("A\0", 2);
  auto by_tag = store_->Append({MakeEvent("B")}, FailIf(QueryOf({Item({}, {nul_tag})}), 0));
  EXPECT_TRUE(by_tag.ok()) << by_tag.status().ToString();
  auto by_type = store_->Append({MakeEvent("B")}, FailIf(QueryOf({Item({nul_type}, {})}), 0));
  EXPECT_TRUE(by_type.ok()) << by_type.status().ToString();
  // A term holding it does not hide the item's other types, nor the other items.
  auto either =
      store_->Append({MakeEvent("B")}, FailIf(QueryOf({Item({nul_type, "A"}, {"x"})}), 0));
  EXPECT_EQ(either.status().code(), Code::kConflict);
  auto second =
      store_->Append({MakeEvent("B")}, FailIf(QueryOf({Item({}, {nul_tag}), Item({"A"}, {})}), 0));
  EXPECT_EQ(second.status().code(), Code::kConflict);
}

TEST_P(AnyStoreTest, OneAppendMayNotCarryAnIdTwice) {
  Event a = MakeEvent("A"), b = MakeEvent("B");
  a.id = b.id = IdOf(7);
  auto appended = store_->Append({a, b});
  ASSERT_FALSE(appended.ok());
  EXPECT_EQ(appended.status().code(), Code::kInvalidArgument);
  EXPECT_NE(appended.status().message().find("events 0 and 1 have the same id"), std::string::npos);
}

TEST_P(AnyStoreTest, AfterAtTheTopOfTheRangeDoesNotWrap) {
  MustAppend({MakeEvent("A", {"k"})});
  EXPECT_EQ(MustAppend({MakeEvent("A", {"k"})},
                       FailIf(QueryOf({Item({}, {"k"})}), std::numeric_limits<Position>::max())),
            2u);
}

TEST_P(AnyStoreTest, LimitZeroFromZeroGivesHeadZero) {
  MustAppend({MakeEvent("A")});
  ReadOptions options;
  options.limit = 0;
  options.from = 0;
  auto read = store_->Read(Query{}, options);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read->head, 0u);
}

TEST_P(AnyStoreTest, ReadsSearchedInSmallWindowsMatchABruteForceModel) {
  // Given a window of 3 positions per lock hold (so every read crosses many windows),
  EventStoreOptions options;
  options.read_window_positions = 3;
  Reopen(options);
  std::mt19937 rng(7);
  std::vector<Event> all;
  for (int i = 0; i < 60; ++i) {
    Event e = MakeEvent(i % 3 ? "A" : "B", {"k:" + std::to_string(rng() % 4)});
    if (rng() % 5 == 0) e.tags.push_back("rare");
    all.push_back(e);
    MustAppend({e});
  }
  // then random reads agree with filtering the events one by one.
  for (int trial = 0; trial < 300; ++trial) {
    Query query;
    if (rng() % 4) {
      QueryItem item;
      if (rng() % 2) item.types.push_back(rng() % 2 ? "A" : "B");
      if (item.types.empty() || rng() % 2) {
        item.tags.push_back(rng() % 3 ? "k:" + std::to_string(rng() % 4) : "rare");
      }
      query.items.push_back(item);
    }
    ReadOptions read;
    read.backwards = rng() % 2;
    if (rng() % 2) read.from = rng() % 70;
    if (rng() % 2) read.limit = rng() % 10;
    std::vector<Position> expected;
    for (Position p = 1; p <= all.size(); ++p) {
      std::vector<std::string_view> tags(all[p - 1].tags.begin(), all[p - 1].tags.end());
      if (!Matches(query, all[p - 1].type, tags)) continue;
      if (read.from && (read.backwards ? p > *read.from : p < *read.from)) continue;
      expected.push_back(p);
    }
    if (read.backwards) std::reverse(expected.begin(), expected.end());
    if (read.limit && expected.size() > *read.limit) expected.resize(*read.limit);
    EXPECT_EQ(ReadPositions(query, read), expected) << "trial " << trial;
  }
}

TEST_F(EventStoreTest, ATornAppendWhoseDataLooksLikeAFrameIsStillCutAway) {
  MustAppend({MakeEvent("A")});
  // The data of the second append holds a whole, intact frame (header and checksums).
  std::string body;
  detail::EncodeRecord(MakeEvent("Fake"), body);
  std::string fake = detail::EncodeFrameHeader({99, 1, static_cast<uint32_t>(body.size()),
                                                detail::Crc32c(body.data(), body.size())}) +
                     body;
  MustAppend({MakeEvent("B", {}, std::string(1000, 'x') + fake + std::string(50'000, 'y'))});
  store_.reset();
  auto segment = dir_.path() / "events" / "segment-00000000000000000001.log";
  std::filesystem::resize_file(segment, std::filesystem::file_size(segment) - 20'000);
  Reopen();
  EXPECT_EQ(store_->Head(), 1u);
  EXPECT_GT(store_->Stats().torn_bytes_cut, 0u);
}

TEST_F(EventStoreTest, AFailedStoreEndsLiveSubscriptionsWithUnavailable) {
  // A closed store stands in for a failed one here: both must wake a waiting subscriber.
  auto sub = store_->Subscribe(Query{}, 0);
  ASSERT_TRUE(sub.ok());
  ASSERT_TRUE((*sub)->Next(1, std::chrono::milliseconds(5)).ok());
  ASSERT_TRUE((*sub)->live());
  std::thread closer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    store_.reset();
  });
  auto next = (*sub)->Next(1, std::chrono::seconds(5));
  closer.join();
  ASSERT_FALSE(next.ok());
  EXPECT_EQ(next.status().code(), Code::kUnavailable);
}

}  // namespace
}  // namespace reef::events
