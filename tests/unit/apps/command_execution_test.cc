// Command executions of ModuleRuntime with the real test_command guest and a real event store:
// read, fold, decide and append under the DCB condition, conflicts and turns, one execution
// per idempotency key (also concurrently and across a lost record), determinism, failures.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <barrier>
#include <fstream>
#include <future>
#include <optional>
#include <set>
#include <thread>

#include "actor/runtime.h"
#include "apps/module_runtime.h"
#include "apps/runners.h"
#include "core/mutex.h"
#include "module_runtime_test_support.h"

namespace reef::apps {
namespace {

using namespace reef::apps::testing;

// ---- Commands ------------------------------------------------------------------------------

TEST_F(ModuleRuntimeTest, CommandReadsFoldsDecidesAndAppendsWithItsTags) {
  Upload(ModuleKind::kCommand, "count", "1.0.0", "test_command");
  for (int i = 0; i < 3; ++i) {
    auto outcome = runtime_->Execute("count", Input({{"tag", "t1"}}));
    ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
    ASSERT_EQ(outcome->kind, CommandOutcome::Kind::kAppended);
    ASSERT_EQ(outcome->events.size(), 1u);
    EXPECT_EQ(outcome->events[0].event.type, "Counted");
    EXPECT_EQ(outcome->events[0].event.tags, std::vector<std::string>{"t1"});
    EXPECT_EQ(outcome->event_data[0].as_record().at("count").as_int(), i);
  }
  auto rejected = runtime_->Execute("count", Input({{"tag", "t1"}, {"expect", 7}}));
  ASSERT_TRUE(rejected.ok());
  EXPECT_EQ(rejected->kind, CommandOutcome::Kind::kRejected);
  EXPECT_EQ(rejected->message, "expected 7 events, found 3");
  EXPECT_EQ(events_->Head(), 3u);
  auto missing = runtime_->Execute("nope", Input(json::object()));
  EXPECT_EQ(missing.status().code(), Code::kNotFound);
}

TEST_F(ModuleRuntimeTest, ConcurrentCommandsRetryConflictsAndNeverDecideOnStaleState) {
  RuntimeOptions options;
  options.command_max_retries = 1000;
  ReopenWithCount(options);
  constexpr int kThreads = 8;
  constexpr int kEach = 15;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  std::atomic<bool> done{false};
  // Direct appends to the same tag race the commands (a bounded number: every command folds
  // them all): the commands' conditions must catch them.
  std::thread noise([&] {
    for (int i = 0; i < 60 && !done; ++i) {
      if (!events_->Append({MakeEvent("Noise", {"shared"}, "{}")}, std::nullopt).ok()) ++failures;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) {
        auto outcome = runtime_->Execute("count", Input({{"tag", "shared"}}));
        if (!outcome.ok() || outcome->kind != CommandOutcome::Kind::kAppended) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  done = true;
  noise.join();
  EXPECT_EQ(failures, 0);
  // Every Counted saw exactly the events before it, Noise included.
  auto read = events_->Read({}, {});
  ASSERT_TRUE(read.ok());
  int counted = 0;
  for (size_t i = 0; i < read->events.size(); ++i) {
    if (read->events[i].event.type != "Counted") continue;
    ++counted;
    json data = json::parse(read->events[i].event.data);
    EXPECT_EQ(data["count"], i) << "event " << i + 1;
  }
  EXPECT_EQ(counted, kThreads * kEach);
}

TEST_F(ModuleRuntimeTest, CommandsWithTheSameQueryTakeTurnsInsteadOfConflicting) {
  RuntimeOptions options;
  options.command_max_retries = 0;  // any conflict would fail an execution
  ReopenWithCount(options);
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10; ++i) {
        auto outcome = runtime_->Execute("count", Input({{"tag", "hot"}}));
        if (!outcome.ok() || outcome->attempts != 1) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(events_->Head(), 160u);
}

TEST_F(ModuleRuntimeTest, WaitingExecutionsHoldNoThreadOnOneReactorAndOneIoThread) {
  // 200 executions on one query, started at once from one thread, on a fleet of one reactor
  // and one I/O thread: each waits for its turn without holding either, so all of them end,
  // in turn, with no conflict (a blocking design would need a thread per waiting execution).
  RuntimeOptions options = OneReactorOneIoThread();
  options.command_max_retries = 0;
  ReopenWithCount(options);
  constexpr int kExecutions = 200;
  std::atomic<int> ended{0};
  std::atomic<int> failures{0};
  for (int i = 0; i < kExecutions; ++i) {
    runtime_->ExecuteAsync("count", Input({{"tag", "hot"}}), {},
                           [&](Result<CommandOutcome> outcome) {
                             if (!outcome.ok() || outcome->attempts != 1) ++failures;
                             ++ended;
                           });
  }
  ASSERT_TRUE(WaitFor([&] { return ended.load() == kExecutions; }));
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(events_->Head(), static_cast<uint64_t>(kExecutions));
  // Each saw every event before it: the last one counted 199.
  auto last = events_->Read({}, {.from = kExecutions, .limit = 1});
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(json::parse(last->events.at(0).event.data).value("count", -1), kExecutions - 1)
      << last->events.at(0).event.data;
}

TEST_F(ModuleRuntimeTest, ExecutionsPastTheLimitAreRefusedAtOnceAndStopAnswersEveryOne) {
  RuntimeOptions options = OneReactorOneIoThread();
  options.max_executions = 3;
  ReopenWithCount(options);
  std::atomic<int> ended{0};
  std::atomic<int> refused{0};
  // Started from one thread faster than they can end: some find the limit reached.
  constexpr int kExecutions = 50;
  for (int i = 0; i < kExecutions; ++i) {
    runtime_->ExecuteAsync(
        "count", Input({{"tag", fmt::format("t{}", i)}}), {}, [&](Result<CommandOutcome> outcome) {
          if (!outcome.ok()) {
            EXPECT_EQ(outcome.status().code(), Code::kUnavailable) << outcome.status().ToString();
            ++refused;
          }
          ++ended;
        });
  }
  runtime_->Stop();  // waits for the executions in progress
  EXPECT_EQ(ended.load(), kExecutions) << "every execution was answered by the time Stop returned";
  EXPECT_GT(refused.load(), 0) << "50 executions at once never met a limit of 3";
  EXPECT_EQ(events_->Head(), static_cast<uint64_t>(kExecutions - refused.load()));
  std::optional<Status> after;
  runtime_->ExecuteAsync("count", Input({{"tag", "late"}}), {},
                         [&](Result<CommandOutcome> outcome) { after = outcome.status(); });
  ASSERT_TRUE(after.has_value()) << "an execution after Stop is refused on the caller's thread";
  EXPECT_EQ(after->code(), Code::kUnavailable);
}

TEST_F(ModuleRuntimeTest, StopEndsTheExecutionsWaitingForTheirTurnBeforeTheyAppend) {
  // Given 200 executions on one query, taking turns on one reactor and one I/O thread
  RuntimeOptions options = OneReactorOneIoThread();
  ReopenWithCount(options);
  constexpr int kExecutions = 200;
  std::atomic<int> appended{0};
  std::atomic<int> stopped{0};
  for (int i = 0; i < kExecutions; ++i) {
    runtime_->ExecuteAsync(
        "count", Input({{"tag", "hot"}}), {}, [&](Result<CommandOutcome> outcome) {
          if (outcome.ok()) {
            ++appended;
          } else {
            EXPECT_EQ(outcome.status().code(), Code::kUnavailable);
            EXPECT_NE(outcome.status().message().find("stopping"), std::string::npos)
                << outcome.status().ToString();
            ++stopped;
          }
        });
  }
  // when the runtime stops while most of them still wait for their turn
  runtime_->Stop();
  // then every one was answered by then: those still waiting ended without appending
  // instead of running to their end first
  EXPECT_EQ(appended.load() + stopped.load(), kExecutions);
  EXPECT_GT(stopped.load(), 0);
  EXPECT_EQ(events_->Head(), static_cast<uint64_t>(appended.load()));
}

TEST_F(ModuleRuntimeTest, ExecutionsShareAFleetWithActorsAndItsReactorsKeepRunningThem) {
  // The fleet belongs to its creator (reef serve shares one between programs and commands):
  // executions run on it, and it outlives the module runtime.
  actor::RuntimeOptions fleet_options;
  fleet_options.mode = actor::SchedulingMode::kFreeRunning;
  fleet_options.reactors = 2;
  auto fleet = actor::Runtime::Create(fleet_options);
  ASSERT_TRUE(fleet.ok());
  std::shared_ptr<actor::Runtime> shared = std::move(*fleet);
  RuntimeOptions options;
  options.fleet = shared;
  ReopenWithCount(options);
  for (int i = 0; i < 20; ++i) {
    auto outcome = runtime_->Execute("count", Input({{"tag", fmt::format("t{}", i % 3)}}));
    ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  }
  EXPECT_EQ(events_->Head(), 20u);
  uint64_t tasks = 0;  // each execution's guest calls ran as tasks on the fleet
  for (const actor::ReactorInfo& r : shared->Reactors()) tasks += r.tasks_run;
  EXPECT_GE(tasks, 20u * 2) << "an attempt and a fold for each of 20 executions";
  Close();
  // The fleet still runs work after the module runtime is gone.
  std::promise<void> ran;
  ASSERT_TRUE(shared->Post(1, [&ran] { ran.set_value(); }).ok());
  EXPECT_EQ(ran.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready);
}

TEST_F(ModuleRuntimeTest, NoExecutionOfADeactivatedCommandAppendsAfterTheDeactivateAnswers) {
  // Executions race a deactivate: those in flight may finish first, but once Deactivate has
  // answered the store gets no more of the command's events, and every later execution is
  // told the command is not active (a cached version must not outlive the change).
  Upload(ModuleKind::kCommand, "count", "1.0.0", "test_command");
  constexpr int kThreads = 8;
  std::atomic<bool> deactivated{false};
  std::atomic<int> unexpected{0};
  std::atomic<int> appended_after{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (std::chrono::steady_clock::now() < give_up) {
        const bool started_after = deactivated.load();
        auto outcome = runtime_->Execute("count", Input({{"tag", fmt::format("t{}", t)}}));
        if (!outcome.ok() && outcome.status().code() == Code::kNotFound) return;
        if (!outcome.ok()) {
          ++unexpected;
          ADD_FAILURE() << outcome.status().ToString();
          return;
        }
        if (started_after) ++appended_after;
      }
      ++unexpected;  // never told the command is gone
    });
  }
  while (events_->Head() < 40) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(runtime_->Deactivate(ModuleKind::kCommand, "count").ok());
  const events::Position head = events_->Head();
  deactivated = true;
  for (auto& t : threads) t.join();
  EXPECT_EQ(unexpected, 0);
  EXPECT_EQ(appended_after, 0);
  EXPECT_EQ(events_->Head(), head) << "events appended after the deactivate answered";
}

TEST_F(ModuleRuntimeTest, ExecutionsWaitingForTheirTurnDoNotFoldForAVersionThatWasDeactivated) {
  // Given 100 executions on one query (they take turns from read to append) and a deactivate
  // while they wait: each one whose turn comes after the change is answered "not active"
  // without folding. A full fold per waiting execution for a version that can no longer
  // append took minutes on a long history and left clients without an answer.
  Upload(ModuleKind::kCommand, "count", "1.0.0", "test_command");
  constexpr int kExecutions = 100;
  Mutex mu;
  CondVar all_done;
  int done = 0, appended = 0, not_active = 0;
  std::vector<std::string> other;
  for (int i = 0; i < kExecutions; ++i) {
    runtime_->ExecuteAsync("count", Input({{"tag", "hot"}}), {},
                           [&](Result<CommandOutcome> outcome) {
                             MutexLock lock(mu);
                             if (outcome.ok()) {
                               ++appended;
                             } else if (outcome.status().code() == Code::kNotFound) {
                               ++not_active;
                             } else {
                               other.push_back(outcome.status().ToString());
                             }
                             if (++done == kExecutions) all_done.NotifyAll();
                           });
  }
  while (events_->Head() < 5) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(runtime_->Deactivate(ModuleKind::kCommand, "count").ok());
  {
    MutexLock lock(mu);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (done < kExecutions) {
      if (all_done.WaitUntil(mu, deadline) == std::cv_status::timeout) break;
    }
    ASSERT_EQ(done, kExecutions) << "executions left without an answer";
    EXPECT_TRUE(other.empty()) << other.front();
    EXPECT_GT(not_active, 0);
    // Then folds: one per execution that appended, plus at most the one folding when the
    // change came (it finds the change before it appends).
    FoldCacheStats folds = runtime_->FoldCache();
    EXPECT_LE(folds.hits + folds.misses, static_cast<uint64_t>(appended) + 1)
        << appended << " appended, " << not_active << " not active";
  }
}

TEST_F(ModuleRuntimeTest, ConcurrentExecutionsWithOneIdempotencyKeyExecuteOnce) {
  // Given 20 keys, each sent twice at the same moment (the issue's double deposit).
  Upload(ModuleKind::kCommand, "count", "1.0.0", "test_command");
  constexpr int kKeys = 20;
  std::vector<Result<CommandOutcome>> outcomes(2 * kKeys, Status::Internal("unset"));
  std::vector<std::thread> threads;
  std::barrier start(2 * kKeys);
  for (int i = 0; i < 2 * kKeys; ++i) {
    threads.emplace_back([&, i] {
      ExecuteOptions options{.idempotency_key = fmt::format("deposit-{}", i / 2)};
      start.arrive_and_wait();
      outcomes[i] = runtime_->Execute("count", Input({{"tag", "account:1"}}), options);
    });
  }
  for (auto& t : threads) t.join();
  // Then each key appended once; its duplicate waited and replayed the same answer.
  EXPECT_EQ(events_->Head(), static_cast<uint64_t>(kKeys));
  std::set<events::EventId> ids;
  for (int k = 0; k < kKeys; ++k) {
    auto& a = outcomes[2 * k];
    auto& b = outcomes[2 * k + 1];
    ASSERT_TRUE(a.ok() && b.ok()) << a.status().ToString() << " / " << b.status().ToString();
    EXPECT_EQ(a->position, b->position) << "key " << k;
    EXPECT_NE(a->replayed, b->replayed) << "key " << k << ": exactly one is the replay";
    EXPECT_EQ(a->events.at(0).event.id, b->events.at(0).event.id);
    ids.insert(a->events.at(0).event.id);
  }
  EXPECT_EQ(ids.size(), static_cast<size_t>(kKeys));
}

TEST_F(ModuleRuntimeTest, AnExecutionWhoseRecordWasLostIsFoundByItsEventIds) {
  // Given an execution whose events were appended but whose idempotency record was never
  // written (the process stopped in between: simulated by deleting the record).
  Upload(ModuleKind::kCommand, "count", "1.0.0", "test_command");
  ExecuteOptions options{.idempotency_key = "req-crash"};
  auto first = runtime_->Execute("count", Input({{"tag", "t"}}), options);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  Close();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir_.path() / "reef.sqlite").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "DELETE FROM command_results", nullptr, nullptr, nullptr), SQLITE_OK);
  EXPECT_EQ(sqlite3_changes(db), 1);
  sqlite3_close(db);
  Open();
  // When the same key is sent again, then it replays the stored events instead of deciding
  // again, and its record is written this time.
  auto again = runtime_->Execute("count", Input({{"tag", "t"}}), options);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(again->replayed);
  EXPECT_EQ(again->position, first->position);
  EXPECT_EQ(again->events.at(0).event.id, first->events.at(0).event.id);
  EXPECT_EQ(again->event_data.at(0), first->event_data.at(0));
  EXPECT_EQ(events_->Head(), 1u);
  EXPECT_EQ(SqliteRows(dir_.path() / "reef.sqlite", "SELECT count(*) AS n FROM command_results"),
            json::parse(R"([{"n":1}])"));
}

