// ModuleRuntime with real guest modules (tests/modules, examples/bank), a real event store and
// real SQLite databases in a temporary directory: the lifecycle (rolling upgrade, replay,
// deactivate/reactivate), projector exactly-once (also across SIGKILL), effect watermark,
// backoff and partition order, crypto-shredding and the bank example. Commands are in
// command_execution_test.cc.
#include "apps/module_runtime.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <thread>

#include "apps/runners.h"
#include "module_runtime_test_support.h"

namespace reef::apps {
namespace {

using namespace reef::apps::testing;

// The runtime's series as GET /metrics renders them.
std::string RenderedModuleMetrics(ModuleRuntime& runtime) {
  MetricFamilies families;
  runtime.CollectMetrics(families);
  Result<std::string> text = RenderPrometheusText(families);
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  return text.ok() ? *text : std::string();
}

// ---- Projectors ----------------------------------------------------------------------------

TEST_F(ModuleRuntimeTest, ProjectorSeesEveryEventOnceAndResumesAfterRestart) {
  AppendTicks(300);
  Upload(ModuleKind::kProjector, "ticks", "1.0.0", "test_projector_v1");
  ASSERT_TRUE(WaitFor([&] { return Position(ModuleKind::kProjector, "ticks") == 300; }));
  Close();
  Open();
  AppendTicks(50, 300);
  ASSERT_TRUE(WaitFor([&] { return Position(ModuleKind::kProjector, "ticks") == 350; }));
  json rows = Ticks();
  ASSERT_EQ(rows.size(), 350u);
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i]["position"], i + 1);
    EXPECT_EQ(rows[i]["n"], i);
  }
}

TEST_F(ModuleRuntimeTest, RollingUpgradeResumesAtTheOldVersionsPosition) {
  Upload(ModuleKind::kProjector, "ticks", "1.0.0", "test_projector_v1");
  AppendTicks(100);
  ASSERT_TRUE(WaitFor([&] { return Position(ModuleKind::kProjector, "ticks") == 100; }));
  Upload(ModuleKind::kProjector, "ticks", "2.0.0", "test_projector_v2", /*activate=*/false);
  ASSERT_TRUE(runtime_->Activate(ModuleKind::kProjector, "ticks", "2.0.0").ok());
  AppendTicks(100, 100);
  ASSERT_TRUE(WaitFor([&] { return Position(ModuleKind::kProjector, "ticks") == 200; }));
  json rows = Ticks();
  ASSERT_EQ(rows.size(), 200u);  // nothing projected twice, nothing skipped
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i]["position"], i + 1);
    EXPECT_EQ(rows[i]["version"], i < 100 ? 1 : 2) << "position " << i + 1;
  }
  auto status = runtime_->StatusOf(ModuleKind::kProjector, "ticks");
  ASSERT_TRUE(status);
  EXPECT_EQ(status->version, "2.0.0");
  EXPECT_EQ(status->restarts, 1u);
}

