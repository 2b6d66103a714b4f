// Integration tests of programs and units (issue 7, spec 003): the real `reef serve` on
// loopback, one fresh server per test, driven over HTTP (docs/http-api.md "Programs").
//
// The program is the example of examples/program, built into REEF_PROGRAM_V1_DIR and
// REEF_PROGRAM_V2_DIR (program.json + counter.wasm + worker.wasm each):
//   counter  singleton, handler counter_handle, state an integer from 0:
//            {"op":"add"} -> {"count": n + 1}; {"op":"get"} -> {"count": n}; {"op":"fail"} fails
//   worker   replicated: {"op":"spin"} loops until killed, {"op":"fail"} fails, anything else
//            -> {"version": 1 | 2, "echo": <the message>, "served": <this instance's count>}
// v2 differs from v1 in the worker module only. Tests deploy it through POST /programs with a
// body they build (manifest + base64 modules), some with unit fields overridden.
//
// ProgramAcceptance is issue 7's acceptance criterion: 64 concurrent clients invoke both units
// while v2 is deployed; nothing is lost or fails except explicit 429s, in-flight invocations
// complete on the program they were routed under, and the counter's count equals the adds
// the server accepted. The other tests take one behaviour each: Specific and AnyOrSpawn
// routing, singleton pinning, idle eviction, poisoning (a failure, a kill), reactor drain,
// inbox backpressure (429, 503) and wait timeouts (504), what a redeploy reports and does to
// accepted work, concurrent deploys, the current program's description, a restart, the auth
// token, and bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <iostream>
#include <iterator>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "support/http_test_client.h"
#include "support/program_body.h"
#include "support/reef_server.h"

