// LogStore: image-wide sequence, per-actor retention, paged history, follow (spec 001 "Actor
// repair and logging").
#include "actor/log_store.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "unit/actor/test_guests.h"

namespace reef::actor {
namespace {

using std::chrono::milliseconds;
using test_support::NumberedRef;

uint64_t MustAppend(LogStore& store, ActorRef actor, std::string message,
                    LogLevel level = LogLevel::kInfo, uint32_t incarnation = 1) {
  auto seq = store.Append(actor, incarnation, level, std::move(message));
  EXPECT_TRUE(seq.ok()) << seq.status().ToString();
  return seq.ok() ? *seq : 0;
}

LogPage MustHistory(const LogStore& store, const LogFilter& filter, uint64_t after, size_t limit) {
  auto page = store.History(filter, after, limit);
  EXPECT_TRUE(page.ok()) << page.status().ToString();
  return page.ok() ? *page : LogPage{};
}

std::vector<std::string> Messages(const std::vector<LogEntry>& entries) {
  std::vector<std::string> messages;
  for (const LogEntry& entry : entries) messages.push_back(entry.message);
  return messages;
}

TEST(LogStoreTest, AssignsImageWideIncreasingSequenceStartingAtOne) {
  LogStore store;
  EXPECT_EQ(store.last_seq(), 0u);

  EXPECT_EQ(MustAppend(store, NumberedRef(1), "a"), 1u);
  EXPECT_EQ(MustAppend(store, NumberedRef(2), "b"), 2u);
  EXPECT_EQ(MustAppend(store, NumberedRef(1), "c"), 3u);
  EXPECT_EQ(store.last_seq(), 3u);
}

TEST(LogStoreTest, EntriesCarryActorIdentityLevelMessageAndTime) {
  LogStore store;
  MustAppend(store, NumberedRef(1), "hello", LogLevel::kWarn, /*incarnation=*/3);

  LogPage page = MustHistory(store, {}, 0, 10);

  ASSERT_EQ(page.entries.size(), 1u);
  const LogEntry& entry = page.entries[0];
  EXPECT_EQ(entry.seq, 1u);
  EXPECT_EQ(entry.actor, NumberedRef(1));
  EXPECT_EQ(entry.incarnation, 3u);
  EXPECT_EQ(entry.level, LogLevel::kWarn);
  EXPECT_EQ(entry.message, "hello");
  EXPECT_GT(entry.unix_ms, 1'600'000'000'000);
}

TEST(LogStoreTest, RetainsLastThousandEntriesPerActor) {
  LogStore store;
  for (int i = 1; i <= 1'500; ++i) MustAppend(store, NumberedRef(1), std::to_string(i));

  EXPECT_EQ(store.retained(NumberedRef(1)), 1'000u);
  LogPage page = MustHistory(store, {.actors = {NumberedRef(1)}}, 0, 10'000);
  ASSERT_EQ(page.entries.size(), 1'000u);
  EXPECT_EQ(page.entries.front().message, "501");
  EXPECT_EQ(page.entries.back().message, "1500");
  EXPECT_FALSE(page.more);
}

TEST(LogStoreTest, RetentionIsPerActorNotShared) {
  LogStore store(LogStoreOptions{.retained_per_actor = 3});
  for (int i = 0; i < 3; ++i) MustAppend(store, NumberedRef(1), "quiet");
  for (int i = 0; i < 50; ++i) MustAppend(store, NumberedRef(2), "noisy");

  EXPECT_EQ(store.retained(NumberedRef(1)), 3u);
  EXPECT_EQ(store.retained(NumberedRef(2)), 3u);
}

TEST(LogStoreTest, RetentionSurvivesRestart) {
  LogStore store;
  MustAppend(store, NumberedRef(1), "before restart", LogLevel::kInfo, /*incarnation=*/1);

  // Same ref, new incarnation.
  MustAppend(store, NumberedRef(1), "after restart", LogLevel::kInfo, /*incarnation=*/2);

  LogPage page = MustHistory(store, {.actors = {NumberedRef(1)}}, 0, 10);
  ASSERT_EQ(page.entries.size(), 2u);
  EXPECT_EQ(page.entries[0].incarnation, 1u);
  EXPECT_EQ(page.entries[1].incarnation, 2u);
  EXPECT_EQ(Messages(page.entries), (std::vector<std::string>{"before restart", "after restart"}));
}

TEST(LogStoreTest, ForgetDropsOnlyThatActorsEntries) {
  LogStore store;
  MustAppend(store, NumberedRef(1), "gone");
  MustAppend(store, NumberedRef(2), "kept");

  store.Forget(NumberedRef(1));

  EXPECT_EQ(store.retained(NumberedRef(1)), 0u);
  EXPECT_EQ(Messages(MustHistory(store, {}, 0, 10).entries), (std::vector<std::string>{"kept"}));
  EXPECT_EQ(MustAppend(store, NumberedRef(1), "new"), 3u);  // the sequence continues
}

TEST(LogStoreTest, HistoryPagesPreserveSequenceOrder) {
  LogStore store;
  for (int i = 0; i < 100; ++i) MustAppend(store, NumberedRef(i % 7), std::to_string(i));

  std::vector<uint64_t> seqs;
  uint64_t after = 0;
  int pages = 0;
  while (true) {
    LogPage page = MustHistory(store, {}, after, 9);
    for (const LogEntry& entry : page.entries) seqs.push_back(entry.seq);
    after = page.next_after;
    ++pages;
    if (!page.more) break;
  }

  ASSERT_EQ(seqs.size(), 100u);
  for (size_t i = 0; i < seqs.size(); ++i) EXPECT_EQ(seqs[i], i + 1);
  EXPECT_EQ(pages, 12);  // 11 full pages of 9, then 1
}

TEST(LogStoreTest, HistoryIsNonDestructive) {
  LogStore store;
  MustAppend(store, NumberedRef(1), "x");

  EXPECT_EQ(MustHistory(store, {}, 0, 10).entries.size(), 1u);
  EXPECT_EQ(MustHistory(store, {}, 0, 10).entries.size(), 1u);
}

TEST(LogStoreTest, HistoryFiltersByActorsAndMinimumLevel) {
  LogStore store;
  MustAppend(store, NumberedRef(1), "1-debug", LogLevel::kDebug);
  MustAppend(store, NumberedRef(2), "2-error", LogLevel::kError);
  MustAppend(store, NumberedRef(3), "3-warn", LogLevel::kWarn);
  MustAppend(store, NumberedRef(1), "1-warn", LogLevel::kWarn);

  LogFilter filter{.actors = {NumberedRef(1), NumberedRef(3), NumberedRef(1)},
                   .min_level = LogLevel::kWarn};
  LogPage page = MustHistory(store, filter, 0, 10);

  EXPECT_EQ(Messages(page.entries), (std::vector<std::string>{"3-warn", "1-warn"}));
  EXPECT_FALSE(page.more);
}

TEST(LogStoreTest, EmptyPageKeepsTheCursor) {
  LogStore store;
  MustAppend(store, NumberedRef(1), "x");

  LogPage page = MustHistory(store, {}, 1, 10);

  EXPECT_TRUE(page.entries.empty());
  EXPECT_EQ(page.next_after, 1u);
  EXPECT_FALSE(page.more);
}

TEST(LogStoreTest, HistoryRejectsPageLimitOverTheCapOrZero) {
  LogStore store;

  auto over = store.History({}, 0, 10'001);
  auto zero = store.History({}, 0, 0);

  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), Code::kInvalidArgument);
  EXPECT_NE(over.status().message().find("10000"), std::string::npos);
  ASSERT_FALSE(zero.ok());
  EXPECT_TRUE(store.History({}, 0, 10'000).ok());
}

TEST(LogStoreTest, HistoryMergesManyActorsBySequence) {
  LogStore store(LogStoreOptions{.retained_per_actor = 20});
  const int actors = 2'000;
  for (int round = 0; round < 25; ++round) {
    for (int a = 0; a < actors; ++a) MustAppend(store, NumberedRef(a), "m");
  }

  uint64_t after = 0;
  uint64_t expected = 5 * actors + 1;  // the first 5 rounds were evicted
  size_t total = 0;
  for (bool more = true; more;) {
    LogPage page = MustHistory(store, {}, after, 10'000);
    for (const LogEntry& entry : page.entries) ASSERT_EQ(entry.seq, expected++);
    total += page.entries.size();
    after = page.next_after;
    more = page.more;
  }
  EXPECT_EQ(total, 20u * actors);
}

TEST(LogStoreTest, Rejects513ByteMessage) {
  LogStore store;

  auto too_long = store.Append(NumberedRef(1), 1, LogLevel::kInfo, std::string(513, 'x'));

  ASSERT_FALSE(too_long.ok());
  EXPECT_EQ(too_long.status().code(), Code::kLimitExceeded);
  EXPECT_NE(too_long.status().message().find("512"), std::string::npos);
  EXPECT_EQ(store.retained(NumberedRef(1)), 0u);
}

TEST(LogStoreTest, Accepts512BytesOfMultibyteUtf8) {
  LogStore store;
  std::string message;
  for (int i = 0; i < 256; ++i) message += "\xC3\xA9";  // U+00E9, 2 bytes

  EXPECT_TRUE(store.Append(NumberedRef(1), 1, LogLevel::kInfo, message).ok());
  EXPECT_FALSE(store.Append(NumberedRef(1), 1, LogLevel::kInfo, message + "x").ok());
}

TEST(LogStoreTest, RejectsInvalidUtf8) {
  LogStore store;

  auto bad = store.Append(NumberedRef(1), 1, LogLevel::kInfo, "ok\xFF");

  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
}

TEST(LogStoreTest, RejectedMessageConsumesNoSequence) {
  LogStore store;
  ASSERT_FALSE(store.Append(NumberedRef(1), 1, LogLevel::kInfo, std::string(600, 'x')).ok());

  EXPECT_EQ(MustAppend(store, NumberedRef(1), "first"), 1u);
}

TEST(LogStoreTest, FollowReceivesOnlyMatchingFutureEntries) {
  LogStore store;
  MustAppend(store, NumberedRef(1), "past", LogLevel::kError);
  auto follow = store.Follow({.actors = {NumberedRef(1)}, .min_level = LogLevel::kWarn});

  MustAppend(store, NumberedRef(1), "too low", LogLevel::kInfo);
  MustAppend(store, NumberedRef(2), "other actor", LogLevel::kError);
  MustAppend(store, NumberedRef(1), "wanted", LogLevel::kWarn);

  auto entries = follow->Poll(100);
  ASSERT_TRUE(entries.ok());
  ASSERT_EQ(entries->size(), 1u);
  EXPECT_EQ((*entries)[0].message, "wanted");
  EXPECT_EQ((*entries)[0].seq, 4u);
}

TEST(LogStoreTest, UnsubscribedConnectionGetsNothing) {
  LogStore store;
  auto follow = store.Follow({});
  MustAppend(store, NumberedRef(1), "before close");

  follow->Close();
  MustAppend(store, NumberedRef(1), "after close");

  EXPECT_FALSE(follow->Poll(100).ok());
  EXPECT_TRUE(follow->closed());
}

TEST(LogStoreTest, LaggingFollowerFailsExplicitly) {
  LogStore store(LogStoreOptions{.subscriber_buffer = 4});
  auto follow = store.Follow({});

  for (int i = 0; i < 5; ++i) MustAppend(store, NumberedRef(1), "x");

  auto entries = follow->Poll(100);
  ASSERT_FALSE(entries.ok());
  EXPECT_EQ(entries.status().code(), Code::kUnavailable);
  EXPECT_NE(entries.status().message().find("lagged"), std::string::npos);
  // History still holds the retained tail for catching up.
  EXPECT_EQ(MustHistory(store, {}, 0, 10).entries.size(), 5u);
}

TEST(LogStoreConcurrencyTest, FollowersSeeEveryEntryInSequenceOrder) {
  LogStore store(LogStoreOptions{.subscriber_buffer = 40'000});
  auto all = store.Follow({});
  auto one = store.Follow({.actors = {NumberedRef(0)}});
  constexpr int kThreads = 4, kPerThread = 2'000;

  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&store, t] {
      for (int i = 0; i < kPerThread; ++i) {
        ASSERT_TRUE(store.Append(NumberedRef(t), 1, LogLevel::kInfo, std::to_string(i)).ok());
      }
    });
  }
  std::vector<LogEntry> got;
  while (got.size() < size_t{kThreads * kPerThread}) {
    auto entries = all->Wait(1'000, milliseconds(10'000));
    ASSERT_TRUE(entries.ok()) << entries.status().ToString();
    ASSERT_FALSE(entries->empty());
    got.insert(got.end(), entries->begin(), entries->end());
  }
  for (auto& thread : threads) thread.join();

  std::vector<int> next(kThreads, 0);
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].seq, i + 1);
    int t = 0;
    while (got[i].actor != NumberedRef(t)) ++t;
    EXPECT_EQ(got[i].message, std::to_string(next[t]++));
  }
  auto mine = one->Poll(100'000);
  ASSERT_TRUE(mine.ok());
  EXPECT_EQ(mine->size(), size_t{kPerThread});
}

}  // namespace
}  // namespace reef::actor
