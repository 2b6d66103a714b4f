// Manual groups on a free-running runtime (ActorGroup): the live image's actors share the
// fleet's reactors, yet run only in Tick, in actor-ref order, with logs and events of their
// own, and cannot reach the fleet's other actors. Run under ThreadSanitizer (test-tsan).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "actor/runtime.h"
#include "unit/actor/test_guests.h"

namespace reef::actor {
namespace {

using std::chrono::milliseconds;
using test_support::Json;
using test_support::LoadGuest;

std::unique_ptr<Runtime> Fleet(uint32_t reactors) {
  RuntimeOptions options;
  options.mode = SchedulingMode::kFreeRunning;
  options.reactors = reactors;
  auto runtime = Runtime::Create(options);
  EXPECT_TRUE(runtime.ok()) << runtime.status().ToString();
  return std::move(*runtime);
}

std::shared_ptr<ActorGroup> ManualGroup(Runtime& runtime) {
  auto group = runtime.CreateGroup(SchedulingMode::kManual);
  EXPECT_TRUE(group.ok()) << group.status().ToString();
  return *group;
}

ActorRef SpawnIn(Runtime& runtime, const std::shared_ptr<ActorGroup>& group, int64_t state,
                 const std::string& guest = "counter") {
  SpawnOptions options;
  options.group = group;
  auto ref = runtime.Spawn(LoadGuest(guest), Value::Int(state), options);
  EXPECT_TRUE(ref.ok()) << ref.status().ToString();
  return *ref;
}

Value SendFive(const ActorRef& target) {
  Record fields;
  fields.emplace("op", Value::String("send"));
  fields.emplace("value", Value::Int(5));
  fields.emplace("target", Value::Ref(target));
  return Value::RecordOf(std::move(fields));
}

// Polls `ref` until `done` holds for its snapshot (or 10 s).
template <typename Pred>
ActorSnapshot WaitFor(Runtime& runtime, const ActorRef& ref, Pred done) {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    auto snapshot = runtime.Inspect(ref);
    EXPECT_TRUE(snapshot.ok()) << snapshot.status().ToString();
    if (!snapshot.ok() || done(*snapshot) || std::chrono::steady_clock::now() > until) {
      return snapshot.ok() ? *snapshot : ActorSnapshot{ref};
    }
    std::this_thread::sleep_for(milliseconds(5));
  }
}

TEST(ManualGroupTest, ItsActorsRunOnlyInTickWhileTheFleetRunsItsOwn) {
  auto fleet = Fleet(2);
  auto group = ManualGroup(*fleet);
  // Given spec 001's walk-through in a manual group, and a free-running counter beside it
  ActorRef sender = SpawnIn(*fleet, group, 0);
  ActorRef receiver = SpawnIn(*fleet, group, 10);
  auto free = fleet->Spawn(LoadGuest("counter"), Value::Int(0));
  ASSERT_TRUE(free.ok());
  ASSERT_TRUE(fleet->TrySend(sender, SendFive(receiver)).status.ok());
  ASSERT_TRUE(fleet->TrySend(*free, Json(R"({"op":"add","value":3})")).status.ok());

  // then the free-running counter runs at once, the group's actors not at all
  EXPECT_EQ(WaitFor(*fleet, *free, [](const ActorSnapshot& s) { return s.state.as_int() == 3; })
                .state.as_int(),
            3);
  std::this_thread::sleep_for(milliseconds(50));
  ActorSnapshot waiting = *fleet->Inspect(sender);
  EXPECT_EQ(waiting.state.as_int(), 0);
  EXPECT_EQ(waiting.queued.size(), 1u);

  // when ticked with a budget that finishes a handler per slice
  auto first = fleet->Tick(1, 1'000'000, group.get());
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  auto second = fleet->Tick(1, 1'000'000, group.get());
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  // then the walk-through ends as in a manual runtime: 1 at the sender, 15 at the receiver,
  // two commits over the two ticks whichever ref sorts first
  EXPECT_EQ(fleet->Inspect(sender)->state.as_int(), 1);
  EXPECT_EQ(fleet->Inspect(receiver)->state.as_int(), 15);
  EXPECT_EQ(first->commits + second->commits, 2u);
  EXPECT_EQ(fleet->Inspect(sender)->reactor, group->home);
  EXPECT_EQ(fleet->Inspect(receiver)->reactor, group->home);
}

TEST(ManualGroupTest, ListsLogsAndEventsAreTheGroupsOwn) {
  auto fleet = Fleet(2);
  auto group = ManualGroup(*fleet);
  ActorRef mine = SpawnIn(*fleet, group, 0, "probe");
  auto other = fleet->Spawn(LoadGuest("probe"), Value::Int(0));
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE(
      fleet->TrySend(*other, Json(R"({"op":"log","level":"info","text":"fleet"})")).status.ok());
  ASSERT_TRUE(
      fleet->TrySend(mine, Json(R"({"op":"log","level":"info","text":"image"})")).status.ok());
  WaitFor(*fleet, *other, [](const ActorSnapshot& s) { return s.state.as_int() == 1; });
  ASSERT_TRUE(fleet->Tick(1, 1'000'000, group.get()).ok());

  auto listed = fleet->List(group.get());
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].ref, mine);
  auto fleet_listed = fleet->List();
  ASSERT_EQ(fleet_listed.size(), 1u);
  EXPECT_EQ(fleet_listed[0].ref, *other);

  auto group_logs = group->logs.History({}, 0, 100);
  ASSERT_TRUE(group_logs.ok());
  ASSERT_EQ(group_logs->entries.size(), 1u);
  EXPECT_EQ(group_logs->entries[0].message, "image");
  auto fleet_logs = fleet->logs().History({}, 0, 100);
  ASSERT_TRUE(fleet_logs.ok());
  ASSERT_EQ(fleet_logs->entries.size(), 1u);
  EXPECT_EQ(fleet_logs->entries[0].message, "fleet");
  auto events = group->events.Recent(0, 100, {});
  ASSERT_TRUE(events.ok());
  for (const LifecycleEvent& event : events->events) EXPECT_EQ(event.actor, mine);
  EXPECT_FALSE(events->events.empty());

  EXPECT_TRUE(fleet->CheckMember(mine, *group).ok());
  EXPECT_EQ(fleet->CheckMember(*other, *group).code(), Code::kNotFound);
}