namespace reef::testing {
namespace {

namespace fs = std::filesystem;
namespace http = boost::beast::http;
using Clock = std::chrono::steady_clock;
using nlohmann::json;
using std::chrono::milliseconds;

constexpr char kReefBinary[] = REEF_BINARY;
constexpr char kProgramV1Dir[] = REEF_PROGRAM_V1_DIR;
constexpr char kProgramV2Dir[] = REEF_PROGRAM_V2_DIR;

constexpr int kAcceptanceClients = 64;
constexpr milliseconds kPhase(1500);  // acceptance: load before the deploy, and after it

// ---- Reading replies ------------------------------------------------------------------------

// `j[key]` when `j` is an object holding `key`, else null (never throws).
json Sub(const json& j, const std::string& key) {
  return j.is_object() && j.contains(key) ? j[key] : json(nullptr);
}

// `j[key]` as a T when `j` is an object holding `key` of that type, else `fallback`.
template <typename T>
T Get(const json& j, const std::string& key, T fallback) {
  try {
    return j.is_object() && j.contains(key) ? j[key].get<T>() : fallback;
  } catch (const json::exception&) {
    return fallback;
  }
}
std::string Get(const json& j, const std::string& key, const char* fallback) {
  return Get<std::string>(j, key, fallback);
}

// The "result" of a `wait` reply, or null.
json ResultOf(const HttpResult& r) {
  return Sub(r.body, "result");
}

// ---- Requests ---------------------------------------------------------------------------------

HttpResult Post(uint16_t port, const std::string& target, const json& body) {
  return HttpCall(port, http::verb::post, target, body.dump());
}

// POST /units/{unit}/invoke?{query} with `message`; `query` e.g. "mode=try&instance=2".
// `wait`: how long the client waits for the reply (the server's timeout_ms is in `query`).
HttpResult Invoke(uint16_t port, const std::string& unit, const json& message,
                  const std::string& query = "", milliseconds wait = milliseconds(15000)) {
  return HttpCall(port, http::verb::post,
                  "/units/" + unit + "/invoke" + (query.empty() ? "" : "?" + query), message.dump(),
                  "", wait);
}

std::string ErrorCode(const HttpResult& r) {
  return Get(Sub(r.body, "error"), "code", "");
}

std::string ErrorMessage(const HttpResult& r) {
  return Get(Sub(r.body, "error"), "message", "");
}

// Polls `done` every 20 ms until it holds or `timeout` passes; returns its last answer.
bool Eventually(const std::function<bool()>& done, milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (done()) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(milliseconds(20));
  }
}

// ---- Fixture ----------------------------------------------------------------------------------

// A fresh `reef serve` per test; Deploy() puts a version of the example program on it.
class ProgramTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string started = server_.Start();
    ASSERT_EQ(started, "");
    port_ = server_.port();
  }

  void TearDown() override {
    // A spinning instance would hold up the server's shutdown: kill what still runs.
    if (port_ != 0) StopSpinning("worker");
    if (HasFailure()) std::cerr << "---- reef serve log ----\n" << server_.Log();
  }

  // Deploys `dir` with `overrides`; returns the 200 body (units added/changed/...), or null.
  json Deploy(const char* dir, const json& overrides = json::object()) {
    std::string error;
    json body = ProgramBody(dir, overrides, error);
    EXPECT_EQ(error, "");
    if (!error.empty()) return nullptr;
    HttpResult r =
        HttpCall(port_, http::verb::post, "/programs", body.dump(), "", std::chrono::seconds(30));
    EXPECT_EQ(r.status, 200u) << "POST /programs: " << r.text;
    return r.status == 200 ? r.body : json(nullptr);
  }

  // GET /units/{unit}/instances -> its "instances" array (empty on error).
  json Instances(const std::string& unit) {
    HttpResult r = HttpGet(port_, "/units/" + unit + "/instances");
    EXPECT_EQ(r.status, 200u) << r.text;
    if (!r.body.is_object() || !r.body["instances"].is_array()) return json::array();
    return r.body["instances"];
  }

  // The instance numbered `n` of `unit`, or null.
  json InstanceNumbered(const std::string& unit, int64_t n) {
    for (const json& i : Instances(unit)) {
      if (Get(i, "instance", int64_t{-1}) == n) return i;
    }
    return nullptr;
  }

  // The row of `unit` in GET /units, or null.
  json UnitRow(const std::string& unit) {
    HttpResult r = HttpGet(port_, "/units");
    EXPECT_EQ(r.status, 200u) << r.text;
    if (!r.body.is_object() || !r.body["units"].is_array()) return nullptr;
    for (const json& row : r.body["units"]) {
      if (Get(row, "unit", "") == unit) return row;
    }
    return nullptr;
  }

  json Reactors() {
    HttpResult r = HttpGet(port_, "/reactors");
    EXPECT_EQ(r.status, 200u) << r.text;
    if (!r.body.is_object() || !r.body["reactors"].is_array()) return json::array();
    return r.body["reactors"];
  }

  HttpResult Kill(const std::string& unit, int64_t instance) {
    return Post(port_, "/units/" + unit + "/instances/" + std::to_string(instance) + "/kill",
                json::object());
  }

  // The counter's count from {"op":"get"}, or -1.
  int64_t CounterCount() {
    HttpResult r = Invoke(port_, "counter", {{"op", "get"}});
    EXPECT_EQ(r.status, 200u) << r.text;
    return Get(ResultOf(r), "count", int64_t{-1});
  }

  // Kills `unit`'s running instances until none runs (each kill drops one spinning
  // invocation; queued spins start after it), at most 32 rounds.
  void StopSpinning(const std::string& unit) {
    for (int round = 0; round < 32; ++round) {
      HttpResult r = HttpGet(port_, "/units/" + unit + "/instances");
      if (r.status != 200 || !r.body.is_object() || !r.body["instances"].is_array()) return;
      bool running = false;
      for (const json& i : r.body["instances"]) {
        if (Get(i, "status", "") != "running") continue;
        running = true;
        Kill(unit, Get(i, "instance", int64_t{0}));
      }
      if (!running) return;
      std::this_thread::sleep_for(milliseconds(20));
    }
  }

  ReefServer server_{kReefBinary};
  uint16_t port_ = 0;
};

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
  std::vector<std::thread> clients;
  for (int c = 0; c < 4; ++c) {
    clients.emplace_back([&, c] {
      for (int i = 0; i < 5; ++i) EXPECT_EQ(Invoke(port_, "worker", {{"c", c}}).status, 200u);
    });
  }
  for (std::thread& t : clients) t.join();
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

// ---- Reactors and backpressure ----------------------------------------------------------------

