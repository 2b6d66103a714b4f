// The PostgreSQL event store's own behaviour, against a real cluster (the tests every backend
// passes are AnyStoreTest): the read barrier with a stalled writer, two stores (two Reef
// processes' worth) on one database, connections killed under appends, schema versions, and
// the errors a user meets.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <future>
#include <map>
#include <set>
#include <thread>

#include "event_store_test_support.h"
#include "events/event_store.h"
#include "events/pg/pg_core.h"
#include "pg/pg.h"
#include "support/pg_test_database.h"

namespace reef::events {
namespace {

using namespace std::chrono_literals;
using reef::testing::PgTestDatabase;
using testing::FailIf;
using testing::Item;
using testing::MakeEvent;
using testing::PositionsOf;
using testing::QueryOf;

std::unique_ptr<EventStore> Open(const PgTestDatabase& db, PostgresEventStoreOptions options = {}) {
  auto opened = OpenPostgresEventStore(db.conninfo(), options);
  EXPECT_TRUE(opened.ok()) << opened.status().ToString();
  return opened.ok() ? std::move(*opened) : nullptr;
}

std::unique_ptr<pg::Connection> Connect(const PgTestDatabase& db) {
  auto conn = pg::Connection::Open({db.conninfo()});
  EXPECT_TRUE(conn.ok()) << conn.status().ToString();
  return conn.ok() ? std::move(*conn) : nullptr;
}

// An append made by hand inside a transaction left open: it draws its position and holds the
// read barrier until `conn` commits (reef_append, as the store calls it).
void BeginStalledAppend(pg::Connection& conn) {
  ASSERT_TRUE(conn.ExecScript("BEGIN", "begin").ok());
  auto drawn = conn.Exec(fmt::format(
      "SELECT reef_append(ARRAY[gen_random_uuid()], ARRAY['Stalled'], ARRAY['s']::text[], "
      "ARRAY[1], ARRAY['\\x00'::bytea], ARRAY[1]::bigint[], ARRAY[''], ARRAY[''], ARRAY[''], "
      "ARRAY[''], ARRAY[]::bigint[], ARRAY[]::boolean[], {}, NULL, NULL, NULL, NULL, NULL)",
      pg_store::kBarrierKey));
  ASSERT_TRUE(drawn.ok()) << drawn.status().ToString();
}

TEST(PgEventStoreTest, AStalledWriterHoldsSubscribersBackAndNoEventIsSkipped) {
  PgTestDatabase db;
  PostgresEventStoreOptions options;
  options.read_barrier_timeout = 300ms;
  auto store = Open(db, options);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Append({MakeEvent("A")}).ok());  // position 1
  auto sub = store->Subscribe(Query{}, 0);
  ASSERT_TRUE(sub.ok());
  auto first = (*sub)->Next(10, 2s);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(PositionsOf(*first), (std::vector<Position>{1}));
  // Given a writer that drew position 2 and stalls before committing,
  auto stalled = Connect(db);
  ASSERT_NE(stalled, nullptr);
  BeginStalledAppend(*stalled);
  // when later appends commit (positions 3..7),
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(store->Append({MakeEvent("B")}).ok());
  // then the subscriber waits rather than hand out 3..7 ahead of 2,
  auto waiting = (*sub)->Next(10, 500ms);
  ASSERT_TRUE(waiting.ok());
  EXPECT_TRUE(waiting->empty());
  // and a read, which needs a settled head for its decision, says it could not get one.
  auto read = store->Read(Query{});
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), Code::kUnavailable);
  EXPECT_NE(read.status().message().find("could not settle"), std::string::npos);
  // Once the writer commits, every event arrives in position order, none skipped.
  ASSERT_TRUE(stalled->ExecScript("COMMIT", "commit").ok());
  std::vector<SequencedEvent> got;
  for (int i = 0; i < 50 && got.size() < 6; ++i) {
    auto next = (*sub)->Next(10, 200ms);
    ASSERT_TRUE(next.ok());
    got.insert(got.end(), next->begin(), next->end());
  }
  ASSERT_EQ(PositionsOf(got), (std::vector<Position>{2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(got[0].event.type, "Stalled");
  auto after = store->Read(Query{});
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->events.size(), 7u);
  EXPECT_EQ(after->head, 7u);
}

TEST(PgEventStoreTest, AStalledWriterThatRollsBackLeavesAGapThatReadersStepOver) {
  PgTestDatabase db;
  auto store = Open(db);
  ASSERT_NE(store, nullptr);
  auto stalled = Connect(db);
  BeginStalledAppend(*stalled);                       // draws position 1
  ASSERT_TRUE(store->Append({MakeEvent("B")}).ok());  // position 2
  auto sub = store->Subscribe(Query{}, 0);
  ASSERT_TRUE(sub.ok());
  ASSERT_TRUE((*sub)->Next(10, 200ms)->empty());
  ASSERT_TRUE(stalled->ExecScript("ROLLBACK", "rollback").ok());
  std::vector<SequencedEvent> got;
  for (int i = 0; i < 50 && got.empty(); ++i) got = *(*sub)->Next(10, 200ms);
  EXPECT_EQ(PositionsOf(got), (std::vector<Position>{2}));
}

TEST(PgEventStoreTest, TwoStoresOnOneDatabaseKeepConditionsAndSeeEachOthersAppends) {
  PgTestDatabase db;
  // Polling every minute: what the other store appends must arrive through NOTIFY.
  PostgresEventStoreOptions options;
  options.poll_interval = 60s;
  auto a = Open(db, options);
  auto b = Open(db, options);
  ASSERT_TRUE(a && b);
  auto sub = b->Subscribe(QueryOf({Item({}, {"from-a"})}), 0);
  ASSERT_TRUE(sub.ok());
  ASSERT_TRUE((*sub)->Next(1, 10ms).ok());
  const auto sent = std::chrono::steady_clock::now();
  ASSERT_TRUE(a->Append({MakeEvent("Hello", {"from-a"})}).ok());
  auto got = (*sub)->Next(1, 5s);
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->size(), 1u);
  EXPECT_LT(std::chrono::steady_clock::now() - sent, 2s);

  // Writers on both stores deciding on one account: each decision's condition holds across
  // the stores, so exactly one of each round's competing appends wins.
  Query account = QueryOf({Item({"Deposited"}, {"account:1"})});
  int wins = 0;
  for (int round = 0; round < 30; ++round) {
    Position head = a->Read(account)->head;
    Result<Position> results[2] = {Status::Internal("unset"), Status::Internal("unset")};
    std::thread ta([&] {
      results[0] = a->Append({MakeEvent("Deposited", {"account:1"})}, FailIf(account, head));
    });
    std::thread tb([&] {
      results[1] = b->Append({MakeEvent("Deposited", {"account:1"})}, FailIf(account, head));
    });
    ta.join();
    tb.join();
    EXPECT_NE(results[0].ok(), results[1].ok()) << round;
    const auto& lost = results[0].ok() ? results[1] : results[0];
    EXPECT_EQ(lost.status().code(), Code::kConflict) << round;
    wins += results[0].ok() + results[1].ok();
  }
  EXPECT_EQ(wins, 30);
  EXPECT_EQ(b->Read(account)->events.size(), 30u);
}