TEST(ManualGroupTest, GuestCodeOfOneGroupCannotReachAnother) {
  auto fleet = Fleet(2);
  auto group = ManualGroup(*fleet);
  ActorRef mine = SpawnIn(*fleet, group, 0);
  auto other = fleet->Spawn(LoadGuest("counter"), Value::Int(0));
  ASSERT_TRUE(other.ok());
  // A group actor sending to a fleet actor: the transition fails as for an unknown actor
  ASSERT_TRUE(fleet->TrySend(mine, SendFive(*other)).status.ok());
  ASSERT_TRUE(fleet->Tick(1, 1'000'000, group.get()).ok());
  ActorSnapshot failed = *fleet->Inspect(mine);
  EXPECT_EQ(failed.status, ActorStatus::kFailed);
  ASSERT_TRUE(failed.failure.has_value());
  EXPECT_NE(failed.failure->find("unknown actor"), std::string::npos) << *failed.failure;
  // and the other way round
  ASSERT_TRUE(fleet->TrySend(*other, SendFive(mine)).status.ok());
  ActorSnapshot other_failed = WaitFor(
      *fleet, *other, [](const ActorSnapshot& s) { return s.status == ActorStatus::kFailed; });
  EXPECT_EQ(other_failed.status, ActorStatus::kFailed);
  EXPECT_EQ(fleet->Inspect(*other)->state.as_int(), 0);
}

TEST(ManualGroupTest, TickAsyncHoldsNoCallerAndStopsWhenAskedTo) {
  auto fleet = Fleet(1);
  auto group = ManualGroup(*fleet);
  ActorRef counter = SpawnIn(*fleet, group, 0);
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(fleet->TrySend(counter, Json(R"({"op":"add","value":1})")).status.ok());
  }
  // keep_going, asked before each tick, answers false on its third question: two ticks run,
  // one commit each
  std::atomic<int> asked{0};
  std::promise<Result<TickReport>> answer;
  auto future = answer.get_future();
  fleet->TickAsync(
      group, 100, 1'000'000, [&asked] { return ++asked < 3; },
      [&answer](Result<TickReport> report) { answer.set_value(std::move(report)); });
  ASSERT_EQ(future.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  Result<TickReport> report = future.get();
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->commits, 2u);
  EXPECT_EQ(asked.load(), 3);
  EXPECT_EQ(fleet->Inspect(counter)->state.as_int(), 2);
  // and a caller already gone (keep_going false at once) runs no tick at all
  std::promise<Result<TickReport>> none;
  fleet->TickAsync(
      group, 5, 1'000'000, [] { return false; },
      [&none](Result<TickReport> r) { none.set_value(std::move(r)); });
  Result<TickReport> empty = none.get_future().get();
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  EXPECT_EQ(empty->slices, 0u);
  EXPECT_EQ(fleet->Inspect(counter)->state.as_int(), 2);

  // A free-running group cannot be ticked
  auto refused = fleet->Tick(1);
  EXPECT_EQ(refused.status().code(), Code::kFailedPrecondition);
}