TEST_F(ProgramTest, DrainMovesInstancesOffTheReactorAndInvocationsGoOn) {
  ASSERT_TRUE(Deploy(kProgramV1Dir).is_object());
  if (Reactors().size() < 2) GTEST_SKIP() << "one reactor: nothing to drain to";
  ASSERT_EQ(Invoke(port_, "counter", {{"op", "add"}}).status, 200u);
  // Given: worker instances spread over the reactors (4 clients at once, round-robin).
  std::vector<std::thread> clients;
  for (int c = 0; c < 4; ++c) {
    clients.emplace_back([&, c] {
      for (int i = 0; i < 5; ++i) EXPECT_EQ(Invoke(port_, "worker", {{"c", c}}).status, 200u);
    });
  }
  for (std::thread& t : clients) t.join();
  const size_t workers = Instances("worker").size();
  // The reactor to drain: the counter's, so the singleton moves too.
  const int64_t drained = Get(Instances("counter").at(0), "reactor", int64_t{0});

  // When: the reactor is drained.
  HttpResult drain = Post(port_, "/reactors/" + std::to_string(drained) + "/drain", json::object());
  ASSERT_EQ(drain.status, 200u) << drain.text;
  EXPECT_EQ(Get(drain.body, "id", int64_t{-1}), drained) << drain.text;

  // Then: it goes down, empty; every instance lives elsewhere with its state.
  auto reactor_row = [&] {
    for (const json& r : Reactors()) {
      if (Get(r, "id", int64_t{-1}) == drained) return r;
    }
    return json(nullptr);
  };
  EXPECT_TRUE(
      Eventually([&] { return Get(reactor_row(), "liveness", "") == "down"; }, milliseconds(5000)))
      << reactor_row().dump();
  EXPECT_EQ(Get(reactor_row(), "actors", int64_t{-1}), 0) << reactor_row().dump();
  EXPECT_EQ(Instances("worker").size(), workers) << "instances were lost, not moved";
  EXPECT_EQ(CounterCount(), 1) << "the singleton's state did not move with it";
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(Invoke(port_, "worker", {{"after", i}}).status, 200u);
    EXPECT_EQ(Invoke(port_, "counter", {{"op", "add"}}).status, 200u);
  }
  for (const char* unit : {"worker", "counter"}) {
    for (const json& i : Instances(unit)) {
      EXPECT_NE(Get(i, "reactor", drained), drained) << unit << ": " << i.dump();
    }
  }
  EXPECT_EQ(CounterCount(), 11);

  // The last Up reactor cannot be drained (412); an unknown one is 404.
  std::vector<int64_t> up;
  for (const json& r : Reactors()) {
    if (Get(r, "liveness", "") == "up") up.push_back(Get(r, "id", int64_t{-1}));
  }
  if (up.size() == 1) {
    HttpResult last = Post(port_, "/reactors/" + std::to_string(up[0]) + "/drain", json::object());
    EXPECT_EQ(last.status, 412u) << last.text;
  }
  EXPECT_EQ(Post(port_, "/reactors/99/drain", json::object()).status, 404u);
}

TEST_F(ProgramTest, DrainWaitsForABusyInstanceAndFinishesOnceItIsFree) {
  ASSERT_TRUE(Deploy(kProgramV1Dir).is_object());
  if (Reactors().size() < 2) GTEST_SKIP() << "one reactor: nothing to drain to";
  // Given: a spinning worker instance with a message queued behind it.
  HttpResult spin = Invoke(port_, "worker", {{"op", "spin"}}, "mode=enqueue");
  ASSERT_EQ(spin.status, 202u) << spin.text;
  const int64_t instance = Get(spin.body, "instance", int64_t{0});
  const std::string specific = "instance=" + std::to_string(instance);
  ASSERT_EQ(Invoke(port_, "worker", {{"n", "queued"}}, "mode=enqueue&" + specific).status, 202u);
  const int64_t reactor = Get(InstanceNumbered("worker", instance), "reactor", int64_t{-1});
  const std::string drain = "/reactors/" + std::to_string(reactor) + "/drain";

  // When: its reactor is drained with a short timeout, the busy instance cannot move yet.
  HttpResult busy = Post(port_, drain + "?timeout_ms=300", json::object());
  EXPECT_EQ(busy.status, 200u) << busy.text;
  EXPECT_NE(Get(busy.body, "liveness", ""), "down") << busy.text;
  EXPECT_EQ(Get(InstanceNumbered("worker", instance), "reactor", int64_t{-1}), reactor);
  // New instances go elsewhere meanwhile.
  HttpResult other = Invoke(port_, "worker", {{"n", "other"}});
  ASSERT_EQ(other.status, 200u) << other.text;
  EXPECT_NE(Get(InstanceNumbered("worker", Get(other.body, "instance", int64_t{0})), "reactor",
                int64_t{-1}),
            reactor);

  // Then: once the spin is killed, the drain completes and the queued message still runs.
  ASSERT_EQ(Kill("worker", instance).status, 200u);
  HttpResult done = Post(port_, drain, json::object());
  EXPECT_EQ(done.status, 200u) << done.text;
  EXPECT_EQ(Get(done.body, "liveness", ""), "down") << done.text;
  HttpResult after = Invoke(port_, "worker", {{"n", "after"}}, specific);
  ASSERT_EQ(after.status, 200u) << after.text;
  EXPECT_EQ(Get(ResultOf(after), "served", 0), 2) << "the queued message was lost in the move";
  EXPECT_NE(Get(InstanceNumbered("worker", instance), "reactor", reactor), reactor);
}

