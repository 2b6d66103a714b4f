// Reactors and the unit control operations (docs/programs.md "Reactors and draining"): where
// new instances go, drains (also asynchronous, and ended by a stop), and instance views and
// kills on the control threads. Real guests (tests/actors/probe.c), real reactor threads.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "actor/actor.h"
#include "apps/program/program_runtime.h"
#include "program_runtime_test_support.h"

namespace reef::apps::program {
namespace {

using namespace test_support;  // NOLINT: the fixture and helpers of program_runtime_test_support.h

TEST_F(ProgramRuntimeTest, DrainMovesInstancesWithTheirStateToAnotherReactor) {
  Deploy({{"c", kSingleton}, {"r", Replicated(4)}});
  ASSERT_EQ(Invoke("c", R"({"op":"add","value":7})").failure, InvokeFailure::kNone);
  uint32_t from = Instances("c").at(0).reactor;
  auto drained = runtime_->Drain(from, milliseconds(5'000));
  ASSERT_TRUE(drained.ok()) << drained.status().ToString();
  EXPECT_EQ(drained->liveness, actor::ReactorLiveness::kDown);
  EXPECT_EQ(drained->actors, 0u);
  EXPECT_NE(Instances("c").at(0).reactor, from);
  EXPECT_EQ(Invoke("c", R"({"op":"reply"})").result, Value::Int(7));
  // New instances avoid the drained reactor.
  ASSERT_EQ(Invoke("r", R"({"op":"spin"})", InvokeMode::kEnqueue).failure, InvokeFailure::kNone);
  ASSERT_EQ(Invoke("r", R"({"op":"spin"})", InvokeMode::kEnqueue).failure, InvokeFailure::kNone);
  for (const InstanceInfo& i : Instances("r")) EXPECT_NE(i.reactor, from);
  // The last Up reactor cannot be drained.
  EXPECT_EQ(runtime_->Drain(1 - from, milliseconds(100)).status().code(),
            Code::kFailedPrecondition);
  EXPECT_EQ(runtime_->Drain(7, milliseconds(100)).status().code(), Code::kNotFound);
  ASSERT_TRUE(KillRunning("r", 1).ok());
  ASSERT_TRUE(KillRunning("r", 2).ok());
}

TEST_F(ProgramRuntimeTest, DrainAsyncAnswersEachDrainOnceAndRefusesPastItsQueue) {
  // Given a singleton whose instance spins, so a drain of its reactor waits its whole timeout
  Deploy({{"c", kSingleton}});
  ASSERT_EQ(Invoke("c", R"({"op":"spin"})", InvokeMode::kTry).failure, InvokeFailure::kNone);
  uint32_t busy = Instances("c").at(0).reactor;
  // when 14 drains of that reactor (300 ms each) are handed over at once
  constexpr int kDrains = 14;
  std::mutex mu;
  std::condition_variable answered;
  std::vector<Result<actor::ReactorInfo>> infos;
  for (int i = 0; i < kDrains; ++i) {
    runtime_->DrainAsync(busy, milliseconds(300), [&](Result<actor::ReactorInfo> info) {
      std::lock_guard lock(mu);
      infos.push_back(std::move(info));
      answered.notify_all();
    });
  }
  // then those taken end with the reactor still draining (the busy instance keeps it), the
  // rest are refused at once, and each is answered exactly once
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(
        answered.wait_for(lock, std::chrono::seconds(30), [&] { return infos.size() == kDrains; }));
  }
  int drained = 0, refused = 0;
  for (const auto& info : infos) {
    if (info.ok()) {
      EXPECT_EQ(info->liveness, actor::ReactorLiveness::kDraining);
      ++drained;
    } else {
      EXPECT_EQ(info.status().code(), Code::kUnavailable) << info.status().ToString();
      ++refused;
    }
  }
  // (8 wait in the queue; the two threads may or may not have taken theirs off it yet)
  EXPECT_GE(drained, static_cast<int>(ProgramRuntime::kMaxWaitingDrains));
  EXPECT_LE(drained, static_cast<int>(2 + ProgramRuntime::kMaxWaitingDrains));
  EXPECT_EQ(refused, kDrains - drained);
  ASSERT_TRUE(KillRunning("c", 1).ok());
}

TEST_F(ProgramRuntimeTest, NewInstancesGoToTheReactorHostingTheFewestActors) {
  // Given reactor 0 of the two crowded with 20 other actors of the fleet (as the image's are)
  auto module = wasm::Module::FromFile(std::string(REEF_GUEST_DIR) + "/probe.wasm");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto implementation = actor::MakeImplementation(*module, "probe");
  ASSERT_TRUE(implementation.ok()) << implementation.status().ToString();
  actor::SpawnOptions on_zero;
  on_zero.reactor = 0;
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(runtime_->runtime().Spawn(*implementation, Value::Int(0), on_zero).ok());
  }
  // when three singletons get their instances
  Deploy({{"a", kSingleton}, {"b", kSingleton}, {"c", kSingleton}});
  for (const char* unit : {"a", "b", "c"}) {
    ASSERT_EQ(Invoke(unit, R"({"op":"add","value":1})").failure, InvokeFailure::kNone) << unit;
  }
  // then all three are on the other reactor (round-robin would have put one or two on 0)
  for (const char* unit : {"a", "b", "c"}) EXPECT_EQ(Instances(unit).at(0).reactor, 1u) << unit;
}

TEST_F(ProgramRuntimeTest, ADrainInProgressEndsWhenTheRuntimeStops) {
  // Given a drain that would wait 30 s for a spinning instance to leave its reactor
  Deploy({{"c", kSingleton}});
  ASSERT_EQ(Invoke("c", R"({"op":"spin"})", InvokeMode::kTry).failure, InvokeFailure::kNone);
  uint32_t busy = Instances("c").at(0).reactor;
  std::promise<Result<actor::ReactorInfo>> answer;
  auto answered = answer.get_future();
  runtime_->DrainAsync(busy, milliseconds(30'000), [&answer](Result<actor::ReactorInfo> info) {
    answer.set_value(std::move(info));
  });
  std::this_thread::sleep_for(milliseconds(50));  // the drain is running (its first rounds)
  // when the shutdown begins (Node::Stop: before the server's graceful stop)
  runtime_->BeginStop();
  // then the drain is answered, unavailable, instead of holding the stop for its timeout
  ASSERT_EQ(answered.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  Result<actor::ReactorInfo> info = answered.get();
  EXPECT_EQ(info.status().code(), Code::kUnavailable) << info.status().ToString();
}

TEST_F(ProgramRuntimeTest, InstanceViewsAndKillsAnswerThroughTheControlThreads) {
  Deploy({{"c", kSingleton}});
  ASSERT_EQ(Invoke("c", R"({"op":"add","value":2})").failure, InvokeFailure::kNone);
  std::promise<Result<std::vector<InstanceInfo>>> listed;
  runtime_->InstancesAsync("c", [&listed](Result<std::vector<InstanceInfo>> instances) {
    listed.set_value(std::move(instances));
  });
  auto instances = listed.get_future().get();
  ASSERT_TRUE(instances.ok()) << instances.status().ToString();
  ASSERT_EQ(instances->size(), 1u);
  EXPECT_EQ(instances->at(0).status, actor::ActorStatus::kIdle);
  // An unknown unit and a kill of an idle instance answer their errors the same way
  std::promise<Result<std::vector<InstanceInfo>>> unknown;
  runtime_->InstancesAsync("nope", [&unknown](Result<std::vector<InstanceInfo>> none) {
    unknown.set_value(std::move(none));
  });
  EXPECT_EQ(unknown.get_future().get().status().code(), Code::kNotFound);
  std::promise<Status> killed;
  runtime_->KillAsync("c", instances->at(0).instance,
                      [&killed](Status status) { killed.set_value(std::move(status)); });
  EXPECT_EQ(killed.get_future().get().code(), Code::kFailedPrecondition);
  std::promise<Status> missing;
  runtime_->KillAsync("c", 99, [&missing](Status status) { missing.set_value(std::move(status)); });
  EXPECT_EQ(missing.get_future().get().code(), Code::kNotFound);
}

}  // namespace
}  // namespace reef::apps::program
