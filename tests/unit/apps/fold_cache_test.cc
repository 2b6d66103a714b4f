// The fold cache of command executions (issue 15: a decision state kept per module version,
// query and input, folded on from its position) against full folds, its byte bound and its
// keys; and the keyed turns executions of one query take. Real test_command guests and a real
// event store (module_runtime_test_support.h).
#include "apps/detail/fold_cache.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "apps/detail/keyed_turns.h"
#include "apps/module_runtime.h"
#include "module_runtime_test_support.h"

namespace reef::apps {
namespace {

using namespace reef::apps::testing;

// Issue 15: the fold cache. test_command's fold counts the events of its tag and keeps the
// "secret" of the last one (order matters), and declares that it ignores its input; each
// execution reports what it folded in the event it appends. Over a random history of direct
// appends (matching and not), executions with changing inputs and env changes (a new
// generation), every execution must see exactly what a full fold from the first event gives,
// and the cache must have been used.
TEST_F(ModuleRuntimeTest, TheFoldCacheGivesWhatAFullFoldGivesOnRandomHistories) {
  Upload(ModuleKind::kCommand, "count", "1.0.0", "test_command");
  const std::vector<std::string> tags = {"t0", "t1", "t2"};
  struct Folded {
    int64_t count = 0;
    Value last_secret = Value::Null();
  };
  std::map<std::string, Folded> expected;  // the full fold, kept by the test
  std::mt19937 random(20261203);
  auto pick = [&](int n) { return static_cast<int>(random() % static_cast<unsigned>(n)); };
  for (int step = 0; step < 400; ++step) {
    const std::string& tag = tags[pick(3)];
    std::string secret = fmt::format("s{}", step);
    bool with_secret = pick(2) == 0;
    switch (pick(10)) {
      case 0:
      case 1:
      case 2: {  // a direct append of a matching event, with or without a secret
        std::string data = with_secret ? fmt::format("{{\"secret\":\"{}\"}}", secret) : "{}";
        std::vector<events::Event> batch{MakeEvent("Direct", {tag}, data)};
        ASSERT_TRUE(events_->Append(std::move(batch), std::nullopt).ok());
        expected[tag].count += 1;
        expected[tag].last_secret = with_secret ? Value::String(secret) : Value::Null();
        break;
      }
      case 3: {  // an event no query matches
        std::vector<events::Event> batch{MakeEvent("Other", {"elsewhere"}, "{}")};
        ASSERT_TRUE(events_->Append(std::move(batch), std::nullopt).ok());
        break;
      }
      case 4:  // a lifecycle change: a new generation, so the kept states are not used
        ASSERT_TRUE(
            runtime_->SetEnv(ModuleKind::kCommand, "count", "STEP", std::to_string(step)).ok());
        break;
      default: {  // an execution with its own input
        json input = {{"tag", tag}};
        if (with_secret) input["secret"] = secret;
        auto outcome = runtime_->Execute("count", Input(input));
        ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
        ASSERT_EQ(outcome->kind, CommandOutcome::Kind::kAppended);
        const Record& data = outcome->event_data[0].as_record();
        ASSERT_EQ(data.at("count").as_int(), expected[tag].count) << "step " << step;
        ASSERT_EQ(data.at("last_secret"), expected[tag].last_secret) << "step " << step;
        // Its own Counted event is part of the history now.
        expected[tag].count += 1;
        expected[tag].last_secret = with_secret ? Value::String(secret) : Value::Null();
      }
    }
  }
  FoldCacheStats stats = runtime_->FoldCache();
  EXPECT_GT(stats.hits, 100u) << "the cache was not used";
  EXPECT_GT(stats.misses, 0u);
  EXPECT_GT(stats.entries, 0u);
}

TEST_F(ModuleRuntimeTest, TheFoldCacheStaysWithinItsBytesAndCanBeTurnedOff) {
  for (uint64_t bytes : {uint64_t{0}, uint64_t{2'000}}) {
    RuntimeOptions options;
    options.command_fold_cache_bytes = bytes;
    ReopenWithCount(options);
    // 50 tags, each executed twice: the second finds the first's state when it is kept.
    for (int round = 0; round < 2; ++round) {
      for (int t = 0; t < 50; ++t) {
        auto outcome =
            runtime_->Execute("count", Input({{"tag", fmt::format("tag{}-{}", bytes, t)}}));
        ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
        EXPECT_EQ(outcome->event_data[0].as_record().at("count").as_int(), round);
      }
    }
    FoldCacheStats stats = runtime_->FoldCache();
    EXPECT_LE(stats.bytes, bytes) << "cache of " << bytes << " bytes";
    if (bytes == 0) {
      EXPECT_EQ(stats.hits, 0u);
      EXPECT_EQ(stats.entries, 0u);
    } else {
      EXPECT_LT(stats.entries, 50u) << "2,000 bytes cannot hold 50 states";
      EXPECT_GT(stats.entries, 0u);
    }
  }
}

}  // namespace
}  // namespace reef::apps

namespace reef::apps {
namespace {

using namespace reef::apps::testing;

// Two commands uploaded with the same bytes have their own env, so their own folds: the cache
// must never hand one the other's state (found by the review of issue 15's first steps).
TEST_F(ModuleRuntimeTest, TheFoldCacheKeepsCommandsWithTheSameBytesApart) {
  Upload(ModuleKind::kCommand, "light", "1.0.0", "test_weighted_fold");
  Upload(ModuleKind::kCommand, "heavy", "1.0.0", "test_weighted_fold");
  ASSERT_TRUE(runtime_->SetEnv(ModuleKind::kCommand, "light", "WEIGHT", "1").ok());
  ASSERT_TRUE(runtime_->SetEnv(ModuleKind::kCommand, "heavy", "WEIGHT", "10").ok());
  for (int i = 0; i < 5; ++i) {
    std::vector<events::Event> batch{MakeEvent("E", {"t"}, "{}")};
    ASSERT_TRUE(events_->Append(std::move(batch), std::nullopt).ok());
  }
  for (int round = 0; round < 2; ++round) {  // the second round runs from the cache
    auto light = runtime_->Execute("light", Input({{"tag", "t"}}));
    auto heavy = runtime_->Execute("heavy", Input({{"tag", "t"}}));
    ASSERT_TRUE(light.ok() && heavy.ok());
    EXPECT_EQ(light->message, "wsum=5") << "round " << round;
    EXPECT_EQ(heavy->message, "wsum=50") << "round " << round;
  }
}

TEST(KeyedTurnsTest, TakersOfOneKeyGoInOrderWithoutWaitingAndOtherKeysGoAtOnce) {
  detail::KeyedTurns turns;
  std::vector<std::string> ran;
  EXPECT_TRUE(turns.Take("a", [&] { ran.push_back("unused"); })) << "a free key is held at once";
  EXPECT_FALSE(turns.Take("a", [&] { ran.push_back("a2"); }));  // queued behind the holder
  EXPECT_FALSE(turns.Take("a", [&] { ran.push_back("a3"); }));
  EXPECT_TRUE(turns.Take("b", [&] { ran.push_back("unused"); })) << "another key is free";
  EXPECT_TRUE(ran.empty()) << "nothing runs while the holders hold";
  EXPECT_EQ(turns.held(), 2u);
  turns.Release("a");  // the first holder ends: a2 goes
  EXPECT_EQ(ran, (std::vector<std::string>{"a2"}));
  turns.Release("b");
  turns.Release("a");  // a3 goes
  EXPECT_EQ(ran, (std::vector<std::string>{"a2", "a3"}));
  turns.Release("a");
  EXPECT_EQ(turns.held(), 0u) << "no entry is left once nobody holds or awaits a key";
  EXPECT_TRUE(turns.Take("a", [] {})) << "and the key is free again";
  turns.Release("a");
}

TEST(FoldCacheTest, AFoldThatRanAcrossAClearIsNotKept) {
  detail::FoldCache cache(1 << 20);
  detail::FoldCache::Key key{};
  key[0] = 1;
  const uint64_t before = cache.epoch();  // a fold starts reading
  cache.Clear();                          // a crypto scope is shredded meanwhile
  cache.Put(key, "count", Value::Int(7), 10, before);
  EXPECT_FALSE(cache.Find(key).has_value()) << "kept a state folded from shredded data";
  cache.Put(key, "count", Value::Int(7), 10, cache.epoch());
  ASSERT_TRUE(cache.Find(key).has_value());
  EXPECT_EQ(cache.Find(key)->state, Value::Int(7));
}

TEST(FoldCacheTest, TheBoundCountsStatesAsTheySitInMemory) {
  List items;
  for (int i = 0; i < 500; ++i) items.push_back(Value::Int(i));
  const Value list = Value::ListOf(std::move(items));
  // 500 ints are ~1.5 KB of CBOR but 500 Values in memory.
  EXPECT_GE(detail::FoldCache::ValueBytes(list), 500 * sizeof(Value));
  detail::FoldCache cache(200 * 1024);
  for (uint8_t k = 0; k < 100; ++k) {
    detail::FoldCache::Key key{};
    key[0] = k;
    cache.Put(key, "big", list, 1, cache.epoch());
  }
  EXPECT_LE(cache.stats().bytes, 200u * 1024);
  EXPECT_LT(cache.stats().entries, 100u) << "the bound let every list in";
}

}  // namespace
}  // namespace reef::apps