TEST_F(ProgramTest, TryOnAFullInboxIs429WithRetryAfter) {
  ASSERT_TRUE(Deploy(kProgramV1Dir, {{"worker", {{"instance_limit", 1}, {"inbox_capacity", 2}}}})
                  .is_object());
  // Given: the one instance spins, so its inbox fills.
  HttpResult spin = Invoke(port_, "worker", {{"op", "spin"}}, "mode=enqueue");
  ASSERT_EQ(spin.status, 202u) << spin.text;

  // When: `try` offers more than the inbox holds.
  std::optional<HttpResult> full;
  int accepted = 0;
  for (int i = 0; i < 4 && !full; ++i) {
    HttpResult r = Invoke(port_, "worker", {{"n", i}}, "mode=try");
    if (r.status == 429) {
      full = r;
    } else {
      EXPECT_EQ(r.status, 202u) << r.text;
      ++accepted;
    }
  }

  // Then: an explicit 429 with Retry-After, once the capacity is used; `enqueue` gives up
  // with 503 after its timeout; nothing is lost.
  ASSERT_TRUE(full.has_value()) << "no 429 from a full inbox";
  EXPECT_LE(accepted, 1) << "an inbox of 2 took the spin and " << accepted << " more";
  EXPECT_FALSE(full->retry_after.empty()) << full->text;
  EXPECT_EQ(ErrorCode(*full), "inbox_full") << full->text;
  HttpResult enqueue = Invoke(port_, "worker", {{"n", "late"}}, "mode=enqueue&timeout_ms=200");
  EXPECT_EQ(enqueue.status, 503u) << enqueue.text;
  EXPECT_EQ(ErrorCode(enqueue), "no_room") << enqueue.text;
  EXPECT_FALSE(enqueue.retry_after.empty()) << enqueue.text;
  EXPECT_GE(Get(UnitRow("worker"), "rejected", int64_t{0}), 1);

  StopSpinning("worker");
  EXPECT_TRUE(Eventually(
      [&] {
        return Invoke(port_, "worker", {{"n", "free"}}, "mode=try").status == 202u;
      },
      milliseconds(5000)));
}

TEST_F(ProgramTest, WaitWithoutAReplyInTimeIs504AndTheInvocationStillRuns) {
  ASSERT_TRUE(Deploy(kProgramV1Dir, {{"worker", {{"instance_limit", 1}}}}).is_object());
  // Given: the one instance spins.
  ASSERT_EQ(Invoke(port_, "worker", {{"op", "spin"}}, "mode=enqueue").status, 202u);

  // When: a client waits 300 ms for a message queued behind the spin.
  const Clock::time_point start = Clock::now();
  HttpResult late = Invoke(port_, "worker", {{"n", "late"}}, "timeout_ms=300");

  // Then: 504 after about that long; the message stays queued and runs once the spin ends.
  EXPECT_EQ(late.status, 504u) << late.text;
  EXPECT_EQ(ErrorCode(late), "timeout") << late.text;
  EXPECT_LT(Clock::now() - start, milliseconds(5000));
  StopSpinning("worker");
  HttpResult next = Invoke(port_, "worker", {{"n", "next"}});
  ASSERT_EQ(next.status, 200u) << next.text;
  EXPECT_EQ(Get(ResultOf(next), "served", 0), 2) << "the timed-out message did not run";
}

TEST_F(ProgramTest, HealthAndControlRoutesAnswerWhileManyInvocationsWaitOnABusyUnit) {
  // Issue 15: invocations that wait hold no server thread. `reef serve` has 32 handler
  // threads; before, 34 waiting invokes kept /health from answering until they timed out.
  constexpr int kWaiting = 64;
  ASSERT_TRUE(Deploy(kProgramV1Dir, {{"worker", {{"instance_limit", 1}, {"inbox_capacity", 128}}}})
                  .is_object());
  // Given: the one instance spins, and 64 clients wait (10 s) on messages queued behind it.
  HttpResult spin = Invoke(port_, "worker", {{"op", "spin"}}, "mode=enqueue");
  ASSERT_EQ(spin.status, 202u) << spin.text;
  const int64_t instance = Get(spin.body, "instance", int64_t{0});
  std::vector<HttpResult> waited(kWaiting);
  std::vector<std::thread> clients;
  for (int i = 0; i < kWaiting; ++i) {
    clients.emplace_back([&, i] {
      waited[i] = Invoke(port_, "worker", {{"n", i}}, "timeout_ms=10000", milliseconds(20000));
    });
  }
  ASSERT_TRUE(Eventually(
      [&] { return Get(InstanceNumbered("worker", instance), "queued", int64_t{0}) >= kWaiting; },
      milliseconds(8000)))
      << "the waiting invocations were not all queued";

  // When/Then: /health, /metrics and the unit listing answer while all of them wait (well
  // within the callers' 10 s: before, they answered only after the invocations timed out).
  for (const char* target : {"/health", "/metrics", "/units", "/units/worker/instances"}) {
    const Clock::time_point start = Clock::now();
    HttpResult r = HttpCall(port_, http::verb::get, target, "", "", milliseconds(3000));
    EXPECT_EQ(r.status, 200u) << target << ": " << r.text;
    EXPECT_LT(Clock::now() - start, milliseconds(3000)) << target;
  }
  // And every waiting client gets its answer once the spin is killed: none was dropped.
  EXPECT_EQ(Kill("worker", instance).status, 200u);
  for (auto& client : clients) client.join();
  std::set<int64_t> served;
  for (int i = 0; i < kWaiting; ++i) {
    EXPECT_EQ(waited[i].status, 200u) << "client " << i << ": " << waited[i].text;
    EXPECT_EQ(Get(ResultOf(waited[i]), "echo", json(nullptr)), json({{"n", i}}));
    served.insert(Get(ResultOf(waited[i]), "served", int64_t{0}));
  }
  EXPECT_EQ(served.size(), static_cast<size_t>(kWaiting)) << "each message ran once";
}