TEST(PgEventStoreTest, ConnectionsKilledUnderAppendsLoseAndDuplicateNothing) {
  PgTestDatabase db;
  auto store = Open(db);
  ASSERT_NE(store, nullptr);
  auto killer_conn = Connect(db);
  std::atomic<bool> done{false};
  std::atomic<int> kills{0};
  // Every 50 ms (a fresh connection's first append takes ~15 ms: a server process starting).
  std::thread killer([&] {
    while (!done.load()) {
      auto killed = killer_conn->Exec(
          "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = "
          "current_database() AND pid <> pg_backend_pid() AND application_name = 'reef'");
      if (killed.ok()) kills += static_cast<int>(*killed->Int(0, 0));
      std::this_thread::sleep_for(50ms);
    }
  });
  std::mutex mu;
  std::map<EventId, Position> acknowledged;
  std::atomic<int> failed{0}, attempted{0};
  std::vector<std::thread> writers;
  // Up to 150 appends each, for at most 6 s (about 120 rounds of kills, under a sanitizer too).
  const auto deadline = std::chrono::steady_clock::now() + 6s;
  for (int w = 0; w < 4; ++w) {
    writers.emplace_back([&, w] {
      for (int i = 0; i < 150 && std::chrono::steady_clock::now() < deadline; ++i) {
        attempted.fetch_add(1);
        Event e = MakeEvent("Paid", {"writer:" + std::to_string(w)});
        e.id = *NewEventId();
        auto appended = store->Append({e});
        if (!appended.ok()) {
          EXPECT_EQ(appended.status().code(), Code::kUnavailable) << appended.status().ToString();
          failed.fetch_add(1);
          continue;
        }
        std::lock_guard lock(mu);
        acknowledged.emplace(e.id, *appended);
      }
    });
  }
  for (auto& t : writers) t.join();
  done = true;
  killer.join();
  EXPECT_GT(kills.load(), 0);
  // Every acknowledged append is stored once, at the position it was acknowledged with, and
  // nothing else is: an append whose connection died was either finished or not committed.
  auto all = store->Read(Query{});
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  std::set<EventId> seen;
  for (const SequencedEvent& e : all->events) {
    EXPECT_TRUE(seen.insert(e.event.id).second);
    auto it = acknowledged.find(e.event.id);
    ASSERT_NE(it, acknowledged.end()) << "stored but not acknowledged: " << e.position;
    EXPECT_EQ(it->second, e.position);
  }
  EXPECT_EQ(seen.size(), acknowledged.size());
  EXPECT_GT(acknowledged.size(), 0u);
  EXPECT_EQ(acknowledged.size() + static_cast<size_t>(failed), static_cast<size_t>(attempted));
}