TEST_F(ModuleRuntimeTest, ARollingUpgradeIsNotAnOutageAndCountersNeverGoBack) {
  // Given a running projector and a second version, and a scraper reading the statuses the
  // way /metrics does, as fast as it can.
  Upload(ModuleKind::kProjector, "ticks", "1.0.0", "test_projector_v1");
  Upload(ModuleKind::kProjector, "ticks", "2.0.0", "test_projector_v2", /*activate=*/false);
  AppendTicks(10);
  ASSERT_TRUE(WaitFor([&] { return Position(ModuleKind::kProjector, "ticks") == 10; }));
  std::atomic<bool> stop{false};
  std::atomic<int> samples{0};
  std::vector<std::string> violations;
  std::thread scraper([&] {
    std::map<std::string, std::pair<uint64_t, uint64_t>> seen;  // version -> failures, restarts
    while (!stop) {
      for (const ModuleStatus& s : runtime_->Statuses(ModuleKind::kProjector)) {
        if (!s.up) violations.push_back(fmt::format("{} down in state {}", s.version, s.state));
        auto& [failures, restarts] = seen[s.version];
        if (s.failures < failures || s.restarts < restarts) {
          violations.push_back(fmt::format("{} counters went back", s.version));
        }
        failures = s.failures;
        restarts = s.restarts;
        ++samples;
      }
    }
  });
  // When it is upgraded and rolled back six times...
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(
        runtime_->Activate(ModuleKind::kProjector, "ticks", i % 2 ? "1.0.0" : "2.0.0").ok());
  }
  stop = true;
  scraper.join();
  // then no status ever showed it down, and no counter of a label set went back.
  EXPECT_GT(samples.load(), 0);
  EXPECT_TRUE(violations.empty()) << violations.size() << " violations, first: " << violations[0];
  EXPECT_EQ(runtime_->StatusOf(ModuleKind::kProjector, "ticks")->restarts, 6u);
}

TEST_F(ModuleRuntimeTest, ModulesReadAnEventsApplicationMetadata) {
  Upload(ModuleKind::kProjector, "ticks", "1.0.0", "test_projector_v1");
  events::Event tick = MakeEvent("Tick", {"tick"});
  tick.metadata.user = R"({"n":42,"minutesAgo":5})";
  ASSERT_TRUE(events_->Append({tick}, std::nullopt).ok());
  ASSERT_TRUE(WaitFor([&] { return Position(ModuleKind::kProjector, "ticks") == 1; }));
  EXPECT_EQ(Ticks(), json::parse(R"([{"position":1,"version":1,"n":42}])"));
}

TEST_F(ModuleRuntimeTest, ReplayRebuildsTheReadModelFromPositionZero) {
  Upload(ModuleKind::kProjector, "ticks", "1.0.0", "test_projector_v1");
  AppendTicks(80);
  ASSERT_TRUE(WaitFor([&] { return Position(ModuleKind::kProjector, "ticks") == 80; }));
  Upload(ModuleKind::kProjector, "ticks", "2.0.0", "test_projector_v2");
  ASSERT_TRUE(runtime_->Replay(ModuleKind::kProjector, "ticks").ok());
  ASSERT_TRUE(WaitFor([&] { return Position(ModuleKind::kProjector, "ticks") == 80; }));
  json rows = Ticks();
  ASSERT_EQ(rows.size(), 80u);
  for (const json& row : rows) EXPECT_EQ(row["version"], 2);  // all rebuilt by the new version
}

TEST_F(ModuleRuntimeTest, DeactivateKeepsStateAndReactivateResumes) {
  Upload(ModuleKind::kProjector, "ticks", "1.0.0", "test_projector_v1");
  AppendTicks(40);
  ASSERT_TRUE(WaitFor([&] { return Position(ModuleKind::kProjector, "ticks") == 40; }));
  ASSERT_TRUE(runtime_->Deactivate(ModuleKind::kProjector, "ticks").ok());
  EXPECT_FALSE(runtime_->StatusOf(ModuleKind::kProjector, "ticks").has_value());
  AppendTicks(40, 40);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(Ticks().size(), 40u);  // stopped: nothing projected
  ASSERT_TRUE(runtime_->Activate(ModuleKind::kProjector, "ticks", "1.0.0").ok());
  ASSERT_TRUE(WaitFor([&] { return Position(ModuleKind::kProjector, "ticks") == 80; }));
  EXPECT_EQ(Ticks().size(), 80u);
}