TEST(ManualGroupTest, ALongTickLetsTheReactorsOtherWorkRunBetweenItsSlices) {
  auto fleet = Fleet(1);
  auto group = ManualGroup(*fleet);
  // Given 40 actors of the group whose handlers spin, and a tick of 1,000,000 instructions
  // per actor (one slice each: hundreds of milliseconds in all)
  std::vector<ActorRef> spinners;
  for (int i = 0; i < 40; ++i) {
    spinners.push_back(SpawnIn(*fleet, group, 0, "probe"));
    ASSERT_TRUE(fleet->TrySend(spinners.back(), Json(R"({"op":"spin"})")).status.ok());
  }
  std::atomic<bool> tick_ended{false};
  std::promise<Result<TickReport>> answer;
  auto future = answer.get_future();
  fleet->TickAsync(group, 1, 1'000'000, nullptr, [&tick_ended, &answer](Result<TickReport> report) {
    tick_ended = true;
    answer.set_value(std::move(report));
  });
  // when an operation on an actor of the reactor comes in while the tick runs
  std::this_thread::sleep_for(milliseconds(2));
  auto snapshot = fleet->Inspect(spinners.front());
  const bool answered_mid_tick = !tick_ended.load();
  // then it was answered between two of the tick's slices, before the tick ended
  ASSERT_TRUE(snapshot.ok()) << snapshot.status().ToString();
  EXPECT_TRUE(answered_mid_tick);
  ASSERT_EQ(future.wait_for(std::chrono::seconds(60)), std::future_status::ready);
  Result<TickReport> report = future.get();
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->slices, 40u);  // and the tick still gave every actor its one slice
  EXPECT_EQ(report->instructions, 40u * 1'000'000u);
  for (const ActorRef& ref : spinners) ASSERT_TRUE(fleet->Kill(ref).ok());
}

TEST(ManualGroupTest, DrainLeavesTheGroupOnItsHomeReactor) {
  auto fleet = Fleet(2);
  auto group = ManualGroup(*fleet);
  ActorRef mine = SpawnIn(*fleet, group, 0);
  SpawnOptions pinned;
  pinned.reactor = group->home;
  auto other = fleet->Spawn(LoadGuest("counter"), Value::Int(0), pinned);
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE(fleet->Drain(group->home).ok());
  EXPECT_NE(fleet->Inspect(*other)->reactor, group->home);  // the fleet's actor moved
  EXPECT_EQ(fleet->Inspect(mine)->reactor, group->home);    // the group's stayed
  ASSERT_TRUE(fleet->TrySend(mine, Json(R"({"op":"add","value":2})")).status.ok());
  ASSERT_TRUE(fleet->Tick(1, 1'000'000, group.get()).ok());
  EXPECT_EQ(fleet->Inspect(mine)->state.as_int(), 2);
  // and a group actor cannot be pinned elsewhere
  SpawnOptions elsewhere;
  elsewhere.group = group;
  elsewhere.reactor = group->home == 0 ? 1 : 0;
  EXPECT_EQ(fleet->Spawn(LoadGuest("counter"), Value::Int(0), elsewhere).status().code(),
            Code::kInvalidArgument);
}

TEST(ManualGroupTest, RemoveGroupRemovesEveryActorEvenMidInvocation) {
  auto fleet = Fleet(2);
  auto group = ManualGroup(*fleet);
  ActorRef spinning = SpawnIn(*fleet, group, 0, "probe");
  ActorRef idle = SpawnIn(*fleet, group, 0, "probe");
  auto other = fleet->Spawn(LoadGuest("probe"), Value::Int(0));
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE(fleet->TrySend(spinning, Json(R"({"op":"spin"})")).status.ok());
  ASSERT_TRUE(fleet->Tick(2, 1'000, group.get()).ok());
  ASSERT_EQ(fleet->Inspect(spinning)->status, ActorStatus::kRunning);

  ASSERT_TRUE(fleet->RemoveGroup(*group).ok());
  EXPECT_EQ(fleet->Inspect(spinning).status().code(), Code::kNotFound);
  EXPECT_EQ(fleet->Inspect(idle).status().code(), Code::kNotFound);
  EXPECT_EQ(fleet->TrySend(idle, Value::Int(1)).status.code(), Code::kNotFound);
  EXPECT_TRUE(fleet->List(group.get()).empty());
  EXPECT_TRUE(fleet->Inspect(*other).ok());              // the fleet's own actor stays
  ASSERT_TRUE(fleet->Tick(1, 1'000, group.get()).ok());  // nothing left to run
}

}  // namespace
}  // namespace reef::actor