// Runs scripts/pg_cluster.sh `command` on `state`; its output.
std::string Cluster(const std::string& command, const std::string& state) {
  std::string line =
      fmt::format("bash '{}' {} '{}' tuned 2>&1", REEF_PG_CLUSTER_SCRIPT, command, state);
  std::string out;
  if (FILE* pipe = popen(line.c_str(), "r")) {
    char buffer[512];
    while (fgets(buffer, sizeof buffer, pipe) != nullptr) out += buffer;
    EXPECT_EQ(pclose(pipe), 0) << command << ": " << out;
  }
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

TEST(PgEventStoreTest, WhileTheDatabaseIsDownAppendsAreUnavailableAndNothingIsLost) {
  // A cluster of this test's own, stopped and started again under the store.
  const std::string state =
      std::string(REEF_PG_TEST_STATE_DIR) + "-restart-" + std::to_string(getpid());
  const std::string conninfo = Cluster("start", state);
  PostgresEventStoreOptions options;
  options.acquire_timeout = 1s;
  options.read_barrier_timeout = 1s;
  auto opened = OpenPostgresEventStore(conninfo, options);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  auto& store = *opened;
  auto sub = store->Subscribe(Query{}, 0);
  ASSERT_TRUE(sub.ok());
  ASSERT_TRUE(store->Append({MakeEvent("Before")}).ok());

  Cluster("halt", state);
  const auto down = std::chrono::steady_clock::now();
  auto refused = store->Append({MakeEvent("During")});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Code::kUnavailable) << refused.status().ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - down, 10s);
  auto unread = store->Read(Query{});
  ASSERT_FALSE(unread.ok());
  EXPECT_EQ(unread.status().code(), Code::kUnavailable);
  auto waiting = (*sub)->Next(10, 300ms);  // the subscriber waits rather than fail
  ASSERT_TRUE(waiting.ok()) << waiting.status().ToString();

  Cluster("start", state);
  Result<Position> after = Status::Internal("unset");
  for (int i = 0; i < 100; ++i) {
    after = store->Append({MakeEvent("After")});
    if (after.ok()) break;
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  std::vector<std::string> types;
  for (const SequencedEvent& e : *waiting) types.push_back(e.event.type);
  for (int i = 0; i < 50 && types.size() < 2; ++i) {
    auto next = (*sub)->Next(10, 200ms);
    ASSERT_TRUE(next.ok()) << next.status().ToString();
    for (const SequencedEvent& e : *next) types.push_back(e.event.type);
  }
  // The append refused while the database was down was not stored (its outcome was known).
  EXPECT_EQ(types, (std::vector<std::string>{"Before", "After"}));
  auto all = store->Read(Query{});
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(all->events.size(), 2u);
  EXPECT_GT(store->Stats().connect_failures, 0u);
  store.reset();
  Cluster("stop", state);
}