TEST_F(ModuleRuntimeTest, AFailingProjectorStopsWithItsErrorAndKeepsEarlierEvents) {
  Upload(ModuleKind::kProjector, "ticks", "1.0.0", "test_projector_v1");
  AppendTicks(5);
  ASSERT_TRUE(events_->Append({MakeEvent("Poison", {}, "{}")}, std::nullopt).ok());
  AppendTicks(5, 5);
  ASSERT_TRUE(WaitFor([&] {
    auto s = runtime_->StatusOf(ModuleKind::kProjector, "ticks");
    return s && s->state == "failed";
  }));
  auto status = runtime_->StatusOf(ModuleKind::kProjector, "ticks");
  EXPECT_FALSE(status->up);
  EXPECT_EQ(status->position, 5u);
  EXPECT_NE(status->error.find("position 6"), std::string::npos) << status->error;
  EXPECT_NE(status->error.find("reef_project returned 7"), std::string::npos) << status->error;
  EXPECT_EQ(Ticks().size(), 5u);  // the Poison handler's insert was rolled back
  std::string metrics = RenderedModuleMetrics(*runtime_);
  EXPECT_NE(metrics.find("reef_module_up{kind=\"projector\",name=\"ticks\",version=\"1.0.0\"} 0"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("reef_module_lag_positions{kind=\"projector\",name=\"ticks\","
                         "version=\"1.0.0\"} 6"),
            std::string::npos)
      << metrics;
}

TEST_F(ModuleRuntimeTest, ProjectorSqlCannotTouchTransactionsOrTheHostsTables) {
  for (const char* sql :
       {"COMMIT", "UPDATE reef_projector SET position = 0", "ROLLBACK", "SAVEPOINT x",
        "ATTACH DATABASE '/tmp/x.sqlite' AS x", "PRAGMA synchronous = OFF",
        "DROP TABLE reef_projector", "ALTER TABLE reef_projector RENAME TO hijacked",
        "CREATE INDEX meddle ON reef_projector(position)",
        "CREATE TRIGGER meddle AFTER UPDATE ON reef_projector BEGIN "
        "SELECT 1; END"}) {
    SCOPED_TRACE(sql);
    Close();
    std::filesystem::remove_all(dir_.path());
    std::filesystem::create_directories(dir_.path());
    Open();
    Upload(ModuleKind::kProjector, "ticks", "1.0.0", "test_projector_v1");
    AppendTicks(3);
    ASSERT_TRUE(
        events_->Append({MakeEvent("Meddle", {}, json{{"sql", sql}}.dump())}, std::nullopt).ok());
    ASSERT_TRUE(WaitFor([&] {
      auto s = runtime_->StatusOf(ModuleKind::kProjector, "ticks");
      return s && s->state == "failed";
    }));
    auto status = runtime_->StatusOf(ModuleKind::kProjector, "ticks");
    EXPECT_EQ(status->position, 3u);
    EXPECT_NE(status->error.find("not authorized"), std::string::npos) << status->error;
    EXPECT_EQ(Ticks().size(), 3u);
  }
}

// A child process projects while another thread appends; it is SIGKILLed at a random moment.
// After each restart the read model holds every event up to the stored position exactly once.
TEST_F(ModuleRuntimeTest, ProjectorIsExactlyOnceAcrossSigkill) {
  Upload(ModuleKind::kProjector, "ticks", "1.0.0", "test_projector_v1");
  Close();
  std::mt19937 rng(42);
  for (int round = 0; round < 6; ++round) {
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      auto store = events::OpenEventStore(dir_.path() / "events");
      if (!store.ok()) _exit(2);
      RuntimeOptions options;
      options.data_dir = dir_.path();
      options.projector_batch_events = 64;
      auto runtime = ModuleRuntime::Open(**store, options);
      if (!runtime.ok()) _exit(3);
      while (true) {
        std::vector<events::Event> batch;
        for (int j = 0; j < 20; ++j) batch.push_back(MakeEvent("Tick", {"tick"}, "{\"n\":1}"));
        if (!(*store)->Append(std::move(batch), std::nullopt).ok()) _exit(4);
        std::this_thread::sleep_for(std::chrono::microseconds(300));
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(150 + rng() % 250));
    ::kill(child, SIGKILL);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status)) << "child exited with " << WEXITSTATUS(status);
    auto db = dir_.path() / "projectors" / "ticks.sqlite";
    json stored = SqliteRows(db, "SELECT position FROM reef_projector");
    json counts = SqliteRows(db,
                             "SELECT count(*) AS n, count(DISTINCT position) AS d, "
                             "coalesce(max(position), 0) AS m FROM ticks");
    ASSERT_EQ(counts.size(), 1u);
    uint64_t position = stored.empty() ? 0 : stored[0]["position"].get<uint64_t>();
    EXPECT_EQ(counts[0]["n"], counts[0]["d"]) << "round " << round << ": an event projected twice";
    EXPECT_EQ(counts[0]["n"].get<uint64_t>(), position) << "round " << round;
    EXPECT_EQ(counts[0]["m"].get<uint64_t>(), position) << "round " << round;
  }
  Open();
  uint64_t head = events_->Head();
  // Catching up on ~100 k events takes seconds, more on a loaded machine (it timed out at 20 s
  // twice while sanitizer builds ran beside the tests): waits as long as it makes progress.
  uint64_t seen = Position(ModuleKind::kProjector, "ticks");
  while (!WaitFor([&] { return Position(ModuleKind::kProjector, "ticks") == head; })) {
    uint64_t now = Position(ModuleKind::kProjector, "ticks");
    ASSERT_GT(now, seen) << "the projector made no progress in 20 s (at " << now << " of " << head
                         << ")";
    seen = now;
  }
  json counts = SqliteRows(dir_.path() / "projectors" / "ticks.sqlite",
                           "SELECT count(*) AS n, count(DISTINCT position) AS d, min(position) AS "
                           "lo, max(position) AS hi FROM ticks");
  ASSERT_EQ(counts.size(), 1u);
  EXPECT_EQ(counts[0]["n"].get<uint64_t>(), head);  // every event once
  EXPECT_EQ(counts[0]["d"].get<uint64_t>(), head);
  EXPECT_EQ(counts[0]["lo"], 1);
  EXPECT_EQ(counts[0]["hi"].get<uint64_t>(), head);
}