// ---- Deploys ------------------------------------------------------------------------------------

TEST_F(ProgramTest, RedeployReportsAddedChangedRemovedAndUnchangedUnits) {
  ASSERT_TRUE(Deploy(kProgramV1Dir).is_object());
  std::string error;
  json body = ProgramBody(kProgramV1Dir, nullptr, error);
  ASSERT_EQ(error, "");

  // The same program again: nothing changes.
  HttpResult same = Post(port_, "/programs", body);
  ASSERT_EQ(same.status, 200u) << same.text;
  EXPECT_EQ(same.body["units"]["unchanged"], json::array({"counter", "worker"})) << same.text;

  // worker removed, helper added (the worker's module under another name).
  json renamed = body;
  renamed["manifest"]["units"]["helper"] = renamed["manifest"]["units"]["worker"];
  renamed["manifest"]["units"].erase("worker");
  HttpResult swap = Post(port_, "/programs", renamed);
  ASSERT_EQ(swap.status, 200u) << swap.text;
  EXPECT_EQ(swap.body["units"]["added"], json::array({"helper"})) << swap.text;
  EXPECT_EQ(swap.body["units"]["removed"], json::array({"worker"})) << swap.text;
  EXPECT_EQ(swap.body["units"]["unchanged"], json::array({"counter"})) << swap.text;
  EXPECT_EQ(Invoke(port_, "worker", {{"n", 1}}).status, 404u);
  EXPECT_EQ(Invoke(port_, "helper", {{"n", 1}}).status, 200u);

  // New limits keep a unit unchanged, with its instances and state (docs/programs.md) ...
  ASSERT_EQ(Invoke(port_, "counter", {{"op", "add"}}).status, 200u);
  json tuned = body;
  tuned["manifest"]["units"]["counter"]["inbox_capacity"] = 16;
  HttpResult back = Post(port_, "/programs", tuned);
  ASSERT_EQ(back.status, 200u) << back.text;
  EXPECT_EQ(back.body["units"]["unchanged"], json::array({"counter"})) << back.text;
  EXPECT_EQ(back.body["units"]["added"], json::array({"worker"})) << back.text;
  EXPECT_EQ(back.body["units"]["removed"], json::array({"helper"})) << back.text;
  EXPECT_EQ(Get(UnitRow("counter"), "inbox_capacity", 0), 16);
  EXPECT_EQ(CounterCount(), 1);

  // ... a new initial state makes it changed: a new instance starts from it.
  tuned["manifest"]["units"]["counter"]["initial_state"] = 100;
  HttpResult restate = Post(port_, "/programs", tuned);
  ASSERT_EQ(restate.status, 200u) << restate.text;
  EXPECT_EQ(restate.body["units"]["changed"], json::array({"counter"})) << restate.text;
  EXPECT_EQ(restate.body["units"]["unchanged"], json::array({"worker"})) << restate.text;
  EXPECT_EQ(CounterCount(), 100);
}