TEST(PgEventStoreTest, LargeAppendsGoThroughCopyUnderTheSameRules) {
  PgTestDatabase db;
  PostgresEventStoreOptions options;
  options.copy_events = 2;  // three events or more: COPY
  auto store = Open(db, options);
  ASSERT_NE(store, nullptr);
  std::vector<Event> three = {MakeEvent("Opened", {"account:1"}),
                              MakeEvent("Deposited", {"account:1", "big"}),
                              MakeEvent("Deposited", {"account:2"})};
  for (Event& e : three) {
    e.id = *NewEventId();
    e.metadata.timestamp_ms = 1'796'000'000'000;
  }
  three[1].metadata.correlation_id = "req-1";
  three[1].data = std::string("\0\xff binary", 9);
  Query account1 = QueryOf({Item({}, {"account:1"})});
  auto first = store->Append(three, FailIf(account1, 0));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(*first, 3u);
  // Stored in order, every field kept, found by tags.
  auto read = store->Read(account1);
  ASSERT_TRUE(read.ok());
  ASSERT_EQ(PositionsOf(read->events), (std::vector<Position>{1, 2}));
  EXPECT_EQ(read->events[1].event, three[1]);
  EXPECT_EQ(store->Read(QueryOf({Item({"Deposited"}, {"big"})}))->events.size(), 1u);
  // The same append again is a retry; the condition stands against a later one.
  EXPECT_EQ(*store->Append(three, FailIf(account1, 0)), 3u);
  std::vector<Event> more = {MakeEvent("Deposited", {"account:1"}), MakeEvent("X"), MakeEvent("Y")};
  auto conflict = store->Append(more, FailIf(account1, 1));
  ASSERT_FALSE(conflict.ok());
  EXPECT_EQ(conflict.status().code(), Code::kConflict);
  // A reused id among new ones is refused whole.
  std::vector<Event> reused = {MakeEvent("A"), MakeEvent("B"), three[0]};
  EXPECT_EQ(store->Append(reused).status().code(), Code::kDuplicateEventId);
  EXPECT_EQ(store->Read(Query{})->events.size(), 3u);
  // And an unconditional large append after them.
  auto next = store->Append(more);
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_EQ(store->Read(Query{})->events.size(), 6u);
}

// Events with ids and timestamps of their own, so that sending them again is a retry.
std::vector<Event> WithIds(std::vector<Event> events) {
  for (Event& e : events) {
    e.id = *NewEventId();
    e.metadata.timestamp_ms = 1'796'000'000'000;
  }
  return events;
}