// ---- Effects -------------------------------------------------------------------------------

json Attempts(const std::filesystem::path& dir) {
  return SqliteRows(dir / "effects" / "jobs.sqlite",
                    "SELECT position, key, at_ms FROM attempts ORDER BY rowid");
}

TEST_F(ModuleRuntimeTest, EffectRetriesAFailingEventWithGrowingDelaysThenProgresses) {
  Upload(ModuleKind::kEffect, "jobs", "1.0.0", "test_effect");
  ASSERT_TRUE(events_
                  ->Append({MakeEvent("Job", {}, "{\"key\":\"k\",\"fail_times\":4}"),
                            MakeEvent("Job", {}, "{\"key\":\"k\"}"), MakeEvent("Job", {}, "{}")},
                           std::nullopt)
                  .ok());
  ASSERT_TRUE(WaitFor([&] { return Position(ModuleKind::kEffect, "jobs") == 3; }));
  json attempts = Attempts(dir_.path());
  std::vector<int64_t> first;
  std::vector<uint64_t> order_k;
  for (const json& a : attempts) {
    if (a["position"] == 1) first.push_back(a["at_ms"].get<int64_t>());
    if (a["key"] == "k") order_k.push_back(a["position"].get<uint64_t>());
  }
  ASSERT_EQ(first.size(), 5u);  // four failures, then the success
  // Delays of 40, 80, 160, 320 ms (backoff_initial 40 ms, doubling).
  for (size_t i = 1; i < first.size(); ++i) {
    int64_t expected = 40 << (i - 1);
    EXPECT_GE(first[i] - first[i - 1], expected - 5) << "retry " << i;
  }
  // (Against the smaller of the first two delays: the guest's clock is the wall clock, which a
  // VM may step forward once between two attempts.)
  EXPECT_GT(first[4] - first[3], std::min(first[1] - first[0], first[2] - first[1]) * 3 / 2)
      << "delays did not grow";
  // Within the key, position 2 waited for position 1.
  EXPECT_EQ(order_k, (std::vector<uint64_t>{1, 1, 1, 1, 1, 2}));
  auto status = runtime_->StatusOf(ModuleKind::kEffect, "jobs");
  ASSERT_TRUE(status);
  EXPECT_EQ(status->failures, 4u);
  EXPECT_EQ(status->backoff_seconds, 0);  // reset after progress
  EXPECT_TRUE(status->up);
}

