// Integration tests of programs and units (issue 7, spec 003), part two: reactors and
// backpressure, deploys, bad input and the auth token. The program, the server and the
// ProgramTest fixture are described in program_test_support.h; program_test.cc holds issue 7's
// acceptance, routing, eviction and poisoning.
//
// One behaviour per test: reactor drain, inbox backpressure (429, 503) and wait timeouts (504),
// what a redeploy reports and does to accepted work, concurrent deploys, the current program's
// description, a restart, the auth token, and bad input.
#include "integration/program_test_support.h"

namespace reef::testing {
namespace {

// ---- Reactors and backpressure ----------------------------------------------------------------

TEST_F(ProgramTest, DrainMovesInstancesOffTheReactorAndInvocationsGoOn) {
  ASSERT_TRUE(Deploy(kProgramV1Dir).is_object());
  if (Reactors().size() < 2) GTEST_SKIP() << "one reactor: nothing to drain to";
  ASSERT_EQ(Invoke(port_, "counter", {{"op", "add"}}).status, 200u);
  // Given: worker instances spread over the reactors (4 clients at once, round-robin).
  InvokeWorkersFromFourClients();
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
  // A timeout in the body instead of the query is refused, not ignored.
  HttpResult in_body =
      Post(port_, "/reactors/" + std::to_string(drained) + "/drain", json{{"timeout_ms", 10}});
  EXPECT_EQ(in_body.status, 400u) << in_body.text;
  EXPECT_NE(in_body.text.find("?timeout_ms="), std::string::npos) << in_body.text;
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