TEST_F(ProgramTest, AcceptedInvocationsFinishOnTheOldCodeAfterARedeploy) {
  const json overrides = {{"worker", {{"instance_limit", 1}}}};
  ASSERT_TRUE(Deploy(kProgramV1Dir, overrides).is_object());
  // Given: v1's one worker instance spins, and a client waits on a message queued behind it.
  HttpResult spin = Invoke(port_, "worker", {{"op", "spin"}}, "mode=enqueue");
  ASSERT_EQ(spin.status, 202u) << spin.text;
  const int64_t old_instance = Get(spin.body, "instance", int64_t{0});
  const json in_flight = {{"id", "in-flight"}};
  HttpResult old_reply;
  std::thread waiter([&] { old_reply = Invoke(port_, "worker", in_flight, "timeout_ms=10000"); });
  EXPECT_TRUE(
      Eventually([&] { return Get(InstanceNumbered("worker", old_instance), "queued", 0) == 1; },
                 milliseconds(5000)));

  // When: v2 is deployed, a new invocation runs v2 at once, beside the busy v1 instance ...
  json v2 = Deploy(kProgramV2Dir, overrides);
  EXPECT_EQ(Sub(Sub(v2, "units"), "changed"), json::array({"worker"})) << v2.dump();
  HttpResult fresh = Invoke(port_, "worker", {{"id", "fresh"}}, "timeout_ms=5000");
  EXPECT_EQ(fresh.status, 200u) << fresh.text;
  EXPECT_EQ(Get(ResultOf(fresh), "version", 0), 2) << fresh.text;

  // ... and once the old instance's spin is killed, the queued message runs on v1.
  // The old instance is still there (listed, running) until it has handled what it accepted.
  json listed = Instances("worker");
  EXPECT_TRUE(
      std::ranges::any_of(listed, [](const json& i) { return Get(i, "status", "") == "running"; }))
      << "the old generation's spinning instance is not listed: " << listed.dump();
  HttpResult killed = Kill("worker", old_instance);
  EXPECT_EQ(killed.status, 200u) << killed.text;
  waiter.join();
  ASSERT_FALSE(old_reply.ec) << old_reply.ec.message();
  ASSERT_EQ(old_reply.status, 200u) << old_reply.text;
  EXPECT_EQ(Get(old_reply.body, "generation", int64_t{0}), 1) << old_reply.text;
  EXPECT_EQ(Get(ResultOf(old_reply), "version", 0), 1) << old_reply.text;
  EXPECT_EQ(Sub(ResultOf(old_reply), "echo"), in_flight) << old_reply.text;
}

TEST_F(ProgramTest, ConcurrentDeploysEachGetTheirOwnGeneration) {
  ASSERT_TRUE(Deploy(kProgramV1Dir).is_object());
  std::string error;
  const json v1 = ProgramBody(kProgramV1Dir, nullptr, error);
  const json v2 = ProgramBody(kProgramV2Dir, nullptr, error);
  ASSERT_EQ(error, "");

  // When: 8 clients deploy v1 or v2 at the same time, 3 times each.
  std::mutex mu;
  std::vector<int64_t> generations;
  std::vector<std::thread> deployers;
  for (int d = 0; d < 8; ++d) {
    deployers.emplace_back([&, d] {
      for (int i = 0; i < 3; ++i) {
        HttpResult r = HttpCall(port_, http::verb::post, "/programs",
                                ((d + i) % 2 == 0 ? v1 : v2).dump(), "", std::chrono::seconds(30));
        std::lock_guard lock(mu);
        EXPECT_EQ(r.status, 200u) << r.text;
        generations.push_back(Get(r.body, "generation", int64_t{0}));
      }
    });
  }
  for (std::thread& t : deployers) t.join();

  // Then: every deploy got a generation of its own, the last one is current, and it answers.
  std::ranges::sort(generations);
  EXPECT_EQ(std::ranges::adjacent_find(generations), generations.end())
      << "two deploys got the same generation";
  HttpResult current = HttpGet(port_, "/programs/current");
  ASSERT_EQ(current.status, 200u) << current.text;
  EXPECT_EQ(Get(current.body, "generation", int64_t{0}), generations.back());
  EXPECT_EQ(Invoke(port_, "worker", {{"n", 1}}).status, 200u);
  EXPECT_EQ(Invoke(port_, "counter", {{"op", "add"}}).status, 200u);
}

TEST_F(ProgramTest, CurrentProgramDescribesItsModulesAndUnitsWithDefaults) {
  ASSERT_TRUE(Deploy(kProgramV1Dir).is_object());
  HttpResult r = HttpGet(port_, "/programs/current");
  ASSERT_EQ(r.status, 200u) << r.text;
  const json& p = r.body;
  EXPECT_EQ(Get(p, "program", ""), "counter-demo");
  EXPECT_EQ(Get(p, "generation", int64_t{0}), 1);
  EXPECT_GT(Get(p, "deployed_at_ms", int64_t{0}), 0);
  for (const char* module : {"counter", "worker"}) {
    const json m = Sub(Sub(p, "modules"), module);
    EXPECT_EQ(Get(m, "size_bytes", uintmax_t{0}),
              fs::file_size(fs::path(kProgramV1Dir) / (std::string(module) + ".wasm")))
        << m.dump();
    EXPECT_EQ(Get(m, "sha256", "").size(), 64u) << m.dump();
  }
  const json counter = Sub(Sub(p, "units"), "counter");
  EXPECT_EQ(Get(counter, "placement", ""), "singleton") << counter.dump();
  EXPECT_EQ(Get(counter, "instance_limit", 0), 1) << counter.dump();
  EXPECT_EQ(Get(counter, "inbox_capacity", 0), 256) << counter.dump();
  const json worker = Sub(Sub(p, "units"), "worker");
  EXPECT_EQ(Get(worker, "handler", ""), "reef_handle") << worker.dump();
  EXPECT_EQ(Get(worker, "instance_limit", 0), 4) << worker.dump();
  EXPECT_EQ(Get(worker, "idle_eviction_ms", 0), 30000) << worker.dump();
}