// The threads of this process (Linux: /proc/self/task).
size_t ThreadCount() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/task"))
    ++n;
  return n;
}

TEST_F(ModuleRuntimeTest, EffectsShareTheirWorkersIoThreads) {
  // Given one effect running (its dispatcher, its 9 workers' first events handled)
  Upload(ModuleKind::kEffect, "jobs", "1.0.0", "test_effect");
  ASSERT_TRUE(events_->Append({MakeEvent("Job", {}, "{\"key\":\"a\"}")}, std::nullopt).ok());
  ASSERT_TRUE(WaitFor([&] { return Position(ModuleKind::kEffect, "jobs") == 1; }));
  const size_t one = ThreadCount();
  // when three more effects run, with events for many keys
  for (const char* name : {"jobs2", "jobs3", "jobs4"}) {
    Upload(ModuleKind::kEffect, name, "1.0.0", "test_effect");
  }
  std::vector<events::Event> more;
  for (int i = 0; i < 32; ++i) {
    more.push_back(MakeEvent("Job", {}, "{\"key\":\"k" + std::to_string(i) + "\"}"));
  }
  ASSERT_TRUE(events_->Append(std::move(more), std::nullopt).ok());
  for (const char* name : {"jobs", "jobs2", "jobs3", "jobs4"}) {
    ASSERT_TRUE(WaitFor([&] { return Position(ModuleKind::kEffect, name) == 33; })) << name;
  }
  // then each added effect costs its dispatcher's thread, not one more per worker (it cost
  // 10 each when every worker had an I/O thread of its own)
  EXPECT_LE(ThreadCount(), one + 3) << "threads with one effect: " << one;
}

TEST_F(ModuleRuntimeTest, AnEffectWorkerThatTraps10000TimesStillDeliversAfterwards) {
  // Given no backoff, and an event whose handler traps (leaving guest stack taken) 10,000
  // times before it succeeds, then more events for the same worker.
  Close();
  RuntimeOptions options;
  options.effect_backoff_initial = std::chrono::milliseconds(0);
  options.effect_backoff_max = std::chrono::milliseconds(0);
  Open(options);
  Upload(ModuleKind::kEffect, "jobs", "1.0.0", "test_effect");
  ASSERT_TRUE(
      events_
          ->Append({MakeEvent("Job", {}, R"({"key":"k","trap_times":10000})"),
                    MakeEvent("Job", {}, R"({"key":"k"})"), MakeEvent("Job", {}, R"({"key":"k"})")},
                   std::nullopt)
          .ok());
  // Then every event is delivered: each trap left a clean instance behind.
  ASSERT_TRUE(WaitFor([&] { return Position(ModuleKind::kEffect, "jobs") == 3; },
                      std::chrono::seconds(120)))
      << Describe(ModuleKind::kEffect, "jobs");
  json attempts = SqliteRows(dir_.path() / "effects" / "jobs.sqlite",
                             "SELECT position, count(*) AS n FROM attempts GROUP BY position");
  EXPECT_EQ(attempts, json::parse(R"([{"position":1,"n":10001},{"position":2,"n":1},
                                      {"position":3,"n":1}])"));
  EXPECT_EQ(runtime_->StatusOf(ModuleKind::kEffect, "jobs")->failures, 10000u);
}