// The number of transactions that wrote the events at `positions`.
int64_t TransactionsOf(const PgTestDatabase& db, const std::vector<Position>& positions) {
  auto conn = Connect(db);
  std::string list;
  for (Position p : positions) list += (list.empty() ? "" : ",") + std::to_string(p);
  auto n = conn->Exec(
      fmt::format("SELECT count(DISTINCT xid) FROM reef_events WHERE position IN ({})", list));
  EXPECT_TRUE(n.ok()) << n.status().ToString();
  return n.ok() ? *n->Int(0, 0) : -1;
}

// Waits (up to `timeout`) until a statement starting with `sql` waits for a lock in `db`.
bool WaitForLockWaiter(const PgTestDatabase& db, const std::string& sql,
                       std::chrono::milliseconds timeout = 10s) {
  auto conn = Connect(db);
  pg::Params p;
  p.Text(sql + "%");
  for (auto until = std::chrono::steady_clock::now() + timeout;
       std::chrono::steady_clock::now() < until;) {
    auto n = conn->Exec(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND "
        "wait_event_type = 'Lock' AND query LIKE $1",
        p);
    if (n.ok() && *n->Int(0, 0) > 0) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

TEST(PgEventStoreTest, GroupedAppendsKeepEachOnesConditionAnswerAndRetry) {
  PgTestDatabase db;
  PostgresEventStoreOptions options;
  options.group_transactions = 1;
  options.group_lock_timeout = 10s;
  auto store = Open(db, options);
  ASSERT_NE(store, nullptr);
  // Given a session holding the store-wide key (every append takes it shared), the first
  // append runs as a group of one (reef_append_one) and waits; the next three queue up behind
  // it.
  auto holder = Connect(db);
  ASSERT_TRUE(holder->ExecScript("BEGIN", "begin").ok());
  ASSERT_TRUE(
      holder->Exec(fmt::format("SELECT pg_advisory_xact_lock({})", pg_store::kStoreLockKey)).ok());
  std::vector<Event> first = WithIds({MakeEvent("First")});
  std::vector<Event> one = WithIds({MakeEvent("Reserved", {"seat:1"})});
  std::vector<Event> two = WithIds({MakeEvent("Reserved", {"seat:1"})});
  std::vector<Event> pair =
      WithIds({MakeEvent("Opened", {"account:1"}), MakeEvent("Deposited", {"account:1"})});
  Query seat1 = QueryOf({Item({"Reserved"}, {"seat:1"})});
  Result<Position> first_at = Status::Internal("not run"), one_at = first_at, two_at = first_at,
                   pair_at = first_at;
  std::thread t0([&] { first_at = store->Append(first); });
  EXPECT_TRUE(WaitForLockWaiter(db, "SELECT reef_append_one"));
  std::thread t1([&] { one_at = store->Append(one, FailIf(seat1, 0)); });
  std::thread t2([&] { two_at = store->Append(two, FailIf(seat1, 0)); });
  std::thread t3(
      [&] { pair_at = store->Append(pair, FailIf(QueryOf({Item({}, {"account:1"})}), 0)); });
  std::this_thread::sleep_for(500ms);
  ASSERT_TRUE(holder->ExecScript("COMMIT", "commit").ok());
  for (std::thread* t : {&t0, &t1, &t2, &t3}) t->join();
  // Then of the two reservations of one seat exactly one is written, the other's condition
  // names it; the pair is written at adjacent positions,
  ASSERT_TRUE(first_at.ok()) << first_at.status().ToString();
  ASSERT_TRUE(pair_at.ok()) << pair_at.status().ToString();
  ASSERT_NE(one_at.ok(), two_at.ok()) << one_at.status().ToString() << two_at.status().ToString();
  const Result<Position>& won = one_at.ok() ? one_at : two_at;
  const Result<Position>& lost = one_at.ok() ? two_at : one_at;
  const std::vector<Event>& winner = one_at.ok() ? one : two;
  EXPECT_EQ(lost.status().code(), Code::kConflict);
  EXPECT_NE(lost.status().message().find(fmt::format("event {} matches", *won)), std::string::npos)
      << lost.status().ToString();
  auto read = store->Read(Query{});
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(PositionsOf(read->events), (std::vector<Position>{1, 2, 3, 4}));
  // all in one transaction after the first's (the group),
  EXPECT_EQ(TransactionsOf(db, {*won, *pair_at - 1, *pair_at}), 1);
  EXPECT_EQ(TransactionsOf(db, {*first_at, *won}), 2);
  // and each append is still an append of its own: sent again it is a retry, while a part of
  // one, or two of them sent as one, reuse ids.
  EXPECT_EQ(*store->Append(pair, FailIf(QueryOf({Item({}, {"account:1"})}), 0)), *pair_at);
  EXPECT_EQ(*store->Append(winner, FailIf(seat1, 0)), *won);
  EXPECT_EQ(store->Append({pair[0]}).status().code(), Code::kDuplicateEventId);
  std::vector<Event> both = winner;
  both.insert(both.end(), pair.begin(), pair.end());
  EXPECT_EQ(store->Append(both).status().code(), Code::kDuplicateEventId);
  EXPECT_EQ(store->Read(Query{})->events.size(), 4u);
  auto stats = store->Stats();
  EXPECT_EQ(stats.appends, 3u);
  EXPECT_EQ(stats.conflicts, 1u);
}

TEST(PgEventStoreTest, ALockHeldElsewhereDelaysOnlyTheAppendsThatNeedIt) {
  PgTestDatabase db;
  PostgresEventStoreOptions options;
  options.group_transactions = 1;   // one group at a time: a waiting group would hold up all
  options.group_lock_timeout = 1s;  // long enough to be seen waiting
  auto store = Open(db, options);
  ASSERT_NE(store, nullptr);
  // Given another session holding the lock of (Reserved, seat:9),
  auto holder = Connect(db);
  ASSERT_TRUE(holder->ExecScript("BEGIN", "begin").ok());
  ASSERT_TRUE(holder
                  ->Exec(fmt::format("SELECT pg_advisory_xact_lock({})",
                                     pg_store::PairKey("Reserved", "seat:9", 'P')))
                  .ok());
  // an append that needs it waits: first as a group of one (with the group's lock timeout),
  // then (after 1 s) alone,
  std::atomic<bool> reserved{false};
  Result<Position> reserve = Status::Internal("not run");
  std::thread waiting([&] {
    reserve = store->Append(WithIds({MakeEvent("Reserved", {"seat:9"})}));
    reserved = true;
  });
  EXPECT_TRUE(WaitForLockWaiter(db, "SELECT reef_append_one"));
  EXPECT_TRUE(WaitForLockWaiter(db, "SELECT reef_append("));
  // while one that does not is written meanwhile (the group slot is free again).
  auto other = std::async(std::launch::async, [&] {
    return store->Append(WithIds({MakeEvent("Opened", {"account:1"})}));
  });
  const bool in_time = other.wait_for(10s) == std::future_status::ready;
  EXPECT_TRUE(in_time) << "an unrelated append waited for the held lock";
  EXPECT_FALSE(reserved.load());
  // And the first is written once the lock is let go.
  ASSERT_TRUE(holder->ExecScript("COMMIT", "commit").ok());
  waiting.join();
  auto other_at = other.get();
  ASSERT_TRUE(other_at.ok()) << other_at.status().ToString();
  ASSERT_TRUE(reserve.ok()) << reserve.status().ToString();
  auto read = store->Read(Query{});
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read->events.size(), 2u);
  EXPECT_EQ(read->events.back().event.type, "Reserved");
}

TEST(PgEventStoreTest, AStoreFromSchemaVersion1IsMigratedAndItsAppendsStillRetry) {
  PgTestDatabase db;
  // Given a database an earlier Reef wrote (schema version 1; an append of two events),
  auto conn = Connect(db);
  ASSERT_TRUE(
      pg::Migrate(*conn, "events", "event store", pg_store::EventSchemaMigrations().first(1)).ok());
  std::vector<Event> old = WithIds({MakeEvent("Opened", {"account:1"}, "{\"a\":1}"),
                                    MakeEvent("Deposited", {"account:1"}, "{\"b\":2}")});
  auto appended = conn->Exec(fmt::format(
      "SELECT reef_append(ARRAY['{}','{}']::uuid[], ARRAY['Opened','Deposited'], "
      "ARRAY['account:1','account:1'], ARRAY[1,2], ARRAY['{{\"a\":1}}','{{\"b\":2}}']::bytea[], "
      "ARRAY[{},{}]::bigint[], ARRAY['',''], ARRAY['',''], ARRAY['',''], ARRAY['',''], "
      "ARRAY[]::bigint[], ARRAY[]::boolean[], {}, NULL, NULL, NULL, NULL, NULL)",
      FormatEventId(old[0].id), FormatEventId(old[1].id), old[0].metadata.timestamp_ms,
      old[1].metadata.timestamp_ms, pg_store::kBarrierKey));
  ASSERT_TRUE(appended.ok()) << appended.status().ToString();
  // when this Reef opens it, the schema moves to the latest version,
  auto store = Open(db);
  ASSERT_NE(store, nullptr);
  auto version = conn->Exec("SELECT version FROM reef_schema WHERE component = 'events'");
  ASSERT_TRUE(version.ok());
  EXPECT_EQ(*version->Int(0, 0), static_cast<int64_t>(pg_store::EventSchemaMigrations().size()));
  // the old append read back whole and, sent again, is a retry; a part of it is not.
  auto read = store->Read(Query{});
  ASSERT_TRUE(read.ok());
  ASSERT_EQ(read->events.size(), 2u);
  EXPECT_EQ(read->events[1].event, old[1]);
  EXPECT_EQ(*store->Append(old), 2u);
  EXPECT_EQ(store->Append({old[1]}).status().code(), Code::kDuplicateEventId);
  // New appends take their conditions into account.
  Query account1 = QueryOf({Item({}, {"account:1"})});
  EXPECT_EQ(store->Append(WithIds({MakeEvent("Closed", {"account:1"})}), FailIf(account1, 1))
                .status()
                .code(),
            Code::kConflict);
  // (Positions after 2: the refused retries above drew some and rolled back, leaving gaps.)
  auto closed = store->Append(WithIds({MakeEvent("Closed", {"account:1"})}), FailIf(account1, 2));
  ASSERT_TRUE(closed.ok()) << closed.status().ToString();
  auto after = store->Read(account1);
  ASSERT_TRUE(after.ok());
  ASSERT_EQ(after->events.size(), 3u);
  EXPECT_EQ(after->events[2].position, *closed);
}

TEST(PgEventStoreTest, ASchemaFromANewerReefIsRefusedNamingTheVersions) {
  PgTestDatabase db;
  ASSERT_NE(Open(db), nullptr);
  db.Exec("UPDATE reef_schema SET version = 99 WHERE component = 'events'");
  auto opened = OpenPostgresEventStore(db.conninfo());
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), Code::kDataLoss);
  EXPECT_NE(opened.status().message().find("version 99"), std::string::npos);
}