TEST_F(ModuleRuntimeTest, AnEventAppendedUnderAKeysDerivedIdIsNeverTakenForItsReplay) {
  // Given the event id that Idempotency-Key "victim" of command "count" derives (learnt from
  // one execution in a store that is then thrown away) ...
  Upload(ModuleKind::kCommand, "count", "1.0.0", "test_command");
  ExecuteOptions options{.idempotency_key = "victim"};
  auto learnt = runtime_->Execute("count", Input({{"tag", "t"}}), options);
  ASSERT_TRUE(learnt.ok()) << learnt.status().ToString();
  const events::EventId derived = learnt->events.at(0).event.id;
  Close();
  std::filesystem::remove_all(dir_.path());
  std::filesystem::create_directories(dir_.path());
  Open();
  Upload(ModuleKind::kCommand, "count", "1.0.0", "test_command");
  // ... and a client that appended an unrelated event with that id to a fresh store:
  events::Event foreign = MakeEvent("Unrelated", {"x:y"}, R"({"hello":1})");
  foreign.id = derived;
  ASSERT_TRUE(events_->Append({foreign}, std::nullopt).ok());
  // When the command runs with that key, then it is not answered with the foreign event as a
  // replay: it fails naming the key and the position, appends nothing and records nothing.
  auto executed = runtime_->Execute("count", Input({{"tag", "t"}}), options);
  ASSERT_FALSE(executed.ok());
  EXPECT_EQ(executed.status().code(), Code::kDuplicateEventId);
  EXPECT_NE(executed.status().message().find("'victim'"), std::string::npos)
      << executed.status().message();
  EXPECT_NE(executed.status().message().find("position 1"), std::string::npos)
      << executed.status().message();
  EXPECT_EQ(events_->Head(), 1u);
  EXPECT_EQ(SqliteRows(dir_.path() / "reef.sqlite", "SELECT count(*) AS n FROM command_results"),
            json::parse(R"([{"n":0}])"));
  // Another key still executes.
  auto other = runtime_->Execute("count", Input({{"tag", "t"}}), {.idempotency_key = "other"});
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  EXPECT_FALSE(other->replayed);
}