TEST(EffectPartitionTest, KeysAreSpreadByTheStandardFnv1a64) {
  // The published FNV-1a 64-bit test vectors.
  EXPECT_EQ(Fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(Fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(Fnv1a64("foobar"), 0x85944171f73967e8ull);
}

TEST_F(ModuleRuntimeTest, EffectBackoffIsVisibleWhileFailing) {
  Upload(ModuleKind::kEffect, "jobs", "1.0.0", "test_effect");
  ASSERT_TRUE(events_->Append({MakeEvent("Job", {}, "{\"fail_times\":100}")}, std::nullopt).ok());
  ASSERT_TRUE(WaitFor([&] {
    auto s = runtime_->StatusOf(ModuleKind::kEffect, "jobs");
    return s && s->backoff_seconds >= 0.16;
  }));
  auto status = runtime_->StatusOf(ModuleKind::kEffect, "jobs");
  EXPECT_EQ(status->state, "backoff");
  EXPECT_EQ(status->position, 0u);  // the watermark stays below the failing event
  EXPECT_NE(status->error.find("event at position 1"), std::string::npos) << status->error;
  EXPECT_NE(RenderedModuleMetrics(*runtime_).find(
                "reef_module_backoff_seconds{kind=\"effect\",name=\"jobs\""),
            std::string::npos);
}

TEST_F(ModuleRuntimeTest, EffectWatermarkIsPersistedAndNothingIsRedoneAfterRestart) {
  Upload(ModuleKind::kEffect, "jobs", "1.0.0", "test_effect");
  std::vector<events::Event> batch;
  for (int i = 0; i < 200; ++i) {
    batch.push_back(MakeEvent("Job", {}, fmt::format("{{\"key\":\"k{}\"}}", i % 13)));
  }
  ASSERT_TRUE(events_->Append(std::move(batch), std::nullopt).ok());
  ASSERT_TRUE(WaitFor([&] { return Position(ModuleKind::kEffect, "jobs") == 200; }));
  Close();
  json stored =
      SqliteRows(dir_.path() / "effects" / "jobs.sqlite", "SELECT watermark FROM reef_effect");
  ASSERT_EQ(stored.size(), 1u);
  EXPECT_EQ(stored[0]["watermark"], 200);
  Open();
  ASSERT_TRUE(events_->Append({MakeEvent("Job", {}, "{}")}, std::nullopt).ok());
  ASSERT_TRUE(WaitFor([&] { return Position(ModuleKind::kEffect, "jobs") == 201; }));
  json attempts = Attempts(dir_.path());
  EXPECT_EQ(attempts.size(), 201u);  // every event once: none redone after the restart
  // In order within each key.
  std::map<std::string, uint64_t> last;
  for (const json& a : attempts) {
    if (a["key"].is_null()) continue;
    auto key = a["key"].get<std::string>();
    EXPECT_GT(a["position"].get<uint64_t>(), last[key]) << key;
    last[key] = a["position"].get<uint64_t>();
  }
}

// ---- Crypto-shredding ----------------------------------------------------------------------

TEST_F(ModuleRuntimeTest, ShreddingAScopeMakesItsEventsDataNullForModules) {
  Upload(ModuleKind::kCommand, "count", "1.0.0", "test_command");
  auto secret = runtime_->Execute(
      "count", Input({{"tag", "user:1"}, {"secret", "alice@example.com"}, {"scope", "user:1"}}));
  ASSERT_TRUE(secret.ok()) << secret.status().ToString();
  // Stored encrypted: the plaintext is nowhere in the event's bytes.
  auto stored = events_->Read({}, {});
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->events[0].event.data.find("alice"), std::string::npos);
  // Readable by modules while the key lives.
  auto seen = runtime_->Execute("count", Input({{"tag", "user:1"}}));
  ASSERT_TRUE(seen.ok());
  EXPECT_EQ(seen->event_data[0].as_record().at("last_secret").as_string(), "alice@example.com");
  ASSERT_TRUE(runtime_->ShredScope("user:1").ok());
  EXPECT_EQ(runtime_->ShredScope("user:1").code(), Code::kNotFound);
  auto after = runtime_->Execute("count", Input({{"tag", "user:1"}}));
  ASSERT_TRUE(after.ok());
  EXPECT_TRUE(after->event_data[0].as_record().at("last_secret").is_null());
  EXPECT_EQ(after->event_data[0].as_record().at("count").as_int(), 2);  // the event is still there
  // A new event of the scope gets a new key and is readable again.
  ASSERT_TRUE(
      runtime_->Execute("count", Input({{"tag", "user:1"}, {"secret", "new"}, {"scope", "user:1"}}))
          .ok());
  auto latest = runtime_->Execute("count", Input({{"tag", "user:1"}}));
  ASSERT_TRUE(latest.ok());
  EXPECT_EQ(latest->event_data[0].as_record().at("last_secret").as_string(), "new");
}

TEST_F(ModuleRuntimeTest, DamagedEncryptedDataReadsAsNullInsteadOfStoppingModules) {
  Upload(ModuleKind::kCommand, "count", "1.0.0", "test_command");
  Upload(ModuleKind::kProjector, "ticks", "1.0.0", "test_projector_v1");
  // Written straight to the store (the HTTP route refuses the marker): a forged header, and a
  // well-formed header with an unknown key.
  std::string forged(KeyRing::kMarker);
  std::string unknown = forged + std::string(32, 'f') + std::string(40, '\0');
  ASSERT_TRUE(events_
                  ->Append({MakeEvent("Tick", {"t"}, forged), MakeEvent("Tick", {"t"}, unknown)},
                           std::nullopt)
                  .ok());
  AppendTicks(2);
  auto outcome = runtime_->Execute("count", Input({{"tag", "t"}}));
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_EQ(outcome->event_data[0].as_record().at("count").as_int(), 2);
  ASSERT_TRUE(WaitFor([&] { return Position(ModuleKind::kProjector, "ticks") == 4; }))
      << Describe(ModuleKind::kProjector, "ticks");
  EXPECT_EQ(Ticks().size(), 4u);  // both damaged events projected (their data null)
}

// ---- The bank example, end to end ------------------------------------------------------------

TEST_F(ModuleRuntimeTest, BankExampleProjectsBalancesAndAlertsOnLargeWithdrawals) {
  for (const char* c : {"open_account", "deposit", "withdraw"}) {
    std::string name(c);
    std::replace(name.begin(), name.end(), '_', '-');
    Upload(ModuleKind::kCommand, name, "1.0.0", std::string("bank_") + c);
  }
  Upload(ModuleKind::kProjector, "balances", "1.0.0", "bank_balances");
  Upload(ModuleKind::kEffect, "withdrawal-alert", "1.0.0", "bank_withdrawal_alert");
  ASSERT_TRUE(
      runtime_->SetEnv(ModuleKind::kEffect, "withdrawal-alert", "LARGE_AMOUNT", "500").ok());
  auto ok = [&](const char* command, const json& input) {
    auto outcome = runtime_->Execute(command, Input(input));
    ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
    ASSERT_EQ(outcome->kind, CommandOutcome::Kind::kAppended) << outcome->message;
  };
  ok("open-account", {{"account_id", "a1"}, {"owner", "Ada"}});
  ok("deposit", {{"account_id", "a1"}, {"amount", 1000}});
  ok("withdraw", {{"account_id", "a1"}, {"amount", 600}});
  ok("withdraw", {{"account_id", "a1"}, {"amount", 100}});
  auto overdraw = runtime_->Execute("withdraw", Input({{"account_id", "a1"}, {"amount", 1000}}));
  ASSERT_TRUE(overdraw.ok());
  EXPECT_EQ(overdraw->message, "insufficient funds: balance 300, withdrawal 1000");
  ASSERT_TRUE(WaitFor([&] {
    auto rows = runtime_->QueryProjector("balances", "SELECT balance FROM accounts", json::array());
    return rows.ok() && rows->size() == 1 && (*rows)[0]["balance"] == 300;
  }));
  // The effect's alert may land before or after the second withdrawal: wait for the position
  // of the last withdrawal, whichever it is.
  auto withdrawals = events_->Read({{events::QueryItem{{"MoneyWithdrawn"}, {}}}}, {});
  ASSERT_TRUE(withdrawals.ok());
  ASSERT_EQ(withdrawals->events.size(), 2u);
  uint64_t last_withdrawal = withdrawals->events.back().position;
  ASSERT_TRUE(WaitFor([&] {
    return Position(ModuleKind::kEffect, "withdrawal-alert") == last_withdrawal;
  })) << Describe(ModuleKind::kEffect, "withdrawal-alert");
  auto alerts = events_->Read({{events::QueryItem{{"LargeWithdrawalNoticed"}, {}}}}, {});
  ASSERT_TRUE(alerts.ok());
  ASSERT_EQ(alerts->events.size(), 1u);  // 600 >= 500; 100 is not
  EXPECT_EQ(json::parse(alerts->events[0].event.data)["amount"], 600);
  // Shred the account's personal data, replay: the owner is gone, the balance is not.
  ASSERT_TRUE(runtime_->ShredScope("account:a1").ok());
  ASSERT_TRUE(runtime_->Replay(ModuleKind::kProjector, "balances").ok());
  ASSERT_TRUE(WaitFor([&] { return Position(ModuleKind::kProjector, "balances") >= 4; }));
  auto rows =
      runtime_->QueryProjector("balances", "SELECT owner, balance FROM accounts", json::array());
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_TRUE((*rows)[0]["owner"].is_null());
  EXPECT_EQ((*rows)[0]["balance"], 300);
}

TEST_F(ModuleRuntimeTest, UploadRefusesBadModulesAndKeepsVersionsImmutable) {
  auto bytes = GuestBytes("test_command");
  auto wrong_kind = runtime_->Upload(ModuleKind::kProjector, "x", "1.0.0", bytes, false);
  EXPECT_EQ(wrong_kind.status().code(), Code::kInvalidArgument);
  EXPECT_NE(wrong_kind.status().message().find("missing export `reef_project`"), std::string::npos)
      << wrong_kind.status().message();
  std::vector<uint8_t> garbage = {0, 'a', 's', 'm', 9, 9};
  EXPECT_EQ(runtime_->Upload(ModuleKind::kCommand, "x", "1.0.0", garbage, false).status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(runtime_->Upload(ModuleKind::kCommand, "x", "v1", bytes, false).status().code(),
            Code::kInvalidArgument);
  auto first = runtime_->Upload(ModuleKind::kCommand, "x", "1.0.0", bytes, false);
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(first->created);
  auto same = runtime_->Upload(ModuleKind::kCommand, "x", "1.0.0", bytes, false);
  ASSERT_TRUE(same.ok());
  EXPECT_FALSE(same->created);
  auto other = GuestBytes("bank_deposit");
  EXPECT_EQ(runtime_->Upload(ModuleKind::kCommand, "x", "1.0.0", other, false).status().code(),
            Code::kAlreadyExists);
  ASSERT_TRUE(runtime_->Activate(ModuleKind::kCommand, "x", "1.0.0").ok());
  EXPECT_EQ(runtime_->DeleteVersion(ModuleKind::kCommand, "x", "1.0.0").code(),
            Code::kFailedPrecondition);
  EXPECT_EQ(runtime_->Replay(ModuleKind::kCommand, "x").code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace reef::apps