TEST_F(ProgramTest, TheDeployedProgramSurvivesARestart) {
  ASSERT_TRUE(Deploy(kProgramV1Dir).is_object());
  ASSERT_TRUE(Deploy(kProgramV2Dir).is_object());
  HttpResult before = HttpGet(port_, "/programs/current");
  ASSERT_EQ(before.status, 200u) << before.text;

  EXPECT_TRUE(server_.Stop()) << "reef serve did not stop within 5 s of SIGTERM";
  std::string restarted = server_.Start();
  ASSERT_EQ(restarted, "");
  port_ = server_.port();

  HttpResult after = HttpGet(port_, "/programs/current");
  ASSERT_EQ(after.status, 200u) << after.text;
  EXPECT_EQ(Get(after.body, "program", ""), Get(before.body, "program", ""));
  EXPECT_EQ(after.body["modules"], before.body["modules"]);
  EXPECT_EQ(after.body["units"], before.body["units"]);
  HttpResult worker = Invoke(port_, "worker", {{"n", 1}});
  ASSERT_EQ(worker.status, 200u) << worker.text;
  EXPECT_EQ(Get(ResultOf(worker), "version", 0), 2) << worker.text;
}

TEST_F(ProgramTest, ServerStopsPromptlyWhileAnInstanceSpins) {
  ASSERT_TRUE(Deploy(kProgramV1Dir, {{"worker", {{"instance_limit", 1}}}}).is_object());
  ASSERT_EQ(Invoke(port_, "worker", {{"op", "spin"}}, "mode=enqueue").status, 202u);
  // A client waits (30 s) for a message queued behind the spin.
  HttpResult waiting;
  std::thread client([&, port = port_] {
    waiting = Invoke(port, "worker", {{"n", "late"}}, "timeout_ms=30000", milliseconds(40000));
  });
  ASSERT_TRUE(
      Eventually([&] { return Get(InstanceNumbered("worker", 1), "queued", int64_t{0}) >= 1; },
                 milliseconds(5000)));
  const Clock::time_point start = Clock::now();
  EXPECT_TRUE(server_.Stop()) << "reef serve did not stop within 5 s of SIGTERM";
  client.join();
  port_ = 0;
  // It is answered at the stop, not cut off or left to its timeout.
  EXPECT_EQ(waiting.status, 503u) << waiting.text;
  EXPECT_EQ(ErrorCode(waiting), "unavailable") << waiting.text;
  EXPECT_LT(Clock::now() - start, milliseconds(5000));
}

// ---- Bad input --------------------------------------------------------------------------------