TEST_F(ModuleRuntimeTest, ACommandsStatusErrorHoldsItsLastFailure) {
  Upload(ModuleKind::kCommand, "count", "1.0.0", "test_command");
  EXPECT_EQ(runtime_->StatusOf(ModuleKind::kCommand, "count")->error, "");
  // When an execution fails (the module traps on input without "tag")...
  ASSERT_FALSE(runtime_->Execute("count", Input(json::object())).ok());
  // then the status names that failure, and a later success does not erase it.
  ASSERT_TRUE(runtime_->Execute("count", Input({{"tag", "t"}})).ok());
  auto status = runtime_->StatusOf(ModuleKind::kCommand, "count");
  EXPECT_EQ(status->failures, 1u);
  EXPECT_NE(status->error.find("input needs a string \"tag\""), std::string::npos) << status->error;
}

TEST_F(ModuleRuntimeTest, ALongFailReasonIsCutVisiblyNeverSilently) {
  Upload(ModuleKind::kCommand, "count", "1.0.0", "test_command");
  auto failed = runtime_->Execute("count", Input({{"fail_with", std::string(2000, 'r')}}));
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find(std::string(1024, 'r') + " [cut: 2000 bytes in all]"),
            std::string::npos)
      << failed.status().message().size();
}

TEST_F(ModuleRuntimeTest, IdempotencyKeyAnswersARepeatWithTheFirstOutcome) {
  Upload(ModuleKind::kCommand, "count", "1.0.0", "test_command");
  ExecuteOptions options{.idempotency_key = "req-1"};
  auto first = runtime_->Execute("count", Input({{"tag", "t"}}), options);
  ASSERT_TRUE(first.ok());
  auto again = runtime_->Execute("count", Input({{"tag", "t"}}), options);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->replayed);
  EXPECT_EQ(again->position, first->position);
  EXPECT_EQ(again->events.at(0).event.id, first->events.at(0).event.id);
  EXPECT_EQ(events_->Head(), 1u);  // appended once
  // Survives a restart (the record is in reef.sqlite).
  Close();
  Open();
  auto after = runtime_->Execute("count", Input({{"tag", "t"}}), options);
  ASSERT_TRUE(after.ok());
  EXPECT_TRUE(after->replayed);
  EXPECT_EQ(events_->Head(), 1u);
}