TEST(PgEventStoreTest, AnUnreachableDatabaseIsUnavailableAndThePasswordIsNotRepeated) {
  auto opened = OpenPostgresEventStore(
      "postgresql://reef:hunter2@/nowhere?host=/nonexistent-socket-dir&connect_timeout=2");
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), Code::kUnavailable);
  EXPECT_NE(opened.status().message().find("cannot connect to PostgreSQL"), std::string::npos);
  EXPECT_EQ(opened.status().message().find("hunter2"), std::string::npos);
  EXPECT_EQ(pg::RedactConninfo("postgresql://reef:hunter2@db:5432/reef?sslmode=require"),
            "postgresql://reef@db:5432/reef?sslmode=require");
  EXPECT_EQ(pg::RedactConninfo("host=db password=hunter2 dbname=reef"),
            "host=db password=*** dbname=reef");
}

TEST(PgEventStoreTest, TextPostgresCannotHoldIsRefusedBeforeAnythingIsWritten) {
  PgTestDatabase db;
  auto store = Open(db);
  ASSERT_NE(store, nullptr);
  auto appended = store->Append({MakeEvent("A", {std::string("bad\0tag", 7)})});
  ASSERT_FALSE(appended.ok());
  EXPECT_EQ(appended.status().code(), Code::kInvalidArgument);
  EXPECT_NE(appended.status().message().find("U+0000"), std::string::npos);
  EXPECT_EQ(store->Read(Query{})->events.size(), 0u);
}

