// Programs and units (spec 003; docs/programs.md): manifest rules, deploy validation and
// atomic publication, routing (Specific, AnyOrSpawn), singleton pinning, round-robin
// replicas, idle eviction, poisoning, in-flight work on the old program, and a kept program
// redeployed on restart (drains and control operations: program_control_test.cc). Real guests
// (tests/actors/probe.c), real reactor threads.
#include "apps/program/program_runtime.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "actor/actor.h"
#include "core/base64.h"
#include "core/json.h"
#include "program_runtime_test_support.h"

namespace reef::apps::program {
namespace {

using namespace test_support;  // NOLINT: the fixture and helpers of program_runtime_test_support.h

TEST(ManifestTest, DefaultsAndEveryRuleHaveAClearAnswer) {
  json ok = {
      {"program", "p"},
      {"modules", {{"m", "m.wasm"}}},
      {"units", {{"u", {{"module", "m"}}}, {"s", {{"module", "m"}, {"placement", "singleton"}}}}}};
  auto manifest = ParseManifest(ok);
  ASSERT_TRUE(manifest.ok()) << manifest.status().ToString();
  const UnitSpec& u = manifest->units.at("u");
  EXPECT_EQ(u.placement, Placement::kReplicated);
  EXPECT_EQ(u.handler, "reef_handle");
  EXPECT_EQ(u.instance_limit, kDefaultInstanceLimit);
  EXPECT_EQ(u.inbox_capacity, kDefaultInboxCapacity);
  EXPECT_EQ(u.idle_eviction_ms, kDefaultIdleEvictionMs);
  EXPECT_TRUE(u.initial_state.is_null());
  const UnitSpec& s = manifest->units.at("s");
  EXPECT_EQ(s.instance_limit, 1u);
  EXPECT_EQ(s.idle_eviction_ms, 0u);

  auto fails = [&](json manifest_json, std::string_view needle) {
    auto parsed = ParseManifest(manifest_json);
    ASSERT_FALSE(parsed.ok()) << manifest_json.dump();
    EXPECT_NE(parsed.status().message().find(needle), std::string::npos)
        << parsed.status().message();
  };
  json bad = ok;
  bad["units"]["u"]["placment"] = "singleton";
  fails(bad, "unknown field \"placment\"");
  bad = ok;
  bad["units"]["u"]["placement"] = "everywhere";
  fails(bad, "must be \"singleton\" or \"replicated\"");
  bad = ok;
  bad["units"]["s"]["idle_eviction_ms"] = 10;
  fails(bad, "never evicted");
  bad = ok;
  bad["units"]["s"]["instance_limit"] = 2;
  fails(bad, "instance_limit must be 1..1");
  bad = ok;
  bad["units"]["u"]["instance_limit"] = 0;
  fails(bad, "instance_limit must be 1..10000");
  bad = ok;
  bad["units"]["u"]["inbox_capacity"] = -1;
  fails(bad, "whole number");
  bad = ok;
  bad["units"]["u"]["module"] = "other";
  fails(bad, "does not list");
  bad = ok;
  bad["units"]["Bad Name"] = {{"module", "m"}};
  fails(bad, "not valid");
  bad = ok;
  bad["units"] = json::object();
  fails(bad, "at least one");
  bad = ok;
  bad.erase("program");
  fails(bad, "\"program\"");
  fails(json::array(), "JSON object");
}

TEST_F(ProgramRuntimeTest, BadDeploysChangeNothing) {
  Deploy({{"c", kSingleton}});
  ASSERT_EQ(Invoke("c", R"({"op":"add","value":2})", InvokeMode::kEnqueue).failure,
            InvokeFailure::kNone);
  auto fails = [&](json body, std::string_view needle) {
    auto report = runtime_->Deploy(body);
    ASSERT_FALSE(report.ok());
    EXPECT_NE(report.status().message().find(needle), std::string::npos)
        << report.status().ToString();
  };
  json body = Body({{"c", kSingleton}});
  body["modules"]["probe"] = "not base64!";
  fails(body, "base64");
  body = Body({{"c", kSingleton}});
  body["modules"]["probe"] = Base64Encode("\0asm garbage");
  fails(body, "module probe");
  body = Body({{"c", kSingleton}});
  body["modules"].erase("probe");
  fails(body, "bytes are missing");
  body = Body({{"c", kSingleton}});
  body["modules"]["extra"] = ProbeBase64();
  fails(body, "does not list it");
  json missing_handler = kSingleton;
  missing_handler["handler"] = "handle_nothing";
  fails(Body({{"c", missing_handler}}), "handle_nothing");
  fails(json{{"manifest", 1}}, "a deploy needs");

  // Still generation 1, and the instance kept its state.
  EXPECT_EQ(runtime_->Current()->generation, 1u);
  InvokeOutcome reply = Invoke("c", R"({"op":"reply"})");
  ASSERT_EQ(reply.failure, InvokeFailure::kNone) << reply.message;
  EXPECT_EQ(reply.result, Value::Int(2));
}

TEST_F(ProgramRuntimeTest, WaitEnqueueAndTryHandOverAsTheirModesSay) {
  Deploy({{"c",
           {{"module", "probe"},
            {"placement", "singleton"},
            {"inbox_capacity", 2},
            {"initial_state", 10}}}});
  EXPECT_EQ(Invoke("nope", "{}").failure, InvokeFailure::kNotFound);
  InvokeOutcome added = Invoke("c", R"({"op":"add","value":5})");
  ASSERT_EQ(added.failure, InvokeFailure::kNone) << added.message;
  EXPECT_TRUE(added.result.is_null());  // "add" sends no reply
  EXPECT_EQ(added.instance, 1u);
  EXPECT_EQ(added.generation, 1u);
  EXPECT_EQ(Invoke("c", R"({"op":"reply"})").result, Value::Int(15));

  // Keep the one instance busy, fill its inbox (capacity 2: the spin + one queued).
  ASSERT_EQ(Invoke("c", R"({"op":"spin"})", InvokeMode::kTry).failure, InvokeFailure::kNone);
  ASSERT_EQ(Invoke("c", R"({"op":"add","value":1})", InvokeMode::kTry).failure,
            InvokeFailure::kNone);
  InvokeOutcome full = Invoke("c", R"({"op":"add","value":100})", InvokeMode::kTry);
  EXPECT_EQ(full.failure, InvokeFailure::kInboxFull) << full.message;
  InvokeOutcome no_room = Invoke("c", R"({"op":"add","value":100})", InvokeMode::kEnqueue,
                                 std::nullopt, milliseconds(50));
  EXPECT_EQ(no_room.failure, InvokeFailure::kNoRoom) << no_room.message;
  InvokeOutcome timed_out =
      Invoke("c", R"({"op":"reply"})", InvokeMode::kWait, std::nullopt, milliseconds(50));
  EXPECT_EQ(timed_out.failure, InvokeFailure::kNoRoom) << timed_out.message;

  // An enqueue waits for room: it gets in once the spin is killed.
  std::thread killer([&] {
    std::this_thread::sleep_for(milliseconds(100));
    EXPECT_TRUE(KillRunning("c", 1).ok());
  });
  InvokeOutcome waited = Invoke("c", R"({"op":"add","value":1000})", InvokeMode::kEnqueue);
  killer.join();
  EXPECT_EQ(waited.failure, InvokeFailure::kNone) << waited.message;
  // The kill poisoned the instance: back to 10, then + 1 + 1000.
  InvokeOutcome state = Invoke("c", R"({"op":"reply"})");
  EXPECT_EQ(state.result, Value::Int(1011));
  auto units = runtime_->Units();
  ASSERT_EQ(units.size(), 1u);
  EXPECT_EQ(units[0].rejected, 3u);
  EXPECT_EQ(units[0].poisoned, 1u);
}

TEST_F(ProgramRuntimeTest, SpecificReachesOnlyExistingInstances) {
  Deploy({{"r", Replicated(2)}});
  EXPECT_EQ(Invoke("r", R"({"op":"reply"})", InvokeMode::kWait, 1).failure,
            InvokeFailure::kNotFound);
  ASSERT_EQ(Invoke("r", R"({"op":"add","value":3})").failure, InvokeFailure::kNone);
  InvokeOutcome specific = Invoke("r", R"({"op":"reply"})", InvokeMode::kWait, 1);
  ASSERT_EQ(specific.failure, InvokeFailure::kNone) << specific.message;
  EXPECT_EQ(specific.instance, 1u);
  EXPECT_EQ(specific.result, Value::Int(3));
  InvokeOutcome missing = Invoke("r", R"({"op":"reply"})", InvokeMode::kWait, 2);
  EXPECT_EQ(missing.failure, InvokeFailure::kNotFound);
  EXPECT_NE(missing.message.find("no instance 2"), std::string::npos);
  EXPECT_EQ(Instances("r").size(), 1u);  // Specific never spawns
}

TEST_F(ProgramRuntimeTest, AnyOrSpawnReusesIdleInstancesAndSpawnsUpToTheLimitRoundRobin) {
  Deploy({{"r", Replicated(2)}});
  // Sequential invocations find the first instance idle every time: no second one.
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(Invoke("r", R"({"op":"add","value":1})").failure, InvokeFailure::kNone);
  }
  ASSERT_EQ(Instances("r").size(), 1u);
  // A busy instance makes the next invocation spawn, on the other reactor.
  ASSERT_EQ(Invoke("r", R"({"op":"spin"})", InvokeMode::kEnqueue).instance, 1u);
  InvokeOutcome second = Invoke("r", R"({"op":"spin"})", InvokeMode::kEnqueue);
  EXPECT_EQ(second.instance, 2u);
  auto instances = Instances("r");
  ASSERT_EQ(instances.size(), 2u);
  EXPECT_NE(instances[0].reactor, instances[1].reactor);
  // Both busy and at the limit: queued on one of them, no third instance.
  InvokeOutcome third = Invoke("r", R"({"op":"add","value":1})", InvokeMode::kEnqueue);
  EXPECT_EQ(third.failure, InvokeFailure::kNone);
  EXPECT_TRUE(third.instance == 1u || third.instance == 2u);
  EXPECT_EQ(Instances("r").size(), 2u);
  EXPECT_TRUE(KillRunning("r", 1).ok());
  EXPECT_TRUE(KillRunning("r", 2).ok());
}

TEST_F(ProgramRuntimeTest, SingletonIsPinnedToOneReactorAndNeverEvicted) {
  Deploy({{"c", kSingleton}, {"r", Replicated(4, 256, /*idle_ms=*/50)}});
  std::set<uint32_t> reactors;
  for (int i = 0; i < 50; ++i) {
    InvokeOutcome out = Invoke("c", R"({"op":"add","value":1})");
    ASSERT_EQ(out.failure, InvokeFailure::kNone) << out.message;
    EXPECT_EQ(out.instance, 1u);
    reactors.insert(Instances("c").at(0).reactor);
  }
  EXPECT_EQ(reactors.size(), 1u);
  ASSERT_EQ(Invoke("r", R"({"op":"add","value":1})").failure, InvokeFailure::kNone);
  // Well past the replicated unit's idle time: it is gone, the singleton stays.
  EXPECT_TRUE(WaitForInstances("r", 0, milliseconds(5'000)));
  std::this_thread::sleep_for(milliseconds(200));
  ASSERT_EQ(Instances("c").size(), 1u);
  EXPECT_EQ(Invoke("c", R"({"op":"reply"})").result, Value::Int(50));
  auto units = runtime_->Units();
  for (const UnitInfo& unit : units) {
    EXPECT_EQ(unit.evicted, unit.spec.name == "r" ? 1u : 0u) << unit.spec.name;
  }
}

TEST_F(ProgramRuntimeTest, EvictionWaitsForIdleTimeAndForBusyInstances) {
  Deploy({{"r", Replicated(2, 256, /*idle_ms=*/300)}});
  ASSERT_EQ(Invoke("r", R"({"op":"spin"})", InvokeMode::kEnqueue).failure, InvokeFailure::kNone);
  std::this_thread::sleep_for(milliseconds(600));
  ASSERT_EQ(Instances("r").size(), 1u);  // busy past its idle time: kept
  ASSERT_TRUE(KillRunning("r", 1).ok());
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_EQ(Instances("r").size(), 1u);  // idle, but not for 300 ms yet
  EXPECT_TRUE(WaitForInstances("r", 0, milliseconds(5'000)));
  // The next invocation gets a fresh instance with a new id.
  InvokeOutcome fresh = Invoke("r", R"({"op":"reply"})");
  EXPECT_EQ(fresh.instance, 2u);
  EXPECT_EQ(fresh.result, Value::Int(0));
}

TEST_F(ProgramRuntimeTest, PoisoningResetsOnlyTheFailedInstance) {
  Deploy({{"r", Replicated(2, 256, 60'000, /*initial=*/1)}});
  ASSERT_EQ(Invoke("r", R"({"op":"spin"})", InvokeMode::kEnqueue).instance, 1u);
  // Enqueued returns before the spin starts (on the native tier, its first slice may wait for
  // the module's compile).
  ASSERT_TRUE(WaitForStatus("r", 0, actor::ActorStatus::kRunning, milliseconds(30'000)));
  ASSERT_EQ(Invoke("r", R"({"op":"add","value":41})", InvokeMode::kWait).instance, 2u);
  InvokeOutcome failed = Invoke("r", R"({"op":"fail"})", InvokeMode::kWait, 2);
  EXPECT_EQ(failed.failure, InvokeFailure::kFailed);
  EXPECT_NE(failed.message.find("asked to fail"), std::string::npos) << failed.message;
  auto instances = Instances("r");
  ASSERT_EQ(instances.size(), 2u);
  EXPECT_EQ(instances[1].incarnation, 2u);
  EXPECT_EQ(instances[1].failure.value_or(""), "asked to fail");
  EXPECT_EQ(Invoke("r", R"({"op":"reply"})", InvokeMode::kWait, 2).result, Value::Int(1));
  // Instance 1 still runs its spin, untouched; killing it poisons it in turn.
  EXPECT_EQ(instances[0].incarnation, 1u);
  EXPECT_EQ(instances[0].status, actor::ActorStatus::kRunning);
  ASSERT_TRUE(KillRunning("r", 1).ok());
  EXPECT_EQ(Invoke("r", R"({"op":"reply"})", InvokeMode::kWait, 1).result, Value::Int(1));
  EXPECT_EQ(Instances("r")[0].incarnation, 2u);
  EXPECT_EQ(runtime_->Kill("r", 9).code(), Code::kNotFound);
}

TEST_F(ProgramRuntimeTest, RedeployKeepsUnchangedUnitsAndFinishesInFlightWorkOnTheOldProgram) {
  Deploy({{"c", kSingleton}, {"r", Replicated(1, 256, 60'000, 0)}, {"gone", kSingleton}});
  ASSERT_EQ(Invoke("c", R"({"op":"add","value":5})").failure, InvokeFailure::kNone);
  // In flight on the old "r": a spin, and behind it a wait for a reply.
  ASSERT_EQ(Invoke("r", R"({"op":"add","value":3})").failure, InvokeFailure::kNone);
  ASSERT_EQ(Invoke("r", R"({"op":"spin"})", InvokeMode::kEnqueue).failure, InvokeFailure::kNone);
  ActorRef old_r = Instances("r").at(0).actor;
  InvokeOutcome in_flight;
  std::thread waiter([&] { in_flight = Invoke("r", R"({"op":"reply"})"); });
  while (runtime_->runtime().Inspect(old_r)->queued.empty())
    std::this_thread::sleep_for(milliseconds(5));

  json changed = Replicated(1, 256, 60'000, /*initial=*/100);
  DeployReport report = Deploy({{"c", kSingleton}, {"r", changed}, {"new", kSingleton}});
  EXPECT_EQ(report.generation, 2u);
  EXPECT_EQ(report.unchanged, std::vector<std::string>{"c"});
  EXPECT_EQ(report.changed, std::vector<std::string>{"r"});
  EXPECT_EQ(report.added, std::vector<std::string>{"new"});
  EXPECT_EQ(report.removed, std::vector<std::string>{"gone"});

  // New routing sees generation 2: a new "r" instance, while the old one still spins.
  InvokeOutcome fresh = Invoke("r", R"({"op":"reply"})");
  EXPECT_EQ(fresh.generation, 2u);
  EXPECT_EQ(fresh.result, Value::Int(100));
  EXPECT_EQ(Invoke("c", R"({"op":"reply"})").result, Value::Int(5));  // kept its instance
  EXPECT_EQ(Invoke("gone", "{}").failure, InvokeFailure::kNotFound);

  // The old instance is listed (retired, generation 1) beside the new one, whose id is new.
  auto listed = Instances("r");
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_FALSE(listed[0].retired);
  EXPECT_EQ(listed[0].code_generation, 2u);
  EXPECT_EQ(listed[0].instance, 2u);
  EXPECT_TRUE(listed[1].retired);
  EXPECT_EQ(listed[1].code_generation, 1u);
  EXPECT_EQ(listed[1].instance, 1u);
  EXPECT_EQ(listed[1].actor, old_r);
  EXPECT_EQ(Invoke("r", R"({"op":"reply"})", InvokeMode::kWait, 1).failure,
            InvokeFailure::kNotFound);  // Specific reaches the current code's instances only
  // It finishes what it held on the old code and state, then goes away.
  ASSERT_TRUE(KillRunning("r", 1).ok());
  waiter.join();
  ASSERT_EQ(in_flight.failure, InvokeFailure::kNone) << in_flight.message;
  EXPECT_EQ(in_flight.generation, 1u);
  EXPECT_EQ(in_flight.result, Value::Int(0));  // the kill reset the old instance to 0
  for (int i = 0; i < 500 && runtime_->runtime().Inspect(old_r).ok(); ++i) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_EQ(runtime_->runtime().Inspect(old_r).status().code(), Code::kNotFound);
}

TEST_F(ProgramRuntimeTest, TheNewestProgramIsDeployedAgainAfterARestart) {
  Deploy({{"c", kSingleton}});
  Deploy({{"c", kSingleton}, {"r", Replicated(2)}});
  Open();
  auto current = runtime_->Current();
  ASSERT_NE(current, nullptr);
  EXPECT_EQ(current->generation, 2u);
  EXPECT_EQ(current->units.size(), 2u);
  EXPECT_EQ(Invoke("r", R"({"op":"reply"})").result, Value::Int(0));
  EXPECT_EQ(Deploy({{"c", kSingleton}}).generation, 3u);
}

TEST_F(ProgramRuntimeTest, TrialInstantiationsRunOnTheFleet) {
  // A module's start function is guest code: the deploy's trial instantiation of each module
  // is a task on a reactor, not work on the deploying thread.
  auto tasks_run = [&] {
    uint64_t total = 0;
    for (const actor::ReactorInfo& r : runtime_->Reactors()) total += r.tasks_run;
    return total;
  };
  uint64_t before = tasks_run();
  Deploy({{"s", kSingleton}});
  EXPECT_GE(tasks_run(), before + 1);
}

TEST_F(ProgramRuntimeTest, DeployAsyncAnswersEachDeployOnceAndRefusesPastItsQueue) {
  // Given 20 deploys handed over at once (each writes and fsyncs its file: milliseconds)
  constexpr int kDeploys = 20;
  std::mutex mu;
  std::condition_variable answered;
  std::vector<Result<DeployReport>> reports;
  for (int i = 0; i < kDeploys; ++i) {
    runtime_->DeployAsync(Body({{"s", kSingleton}}), [&](Result<DeployReport> report) {
      std::lock_guard lock(mu);
      reports.push_back(std::move(report));
      answered.notify_all();
    });
  }
  // then each is answered exactly once: the one running and the 8 waiting deploy, each with
  // its own generation; the rest are refused at once as unavailable
  std::unique_lock lock(mu);
  ASSERT_TRUE(answered.wait_for(lock, std::chrono::seconds(30),
                                [&] { return reports.size() == kDeploys; }));
  std::set<uint64_t> generations;
  int refused = 0;
  for (const auto& report : reports) {
    if (report.ok()) {
      generations.insert(report->generation);
    } else {
      EXPECT_EQ(report.status().code(), Code::kUnavailable) << report.status().ToString();
      ++refused;
    }
  }
  EXPECT_GE(generations.size(), 1u + ProgramRuntime::kMaxWaitingDeploys - 1);
  EXPECT_LE(generations.size(), 1u + ProgramRuntime::kMaxWaitingDeploys);
  EXPECT_EQ(generations.size() + refused, static_cast<size_t>(kDeploys));
}

TEST_F(ProgramRuntimeTest, ConcurrentInvocationsAcrossRedeploysLoseNothing) {
  // 8 threads add to the singleton (kept across deploys) while the replicated unit is
  // replaced 5 times. Every accepted add counts exactly once.
  Deploy({{"c", kSingleton}, {"r", Replicated(4, 8, 60'000, 0)}});
  std::atomic<int64_t> accepted{0};
  std::atomic<bool> done{false};
  std::vector<std::thread> clients;
  for (int t = 0; t < 8; ++t) {
    clients.emplace_back([&, t] {
      for (int i = 0; i < 150; ++i) {
        InvokeMode mode =
            i % 3 == 0 ? InvokeMode::kTry : (i % 3 == 1 ? InvokeMode::kEnqueue : InvokeMode::kWait);
        InvokeOutcome out = Invoke(i % 2 == 0 ? "c" : "r", R"({"op":"add","value":1})", mode);
        if (out.failure == InvokeFailure::kNone) {
          if (i % 2 == 0) accepted.fetch_add(1);
        } else {
          EXPECT_EQ(out.failure, InvokeFailure::kInboxFull) << t << ": " << out.message;
        }
      }
    });
  }
  for (int d = 1; d <= 5; ++d) {
    Deploy({{"c", kSingleton}, {"r", Replicated(4, 8, 60'000, d)}});
    std::this_thread::sleep_for(milliseconds(20));
  }
  for (auto& client : clients) client.join();
  done = true;
  InvokeOutcome total = Invoke("c", R"({"op":"reply"})");
  ASSERT_EQ(total.failure, InvokeFailure::kNone) << total.message;
  EXPECT_EQ(total.result, Value::Int(accepted.load()));
  EXPECT_EQ(runtime_->Current()->generation, 6u);
}

}  // namespace
}  // namespace reef::apps::program
