// Durable unit instances (issue 16; docs/programs.md "Durable instances"): a reopened program
// runtime gives every instance back to its unit with its state, incarnation and inbox; a message
// one instance sent another across reactors arrives once; an instance whose code the restored
// program does not have finishes on its old code and goes; --ephemeral starts over. Real
// guests (tests/actors/probe.c), real reactor threads, a real journal in a temporary directory.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "apps/program/program_runtime.h"
#include "program_runtime_test_support.h"

namespace reef::apps::program {
namespace {

using namespace test_support;  // NOLINT: the fixture and helpers of program_runtime_test_support.h

class ProgramDurableTest : public ProgramRuntimeTest {
 protected:
  // The state of `unit`'s instance `instance`, through a {"op":"reply"} invocation.
  Value StateOf(const std::string& unit, uint32_t instance) {
    InvokeOutcome got = Invoke(unit, R"({"op":"reply"})", InvokeMode::kWait, instance);
    EXPECT_EQ(got.failure, InvokeFailure::kNone) << got.message;
    return got.result;
  }
};

TEST_F(ProgramDurableTest, InstancesComeBackWithStateIncarnationAndInbox) {
  Deploy({{"c", kSingleton}, {"r", Replicated(2)}});
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(Invoke("c", R"({"op":"add","value":2})").failure, InvokeFailure::kNone);
  }
  ASSERT_EQ(Invoke("r", R"({"op":"fail"})").failure, InvokeFailure::kFailed);  // poisoned once
  ASSERT_EQ(Invoke("r", R"({"op":"add","value":7})", InvokeMode::kWait, 1).failure,
            InvokeFailure::kNone);
  // A spin holds c's inbox: what waits behind it is acknowledged (enqueue) but not handled.
  ASSERT_EQ(Invoke("c", R"({"op":"spin"})", InvokeMode::kEnqueue).failure, InvokeFailure::kNone);
  ASSERT_TRUE(WaitForStatus("c", 0, actor::ActorStatus::kRunning, milliseconds(5'000)));
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(Invoke("c", R"({"op":"add","value":100})", InvokeMode::kTry).failure,
              InvokeFailure::kNone);
  }
  const ActorRef c_ref = Instances("c").at(0).actor;

  Open();  // a restart: the spin, cut short, runs again and holds the inbox again
  auto c = Instances("c");
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].instance, 1u);
  EXPECT_EQ(c[0].actor, c_ref);
  EXPECT_FALSE(c[0].retired);
  ASSERT_TRUE(WaitForStatus("c", 0, actor::ActorStatus::kRunning, milliseconds(5'000)));
  EXPECT_EQ(Instances("c").at(0).queued, 3u);
  ASSERT_TRUE(KillRunning("c", 1).ok());  // the spin is dropped (poisoned: state back to 0)
  EXPECT_EQ(StateOf("c", 1), Value::Int(300));
  EXPECT_EQ(Instances("c").at(0).incarnation, 2u);
  auto r = Instances("r");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].incarnation, 2u);
  EXPECT_EQ(r[0].failure, std::optional<std::string>("asked to fail"));
  EXPECT_EQ(StateOf("r", 1), Value::Int(7));
  // New instances get new numbers.
  ASSERT_EQ(Invoke("r", R"({"op":"spin"})", InvokeMode::kEnqueue, 1).failure, InvokeFailure::kNone);
  ASSERT_TRUE(WaitForStatus("r", 0, actor::ActorStatus::kRunning, milliseconds(5'000)));
  InvokeOutcome second = Invoke("r", R"({"op":"reply"})");
  EXPECT_EQ(second.failure, InvokeFailure::kNone) << second.message;
  EXPECT_EQ(second.instance, 2u);
  ASSERT_TRUE(KillRunning("r", 1).ok());
}

TEST_F(ProgramDurableTest, MessagesBetweenInstancesOnTwoReactorsArriveOnce) {
  Deploy({{"a", kSingleton}, {"b", kSingleton}});
  ASSERT_EQ(Invoke("a", R"({"op":"reply"})").result, Value::Int(0));  // spawns instance 1
  ASSERT_EQ(Invoke("b", R"({"op":"reply"})").result, Value::Int(0));
  const InstanceInfo a = Instances("a").at(0), b = Instances("b").at(0);
  EXPECT_NE(a.reactor, b.reactor) << "singletons go to the least loaded reactor";
  // a sends 200 adds to b (on the other reactor), 10 times; b's inbox fills while they fly.
  const std::string send =
      R"({"op":"send","count":20,"target":{"$actor":")" + std::string(b.actor.str()) + R"("}})";
  for (int i = 0; i < 10; ++i) {
    ASSERT_EQ(Invoke("a", send, InvokeMode::kEnqueue).failure, InvokeFailure::kNone);
  }
  Open();  // some of them may still have been on their way
  EXPECT_EQ(StateOf("a", 1), Value::Int(10));
  EXPECT_EQ(StateOf("b", 1), Value::Int(200));
}

TEST_F(ProgramDurableTest, AnInstanceOfCodeTheRestoredProgramLacksFinishesOnItsOldCode) {
  Deploy({{"c", kSingleton}});
  json changed = kSingleton;
  changed["initial_state"] = 50;
  Deploy({{"c", changed}});  // generation 2: c's code changed
  ASSERT_EQ(Invoke("c", R"({"op":"add","value":1})").failure, InvokeFailure::kNone);
  const ActorRef old_ref = Instances("c").at(0).actor;
  // Generation 2's program file is lost: the restart redeploys generation 1.
  std::filesystem::remove(dir_ / "programs" / "program-2.json");
  Open();
  ASSERT_EQ(runtime_->Current()->generation, 1u);
  // The restored instance is retired; it goes once idle, and c gets a new one of its code.
  for (int i = 0; i < 500 && runtime_->runtime().Inspect(old_ref).ok(); ++i) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_EQ(runtime_->runtime().Inspect(old_ref).status().code(), Code::kNotFound);
  InvokeOutcome fresh = Invoke("c", R"({"op":"reply"})");
  EXPECT_EQ(fresh.failure, InvokeFailure::kNone) << fresh.message;
  EXPECT_EQ(fresh.result, Value::Int(0));
  EXPECT_EQ(fresh.instance, 2u) << "instance 1 was the retired one's number";
}

TEST_F(ProgramDurableTest, ARetiredInstanceStaysRetiredWhenItsOldCodeComesBack) {
  Deploy({{"c", kSingleton}});
  ASSERT_EQ(Invoke("c", R"({"op":"spin"})", InvokeMode::kEnqueue).failure, InvokeFailure::kNone);
  ASSERT_TRUE(WaitForStatus("c", 0, actor::ActorStatus::kRunning, milliseconds(5'000)));
  json changed = kSingleton;
  changed["initial_state"] = 50;
  Deploy({{"c", changed}});     // instance 1 is retired, still spinning
  Deploy({{"c", kSingleton}});  // c's first code again: a new unit state, not instance 1's
  ASSERT_EQ(Invoke("c", R"({"op":"add","value":1})").failure, InvokeFailure::kNone);
  Open();
  auto c = Instances("c");
  ASSERT_EQ(c.size(), 2u);
  uint32_t live = 0;
  for (const InstanceInfo& info : c) {
    EXPECT_EQ(info.retired, info.instance == 1) << info.instance;
    if (!info.retired) live = info.instance;
  }
  EXPECT_EQ(StateOf("c", live), Value::Int(1));
  InvokeOutcome routed = Invoke("c", R"({"op":"reply"})");  // AnyOrSpawn: the live one
  EXPECT_EQ(routed.instance, live);
  ASSERT_TRUE(KillRunning("c", 1).ok());
}

TEST_F(ProgramDurableTest, InstancesWaitForAProgramWhenNoneComesBackAtStart) {
  Deploy({{"c", kSingleton}});
  ASSERT_EQ(Invoke("c", R"({"op":"add","value":9})").failure, InvokeFailure::kNone);
  std::filesystem::remove(dir_ / "programs" / "program-1.json");
  Open();
  EXPECT_EQ(runtime_->Current(), nullptr);
  Deploy({{"c", kSingleton}});  // the same code: the instance is c's again, state and all
  auto c = Instances("c");
  ASSERT_EQ(c.size(), 1u);
  EXPECT_FALSE(c[0].retired);
  EXPECT_EQ(StateOf("c", c[0].instance), Value::Int(9));
}

TEST_F(ProgramDurableTest, ACallInProgressAtAShutdownIsMadeAgainAfterTheRestart) {
  json b = kSingleton;
  b["initial_state"] = 7;
  Deploy({{"a", kSingleton}, {"b", b}});
  ASSERT_EQ(Invoke("b", R"({"op":"spin"})", InvokeMode::kEnqueue).failure, InvokeFailure::kNone);
  ASSERT_TRUE(WaitForStatus("b", 0, actor::ActorStatus::kRunning, milliseconds(5'000)));
  const std::string call = R"({"op":"call","message":{"op":"reply"},"timeout":600000,)"
                           R"("target":{"$actor":")" +
                           std::string(Instances("b").at(0).actor.str()) + R"("}})";
  ASSERT_EQ(Invoke("a", call, InvokeMode::kEnqueue).failure, InvokeFailure::kNone);
  ASSERT_TRUE(WaitForStatus("a", 0, actor::ActorStatus::kAwaiting, milliseconds(5'000)));
  // a awaits as soon as its call is sent; the request joins b's mailbox a moment later (a
  // shutdown before that loses it with a's uncommitted invocation, and the test would see
  // one request after the restart instead of two).
  ASSERT_TRUE(WaitForInstance(
      "b", 0, [](const InstanceInfo& info) { return info.queued == 1; }, milliseconds(5'000)));
  // The shutdown leaves a's call unanswered (it does not commit an error); the restart runs
  // a's invocation again, which calls b again.
  Open();
  ASSERT_TRUE(WaitForStatus("a", 0, actor::ActorStatus::kAwaiting, milliseconds(5'000)));
  ASSERT_TRUE(WaitForStatus("b", 0, actor::ActorStatus::kRunning, milliseconds(5'000)));
  // a's new call travels to b's reactor after a awaits; it arrives behind the first one.
  EXPECT_TRUE(WaitForInstance(
      "b", 0, [](const InstanceInfo& info) { return info.queued == 2; }, milliseconds(5'000)))
      << "the first request and the one made again; queued " << Instances("b").at(0).queued;
  ASSERT_TRUE(KillRunning("b", 1).ok());  // b resets to 7 and answers both requests
  EXPECT_EQ(StateOf("a", 1), Value::Int(7));
}

TEST_F(ProgramDurableTest, TagsThisRuntimeDidNotWriteAreRefusedWithoutHarm) {
  Deploy({{"c", kSingleton}, {"r", Replicated(4)}});
  ASSERT_EQ(Invoke("c", R"({"op":"add","value":1})").failure, InvokeFailure::kNone);
  ASSERT_EQ(Invoke("r", R"({"op":"add","value":1})").failure, InvokeFailure::kNone);
  const ActorRef c = Instances("c").at(0).actor, r = Instances("r").at(0).actor;
  // Fields of the wrong type, and an instance number past 32 bits.
  ASSERT_TRUE(runtime_->runtime()
                  .SetTag(c, R"({"unit":"c","instance":1,"code":"x","retired":1,"generation":"2"})")
                  .ok());
  ASSERT_TRUE(
      runtime_->runtime().SetTag(r, R"({"unit":"r","instance":99999999999,"code":"x"})").ok());
  Open();  // neither throws nor attaches them
  for (const char* unit : {"c", "r"}) {
    for (const InstanceInfo& info : Instances(unit)) {
      EXPECT_NE(info.actor, c) << unit;
      EXPECT_NE(info.actor, r) << unit;
    }
  }
  InvokeOutcome fresh = Invoke("c", R"({"op":"reply"})");
  EXPECT_EQ(fresh.failure, InvokeFailure::kNone) << fresh.message;
  EXPECT_EQ(fresh.result, Value::Int(0)) << "a new instance, not the refused one";
}

TEST_F(ProgramDurableTest, EphemeralInstancesStartOverAfterARestart) {
  Open(/*durable=*/false);
  Deploy({{"c", kSingleton}});
  ASSERT_EQ(Invoke("c", R"({"op":"add","value":3})").failure, InvokeFailure::kNone);
  Open(/*durable=*/false);
  EXPECT_TRUE(Instances("c").empty());
  InvokeOutcome fresh = Invoke("c", R"({"op":"reply"})");
  EXPECT_EQ(fresh.failure, InvokeFailure::kNone) << fresh.message;
  EXPECT_EQ(fresh.result, Value::Int(0));
}

}  // namespace
}  // namespace reef::apps::program