TEST_F(ModuleRuntimeTest, IdempotencyRecordsKeepNoCopyOfShreddableData) {
  Upload(ModuleKind::kCommand, "count", "1.0.0", "test_command");
  ExecuteOptions options{.idempotency_key = "open-1"};
  json input = {{"tag", "user:2"}, {"secret", "grace@example.com"}, {"scope", "user:2"}};
  auto first = runtime_->Execute("count", Input(input), options);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->event_data[0].as_record().at("secret").as_string(), "grace@example.com");
  ASSERT_TRUE(runtime_->ShredScope("user:2").ok());
  auto replay = runtime_->Execute("count", Input(input), options);
  ASSERT_TRUE(replay.ok());
  EXPECT_TRUE(replay->replayed);
  EXPECT_TRUE(replay->event_data[0].is_null());  // read back from the store: shredded
  EXPECT_EQ(replay->events[0].event.id, first->events[0].event.id);
  Close();
  json rows = SqliteRows(dir_.path() / "reef.sqlite", "SELECT response FROM command_results");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["response"].get<std::string>().find("grace"), std::string::npos);
  Open();
}

TEST_F(ModuleRuntimeTest, CommandSandboxIsDeterministicPerIdempotencyKey) {
  // The same key in two fresh data directories gives the same ids, clock-independent random
  // bytes and causation ids.
  Upload(ModuleKind::kCommand, "count", "1.0.0", "test_command");
  ExecuteOptions options{.idempotency_key = "same", .correlation_id = "corr-7"};
  auto a = runtime_->Execute("count", Input({{"tag", "t"}}), options);
  ASSERT_TRUE(a.ok());
  TempDir other;
  auto store_b = events::OpenEventStore(other.path() / "events");
  ASSERT_TRUE(store_b.ok());
  RuntimeOptions options_b;
  options_b.data_dir = other.path();
  auto runtime_b = ModuleRuntime::Open(**store_b, options_b);
  ASSERT_TRUE(runtime_b.ok());
  auto bytes = GuestBytes("test_command");
  ASSERT_TRUE((*runtime_b)->Upload(ModuleKind::kCommand, "count", "1.0.0", bytes, true).ok());
  auto b = (*runtime_b)->Execute("count", Input({{"tag", "t"}}), options);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(a->events[0].event.id, b->events[0].event.id);
  EXPECT_EQ(a->execution_id, b->execution_id);
  EXPECT_EQ(a->event_data[0].as_record().at("random"), b->event_data[0].as_record().at("random"));
  EXPECT_EQ(a->events[0].event.metadata.correlation_id, "corr-7");
  EXPECT_EQ(a->events[0].event.metadata.causation_id, a->execution_id);
  // The module's clock is the request time, not a constant.
  int64_t now = a->event_data[0].as_record().at("now").as_int();
  EXPECT_NEAR(static_cast<double>(now),
              static_cast<double>(a->events[0].event.metadata.timestamp_ms), 0);
}

}  // namespace
}  // namespace reef::apps