TEST_F(ProgramTest, InvalidProgramIs400WithAReasonAndKeepsTheCurrentProgram) {
  EXPECT_EQ(HttpGet(port_, "/programs/current").status, 404u);
  EXPECT_EQ(Invoke(port_, "counter", {{"op", "get"}}).status, 404u);
  ASSERT_TRUE(Deploy(kProgramV1Dir).is_object());
  HttpResult current = HttpGet(port_, "/programs/current");
  ASSERT_EQ(current.status, 200u) << current.text;

  std::string error;
  const json good = ProgramBody(kProgramV1Dir, json::object(), error);
  ASSERT_EQ(error, "");
  struct BadProgram {
    const char* what;
    std::function<void(json&)> spoil;
    const char* named;  // the message names this
  };
  const BadProgram kBad[] = {
      {"unit of an unknown module",
       [](json& b) { b["manifest"]["units"]["worker"]["module"] = "ghost"; }, "ghost"},
      {"bad unit name",
       [](json& b) {
         b["manifest"]["units"]["Bad Name"] = {{"module", "worker"}};
       },
       "Bad Name"},
      {"unknown placement",
       [](json& b) { b["manifest"]["units"]["worker"]["placement"] = "everywhere"; }, "placement"},
      {"instance_limit 0", [](json& b) { b["manifest"]["units"]["worker"]["instance_limit"] = 0; },
       "instance_limit"},
      {"module bytes missing", [](json& b) { b["modules"].erase("worker"); }, "worker"},
      {"module not wasm", [](json& b) { b["modules"]["worker"] = Base64("not wasm"); }, "worker"},
      {"module not base64", [](json& b) { b["modules"]["worker"] = "!!!"; }, "worker"},
      {"handler not exported",
       [](json& b) { b["manifest"]["units"]["counter"]["handler"] = "no_such_export"; },
       "no_such_export"},
      {"manifest missing", [](json& b) { b.erase("manifest"); }, "manifest"},
  };
  for (const BadProgram& bad : kBad) {
    SCOPED_TRACE(bad.what);
    json body = good;
    bad.spoil(body);
    HttpResult r = Post(port_, "/programs", body);
    EXPECT_EQ(r.status, 400u) << r.text;
    EXPECT_EQ(ErrorCode(r), "invalid_argument") << r.text;
    EXPECT_NE(ErrorMessage(r).find(bad.named), std::string::npos) << r.text;
  }
  HttpResult not_json = HttpCall(port_, http::verb::post, "/programs", "{not json");
  EXPECT_EQ(not_json.status, 400u) << not_json.text;

  // The program in place is the same, and it still answers.
  HttpResult still = HttpGet(port_, "/programs/current");
  ASSERT_EQ(still.status, 200u) << still.text;
  EXPECT_EQ(still.body, current.body);
  HttpResult worker = Invoke(port_, "worker", {{"n", 1}});
  EXPECT_EQ(worker.status, 200u) << worker.text;
  EXPECT_EQ(Get(ResultOf(worker), "version", 0), 1) << worker.text;
}

TEST_F(ProgramTest, UnknownUnitIs404AndBadInvocationParametersAre400) {
  ASSERT_TRUE(Deploy(kProgramV1Dir).is_object());
  HttpResult unknown = Invoke(port_, "nope", {{"op", "get"}});
  EXPECT_EQ(unknown.status, 404u) << unknown.text;
  EXPECT_EQ(HttpGet(port_, "/units/nope/instances").status, 404u);
  for (const char* query :
       {"mode=sometimes", "instance=abc", "instance=-1", "timeout_ms=soon", "timeout_ms=60001"}) {
    SCOPED_TRACE(query);
    HttpResult r = Invoke(port_, "counter", {{"op", "get"}}, query);
    EXPECT_EQ(r.status, 400u) << r.text;
    EXPECT_EQ(ErrorCode(r), "invalid_argument") << r.text;
  }
  HttpResult not_json = HttpCall(port_, http::verb::post, "/units/counter/invoke", "{\"op\": ");
  EXPECT_EQ(not_json.status, 400u) << not_json.text;
  EXPECT_EQ(CounterCount(), 0) << "a rejected invocation reached the counter";
}

TEST(ProgramAuthTest, ProgramAndUnitRoutesNeedTheAuthToken) {
  ReefServer server(kReefBinary, {"--auth-token", "s3cret"});
  std::string started = server.Start();
  ASSERT_EQ(started, "");
  const uint16_t port = server.port();
  std::string error;
  const std::string body = ProgramBody(kProgramV1Dir, nullptr, error).dump();
  ASSERT_EQ(error, "");

  EXPECT_EQ(HttpCall(port, http::verb::post, "/programs", body).status, 401u);
  EXPECT_EQ(HttpCall(port, http::verb::post, "/programs", body, "wrong").status, 401u);
  ASSERT_EQ(HttpCall(port, http::verb::post, "/programs", body, "s3cret").status, 200u);
  for (const char* target :
       {"/programs/current", "/units", "/units/worker/instances", "/reactors"}) {
    SCOPED_TRACE(target);
    EXPECT_EQ(HttpGet(port, target).status, 401u);
    EXPECT_EQ(HttpGet(port, target, "s3cret").status, 200u);
  }
  const std::string message = json{{"op", "add"}}.dump();
  EXPECT_EQ(HttpCall(port, http::verb::post, "/units/counter/invoke", message).status, 401u);
  EXPECT_EQ(HttpCall(port, http::verb::post, "/units/counter/instances/1/kill", "").status, 401u);
  EXPECT_EQ(HttpCall(port, http::verb::post, "/reactors/0/drain", "").status, 401u);
  HttpResult invoked = HttpCall(port, http::verb::post, "/units/counter/invoke", message, "s3cret");
  EXPECT_EQ(invoked.status, 200u) << invoked.text;
  EXPECT_EQ(Get(ResultOf(invoked), "count", 0), 1) << "an unauthorized invocation ran";
}

}  // namespace
}  // namespace reef::testing