TEST(PgEventStoreTest, ABigAppendTakesTheStoreWideLockAndStillChecksItsCondition) {
  PgTestDatabase db;
  PostgresEventStoreOptions options;
  options.max_lock_keys = 4;
  auto store = Open(db, options);
  ASSERT_NE(store, nullptr);
  std::vector<Event> many;
  for (int i = 0; i < 100; ++i) many.push_back(MakeEvent("Row", {"k:" + std::to_string(i)}));
  Query q = QueryOf({Item({"Row"}, {"k:7"})});
  ASSERT_TRUE(store->Append(many, FailIf(q, 0)).ok());
  auto again = store->Append({MakeEvent("Row", {"k:7"})}, FailIf(q, 0));
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), Code::kConflict);
  EXPECT_EQ(store->Read(q)->events.size(), 1u);
}

TEST(PgEventStoreTest, ALoneAppendWaitsForItsLastKeyAndThenForTheBarrierWithoutTheShortTimeout) {
  PgTestDatabase db;
  PostgresEventStoreOptions options;
  options.group_lock_timeout = 2s;
  auto store = Open(db, options);
  ASSERT_NE(store, nullptr);
  // Given one session holding the largest of the append's keys (so that the keys before it are
  // taken at once and only the rest waited for) and another the read barrier,
  const int64_t last =
      std::max({pg_store::PairKey("Reserved", {}, 'T'), pg_store::PairKey({}, "seat:9", 'G'),
                pg_store::PairKey("Reserved", "seat:9", 'P'), pg_store::kStoreLockKey});
  auto key_holder = Connect(db);
  auto barrier_holder = Connect(db);
  for (auto [holder, key] : {std::pair{key_holder.get(), last},
                             std::pair{barrier_holder.get(), pg_store::kBarrierKey}}) {
    ASSERT_TRUE(holder->ExecScript("BEGIN", "begin").ok());
    ASSERT_TRUE(holder->Exec(fmt::format("SELECT pg_advisory_xact_lock({})", key)).ok());
  }
  // the append waits for that key,
  auto reserve = std::async(std::launch::async, [&] {
    return store->Append(WithIds({MakeEvent("Reserved", {"seat:9"})}));
  });
  EXPECT_TRUE(WaitForLockWaiter(db, "SELECT reef_append_one"));
  // then, once it has it, for the barrier: past the short lock timeout, still in the same call
  // (never sent again alone),
  ASSERT_TRUE(key_holder->ExecScript("COMMIT", "commit").ok());
  std::this_thread::sleep_for(options.group_lock_timeout + 1s);
  EXPECT_FALSE(WaitForLockWaiter(db, "SELECT reef_append(", 50ms));
  EXPECT_TRUE(WaitForLockWaiter(db, "SELECT reef_append_one"));
  EXPECT_EQ(reserve.wait_for(0s), std::future_status::timeout);
  // and is written once the barrier is free.
  ASSERT_TRUE(barrier_holder->ExecScript("COMMIT", "commit").ok());
  auto at = reserve.get();
  ASSERT_TRUE(at.ok()) << at.status().ToString();
  EXPECT_EQ(store->Read(Query{})->events.size(), 1u);
}

}  // namespace
}  // namespace reef::events
