// Integration tests of programs and units (issue 7, spec 003), part one: issue 7's acceptance,
// routing, eviction and poisoning. The program, the server and the ProgramTest fixture are
// described in program_test_support.h; program_lifecycle_test.cc holds the other behaviours.
//
// ProgramAcceptance is issue 7's acceptance criterion: 64 concurrent clients invoke both units
// while v2 is deployed; nothing is lost or fails except explicit 429s, in-flight invocations
// complete on the program they were routed under, and the counter's count equals the adds
// the server accepted. The other tests take one behaviour each: Specific and AnyOrSpawn
// routing, singleton pinning, idle eviction, and poisoning (a failure, a kill).
#include "integration/program_test_support.h"

namespace reef::testing {
namespace {

constexpr int kAcceptanceClients = 64;
constexpr milliseconds kPhase(1500);  // acceptance: load before the deploy, and after it

// ---- Acceptance -------------------------------------------------------------------------------

// What one client sends.
enum class Kind { kCounterWait, kWorkerWait, kCounterEnqueue, kCounterTry };
constexpr Kind kMix[] = {Kind::kCounterWait, Kind::kWorkerWait, Kind::kCounterEnqueue,
                         Kind::kWorkerWait, Kind::kCounterTry};

// One invocation as the client saw it.
struct Outcome {
  Kind kind;
  json message;  // carries a unique "id"
  Clock::time_point start, end;
  HttpResult reply;
};

using ProgramAcceptance = ProgramTest;

TEST_F(ProgramAcceptance, SixtyFourClientsAcrossARedeployLoseNothingAndCountEveryAdd) {
  // Given: v1 deployed, the counter's inbox small enough that `try` meets a full one.
  const json overrides = {{"counter", {{"inbox_capacity", 8}}}};
  json v1 = Deploy(kProgramV1Dir, overrides);
  ASSERT_TRUE(v1.is_object());
  EXPECT_EQ(v1["units"]["added"], json::array({"counter", "worker"})) << v1.dump();
  const int64_t generation_v1 = Get(v1, "generation", int64_t{0});

  // When: 64 clients invoke both units in a mix of modes, and v2 is deployed halfway.
  std::atomic<bool> stop{false};
  std::vector<std::vector<Outcome>> outcomes(kAcceptanceClients);
  std::vector<std::thread> clients;
  for (int c = 0; c < kAcceptanceClients; ++c) {
    clients.emplace_back([&, c] {
      for (int seq = 0; !stop.load(); ++seq) {
        const Kind kind = kMix[(c + seq) % std::size(kMix)];
        Outcome o{.kind = kind};
        const std::string id = "c" + std::to_string(c) + "-" + std::to_string(seq);
        const bool counter = kind != Kind::kWorkerWait;
        o.message = counter ? json{{"op", "add"}, {"id", id}} : json{{"op", "echo"}, {"id", id}};
        const char* mode = kind == Kind::kCounterEnqueue ? "mode=enqueue"
                           : kind == Kind::kCounterTry   ? "mode=try"
                                                         : "mode=wait";
        o.start = Clock::now();
        o.reply = Invoke(port_, counter ? "counter" : "worker", o.message, mode);
        o.end = Clock::now();
        outcomes[c].push_back(std::move(o));
      }
    });
  }
  std::this_thread::sleep_for(kPhase);
  const Clock::time_point deploy_start = Clock::now();
  json v2 = Deploy(kProgramV2Dir, overrides);
  const Clock::time_point deploy_end = Clock::now();
  std::this_thread::sleep_for(kPhase);
  stop = true;
  for (std::thread& t : clients) t.join();

  // Then: the deploy changed the worker only.
  ASSERT_TRUE(v2.is_object());
  const int64_t generation_v2 = Get(v2, "generation", int64_t{0});
  EXPECT_GT(generation_v2, generation_v1) << v2.dump();
  EXPECT_EQ(v2["units"]["changed"], json::array({"worker"})) << v2.dump();
  EXPECT_EQ(v2["units"]["unchanged"], json::array({"counter"})) << v2.dump();
  EXPECT_EQ(v2["units"]["added"], json::array()) << v2.dump();
  EXPECT_EQ(v2["units"]["removed"], json::array()) << v2.dump();

  // Every request was answered: 200 (wait), 202 (enqueue, try) or an explicit 429.
  int64_t accepted_adds = 0, rejected = 0, worker_v1 = 0, worker_v2 = 0, total = 0;
  int64_t across = 0;  // worker invocations sent before the deploy and answered after it began
  std::set<int64_t> wait_counts;
  std::set<std::tuple<int64_t, int64_t, int64_t>> served;  // (version, instance, served)
  for (const auto& client : outcomes) {
    for (const Outcome& o : client) {
      ++total;
      const HttpResult& r = o.reply;
      SCOPED_TRACE(o.message.dump());
      ASSERT_FALSE(r.ec) << "transport error: " << r.ec.message();
      if (r.status == 429) {
        ++rejected;
        // Only `try` refuses a full inbox; `wait` and `enqueue` wait for room.
        EXPECT_EQ(o.kind, Kind::kCounterTry) << "429 from a waiting mode: " << r.text;
        EXPECT_FALSE(r.retry_after.empty()) << "429 without Retry-After: " << r.text;
        EXPECT_EQ(ErrorCode(r), "inbox_full") << r.text;
        continue;
      }
      const unsigned expected =
          o.kind == Kind::kCounterEnqueue || o.kind == Kind::kCounterTry ? 202u : 200u;
      ASSERT_EQ(r.status, expected) << r.text;
      ASSERT_TRUE(r.body.is_object()) << r.text;
      const int64_t generation = Get(r.body, "generation", int64_t{0});
      EXPECT_TRUE(generation == generation_v1 || generation == generation_v2) << r.text;
      if (o.kind != Kind::kWorkerWait) {
        ++accepted_adds;
        if (o.kind == Kind::kCounterWait) {
          const int64_t count = Get(ResultOf(r), "count", int64_t{0});
          EXPECT_GE(count, 1) << r.text;
          EXPECT_TRUE(wait_counts.insert(count).second) << "count " << count << " seen twice";
        }
        continue;
      }
      // A worker reply: its own message back, from the code of the generation that routed it
      // (in-flight invocations complete on the old program).
      const json result = ResultOf(r);
      ASSERT_TRUE(result.is_object()) << r.text;
      EXPECT_EQ(Sub(result, "echo"), o.message) << r.text;
      const int64_t version = Get(result, "version", int64_t{0});
      EXPECT_EQ(version, generation == generation_v1 ? 1 : 2) << r.text;
      if (o.end < deploy_start) {
        EXPECT_EQ(version, 1) << "answered before the deploy started";
      }
      if (o.start > deploy_end) {
        EXPECT_EQ(version, 2) << "sent after the deploy answered";
      }
      (version == 1 ? worker_v1 : worker_v2)++;
      if (o.start < deploy_start && o.end > deploy_start) ++across;
      // One invocation at a time per instance: no two replies of one instance (and version)
      // with the same served count.
      EXPECT_TRUE(served
                      .insert({version, Get(r.body, "instance", int64_t{0}),
                               Get(result, "served", int64_t{0})})
                      .second)
          << r.text;
    }
  }
  EXPECT_GT(worker_v1, 0) << "no worker invocation before the deploy";
  EXPECT_GT(worker_v2, 0) << "no worker invocation after the deploy";

  // The count invariant: once the enqueued adds ran, the count is the number of accepted
  // adds, and every count a waiting add saw is one of them.
  int64_t count = -1;
  EXPECT_TRUE(Eventually(
      [&] {
        count = CounterCount();
        return count >= accepted_adds;
      },
      milliseconds(10000)));
  EXPECT_EQ(count, accepted_adds) << "adds answered 200/202: " << accepted_adds;
  if (!wait_counts.empty()) {
    EXPECT_LE(*wait_counts.rbegin(), accepted_adds);
  }
  std::cerr << "acceptance: " << total << " invocations, " << accepted_adds << " accepted adds, "
            << rejected << " explicit 429s, worker replies v1 " << worker_v1 << " / v2 "
            << worker_v2 << ", " << across << " of them in flight across the deploy\n";
}

// ---- Routing ----------------------------------------------------------------------------------

TEST_F(ProgramTest, SpecificInstanceReachesThatInstanceAndAMissingOneIs404) {
  ASSERT_TRUE(Deploy(kProgramV1Dir).is_object());
  HttpResult first = Invoke(port_, "worker", {{"n", 1}});
  ASSERT_EQ(first.status, 200u) << first.text;
  const int64_t instance = Get(first.body, "instance", int64_t{0});
  ASSERT_GT(instance, 0) << first.text;

  HttpResult again = Invoke(port_, "worker", {{"n", 2}}, "instance=" + std::to_string(instance));
  ASSERT_EQ(again.status, 200u) << again.text;
  EXPECT_EQ(Get(again.body, "instance", int64_t{0}), instance) << again.text;
  EXPECT_EQ(Get(ResultOf(again), "served", 0), 2) << "not the same instance's state";

  const size_t before = Instances("worker").size();
  HttpResult missing = Invoke(port_, "worker", {{"n", 3}}, "instance=999");
  EXPECT_EQ(missing.status, 404u) << missing.text;
  HttpResult missing_enqueue = Invoke(port_, "worker", {{"n", 3}}, "mode=enqueue&instance=999");
  EXPECT_EQ(missing_enqueue.status, 404u) << missing_enqueue.text;
  EXPECT_EQ(Instances("worker").size(), before) << "a Specific invocation spawned an instance";
}

TEST_F(ProgramTest, AnyOrSpawnSpawnsUpToTheInstanceLimitAndNoMore) {
  ASSERT_TRUE(Deploy(kProgramV1Dir, {{"worker", {{"instance_limit", 2}}}}).is_object());
  // Given: two spinning invocations keep every instance busy ...
  std::set<int64_t> used;
  for (int i = 0; i < 2; ++i) {
    HttpResult r = Invoke(port_, "worker", {{"op", "spin"}}, "mode=enqueue");
    ASSERT_EQ(r.status, 202u) << r.text;
    used.insert(Get(r.body, "instance", int64_t{0}));
  }
  EXPECT_EQ(used.size(), 2u) << "a busy instance was chosen while the limit allowed a new one";
  // ... when more work arrives, it queues on those two.
  for (int i = 0; i < 6; ++i) {
    HttpResult r = Invoke(port_, "worker", {{"n", i}}, "mode=enqueue");
    ASSERT_EQ(r.status, 202u) << r.text;
    used.insert(Get(r.body, "instance", int64_t{0}));
  }
  EXPECT_EQ(used.size(), 2u);
  EXPECT_EQ(Instances("worker").size(), 2u) << Instances("worker").dump();
  json row = UnitRow("worker");
  EXPECT_EQ(Get(row, "instances", int64_t{-1}), 2) << row.dump();

  // Then, once the spins are killed, the queued work runs on the same two instances.
  StopSpinning("worker");
  EXPECT_TRUE(Eventually(
      [&] {
        json instances = Instances("worker");
        return std::ranges::all_of(instances, [](const json& i) {
          return Get(i, "queued", int64_t{-1}) == 0 && Get(i, "status", "") == "idle";
        });
      },
      milliseconds(5000)))
      << Instances("worker").dump();
  EXPECT_EQ(Instances("worker").size(), 2u);
}

TEST_F(ProgramTest, SingletonStaysOnOneInstanceAndReactor) {
  ASSERT_TRUE(Deploy(kProgramV1Dir).is_object());
  HttpResult first = Invoke(port_, "counter", {{"op", "add"}});
  ASSERT_EQ(first.status, 200u) << first.text;
  const int64_t instance = Get(first.body, "instance", int64_t{0});
  json pinned = Instances("counter");
  ASSERT_EQ(pinned.size(), 1u) << pinned.dump();
  const int64_t reactor = Get(pinned[0], "reactor", int64_t{-1});

  // When: 8 clients add 10 times each.
  std::mutex mu;
  std::set<int64_t> counts, instances;
  std::vector<std::thread> clients;
  for (int c = 0; c < 8; ++c) {
    clients.emplace_back([&] {
      for (int i = 0; i < 10; ++i) {
        HttpResult r = Invoke(port_, "counter", {{"op", "add"}});
        std::lock_guard lock(mu);
        EXPECT_EQ(r.status, 200u) << r.text;
        counts.insert(Get(ResultOf(r), "count", int64_t{0}));
        instances.insert(Get(r.body, "instance", int64_t{0}));
      }
    });
  }
  for (std::thread& t : clients) t.join();

  // Then: one instance on the same reactor served them all, one add at a time.
  EXPECT_EQ(instances, std::set<int64_t>{instance});
  EXPECT_EQ(counts.size(), 80u);
  EXPECT_EQ(CounterCount(), 81);
  json after = Instances("counter");
  ASSERT_EQ(after.size(), 1u) << after.dump();
  EXPECT_EQ(Get(after[0], "reactor", int64_t{-2}), reactor) << after.dump();
  EXPECT_EQ(Get(after[0], "instance", int64_t{0}), instance) << after.dump();
  EXPECT_EQ(Get(after[0], "invocations", int64_t{0}), 82) << after.dump();
}

// ---- Eviction and poisoning -------------------------------------------------------------------

TEST_F(ProgramTest, IdleReplicatedInstancesAreEvictedButNeverTheSingleton) {
  ASSERT_TRUE(Deploy(kProgramV1Dir, {{"worker", {{"idle_eviction_ms", 200}}}}).is_object());
  ASSERT_EQ(Invoke(port_, "counter", {{"op", "add"}}).status, 200u);
  // Given: a few worker instances (4 clients at once).
  InvokeWorkersFromFourClients();
  const size_t spawned = Instances("worker").size();
  ASSERT_GE(spawned, 1u);

  // When they idle past 200 ms, they go; the evicted counter counts them.
  EXPECT_TRUE(Eventually([&] { return Instances("worker").empty(); }, milliseconds(5000)))
      << Instances("worker").dump();
  EXPECT_GE(Get(UnitRow("worker"), "evicted", int64_t{0}), static_cast<int64_t>(spawned));

  // The singleton, as idle, stays with its state.
  EXPECT_EQ(Instances("counter").size(), 1u);
  EXPECT_EQ(Get(UnitRow("counter"), "evicted", int64_t{-1}), 0);
  EXPECT_EQ(CounterCount(), 1);
  // The worker spawns again on demand.
  HttpResult again = Invoke(port_, "worker", {{"after", "eviction"}});
  EXPECT_EQ(again.status, 200u) << again.text;
  EXPECT_EQ(Get(ResultOf(again), "served", 0), 1) << again.text;
}

TEST_F(ProgramTest, BusyInstancesAreNotEvicted) {
  ASSERT_TRUE(
      Deploy(kProgramV1Dir, {{"worker", {{"instance_limit", 1}, {"idle_eviction_ms", 200}}}})
          .is_object());
  // Given: the instance spins with a message queued, nothing routed to it for 3x its idle time.
  ASSERT_EQ(Invoke(port_, "worker", {{"op", "spin"}}, "mode=enqueue").status, 202u);
  ASSERT_EQ(Invoke(port_, "worker", {{"n", 1}}, "mode=enqueue").status, 202u);
  std::this_thread::sleep_for(milliseconds(600));

  // Then: it is still there with its queue; once free, it serves the queued message first.
  json busy = InstanceNumbered("worker", 1);
  EXPECT_EQ(Get(busy, "status", ""), "running") << Instances("worker").dump();
  EXPECT_EQ(Get(busy, "queued", int64_t{0}), 1) << busy.dump();
  EXPECT_EQ(Get(UnitRow("worker"), "evicted", int64_t{-1}), 0);
  ASSERT_EQ(Kill("worker", 1).status, 200u);
  HttpResult next = Invoke(port_, "worker", {{"n", 2}}, "instance=1");
  ASSERT_EQ(next.status, 200u) << next.text;
  EXPECT_EQ(Get(ResultOf(next), "served", 0), 2) << "the queued message was dropped";
  // ... and goes once it idles.
  EXPECT_TRUE(Eventually([&] { return Instances("worker").empty(); }, milliseconds(5000)));
}

TEST_F(ProgramTest, AFailedInvocationPoisonsOnlyItsInstance) {
  ASSERT_TRUE(Deploy(kProgramV1Dir).is_object());
  for (int i = 0; i < 3; ++i) ASSERT_EQ(Invoke(port_, "counter", {{"op", "add"}}).status, 200u);
  HttpResult worker = Invoke(port_, "worker", {{"n", 1}});
  ASSERT_EQ(worker.status, 200u) << worker.text;
  const int64_t worker_instance = Get(worker.body, "instance", int64_t{0});

  // When: the counter's handler fails.
  HttpResult failed = Invoke(port_, "counter", {{"op", "fail"}});
  EXPECT_EQ(failed.status, 500u) << failed.text;
  EXPECT_EQ(ErrorCode(failed), "invocation_failed") << failed.text;

  // Then: the counter starts over from its initial state in a new incarnation ...
  EXPECT_EQ(CounterCount(), 0);
  json counter = Instances("counter");
  ASSERT_EQ(counter.size(), 1u) << counter.dump();
  EXPECT_EQ(Get(counter[0], "incarnation", int64_t{0}), 2) << counter.dump();
  EXPECT_EQ(Get(UnitRow("counter"), "poisoned", int64_t{0}), 1);
  HttpResult add = Invoke(port_, "counter", {{"op", "add"}});
  EXPECT_EQ(Get(ResultOf(add), "count", int64_t{0}), 1) << add.text;
  // ... and the worker does not notice.
  HttpResult next =
      Invoke(port_, "worker", {{"n", 2}}, "instance=" + std::to_string(worker_instance));
  ASSERT_EQ(next.status, 200u) << next.text;
  EXPECT_EQ(Get(ResultOf(next), "served", 0), 2) << next.text;
  json w = InstanceNumbered("worker", worker_instance);
  EXPECT_EQ(Get(w, "incarnation", int64_t{0}), 1) << w.dump();
  EXPECT_EQ(Get(UnitRow("worker"), "poisoned", int64_t{-1}), 0);
}

TEST_F(ProgramTest, KillPoisonsARunningInstanceAndFailsItsWaitingInvocation) {
  ASSERT_TRUE(Deploy(kProgramV1Dir).is_object());
  HttpResult warm = Invoke(port_, "worker", {{"n", 1}});
  ASSERT_EQ(warm.status, 200u) << warm.text;
  const int64_t instance = Get(warm.body, "instance", int64_t{0});
  const std::string specific = "instance=" + std::to_string(instance);

  // Given: a client waits on a spinning invocation.
  HttpResult spin;
  std::thread waiter([&] {
    spin = Invoke(port_, "worker", {{"op", "spin"}}, specific + "&timeout_ms=10000");
  });
  EXPECT_TRUE(Eventually(
      [&] { return Get(InstanceNumbered("worker", instance), "status", "") == "running"; },
      milliseconds(5000)));

  // When: the instance is killed.
  HttpResult killed = Kill("worker", instance);
  EXPECT_EQ(killed.status, 200u) << killed.text;
  EXPECT_EQ(Get(killed.body, "killed", false), true) << killed.text;
  waiter.join();

  // Then: the waiting invocation fails, the instance starts over, the others go on.
  EXPECT_EQ(spin.status, 500u) << spin.text;
  EXPECT_EQ(ErrorCode(spin), "invocation_failed") << spin.text;
  EXPECT_EQ(Get(UnitRow("worker"), "poisoned", int64_t{0}), 1);
  HttpResult after = Invoke(port_, "worker", {{"n", 2}}, specific);
  ASSERT_EQ(after.status, 200u) << after.text;
  EXPECT_EQ(Get(ResultOf(after), "served", 0), 1) << "the state was not reset";
  EXPECT_EQ(Get(InstanceNumbered("worker", instance), "incarnation", int64_t{0}), 2);
  EXPECT_EQ(Invoke(port_, "counter", {{"op", "add"}}).status, 200u);

  EXPECT_EQ(Kill("worker", 999).status, 404u);
  EXPECT_EQ(Kill("nope", 1).status, 404u);
}

TEST_F(ProgramTest, APoisonedInstanceGoesOnWithItsQueuedInvocations) {
  ASSERT_TRUE(Deploy(kProgramV1Dir, {{"worker", {{"instance_limit", 1}}}}).is_object());
  ASSERT_EQ(Invoke(port_, "worker", {{"n", 0}}).status, 200u);
  // Given: the instance fails on one message while two clients wait behind it.
  ASSERT_EQ(Invoke(port_, "worker", {{"op", "spin"}}, "mode=enqueue").status, 202u);
  ASSERT_EQ(Invoke(port_, "worker", {{"op", "fail"}}, "mode=enqueue").status, 202u);
  HttpResult first, second;
  std::thread waiter([&] {
    first = Invoke(port_, "worker", {{"n", 1}}, "timeout_ms=10000");
    second = Invoke(port_, "worker", {{"n", 2}}, "timeout_ms=10000");
  });
  EXPECT_TRUE(Eventually([&] { return Get(InstanceNumbered("worker", 1), "queued", 0) >= 2; },
                         milliseconds(5000)));

  // When: the spin is killed (one poisoning) and the fail runs (another).
  ASSERT_EQ(Kill("worker", 1).status, 200u);
  waiter.join();

  // Then: the waiting invocations run, on the reset state, in the third incarnation.
  ASSERT_EQ(first.status, 200u) << first.text;
  EXPECT_EQ(Get(ResultOf(first), "served", 0), 1) << first.text;
  ASSERT_EQ(second.status, 200u) << second.text;
  EXPECT_EQ(Get(ResultOf(second), "served", 0), 2) << second.text;
  json instance = InstanceNumbered("worker", 1);
  EXPECT_EQ(Get(instance, "incarnation", int64_t{0}), 3) << instance.dump();
  EXPECT_EQ(Get(instance, "failure", ""), "worker: failed on request (op 'fail')")
      << instance.dump();
  EXPECT_EQ(Get(UnitRow("worker"), "poisoned", int64_t{0}), 2);
}

}  // namespace
}  // namespace reef::testing
