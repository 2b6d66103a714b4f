// The actor runtime in manual mode: spec 001's walk-through, every row of the transition
// table, lifecycle ordering, repair preconditions and logs.
#include "actor/runtime.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "core/json.h"
#include "unit/actor/test_guests.h"

namespace reef::actor {
namespace {

using test_support::Json;

using test_support::LoadGuest;

class RuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RuntimeOptions options;
    options.reactors = 2;  // manual mode still spreads actors over reactors
    auto runtime = Runtime::Create(options);
    ASSERT_TRUE(runtime.ok());
    runtime_ = std::move(*runtime);
  }

  ActorRef Spawn(const std::shared_ptr<const Implementation>& impl, int64_t state,
                 uint32_t capacity = 256) {
    SpawnOptions options;
    options.mailbox_capacity = capacity;
    auto ref = runtime_->Spawn(impl, Value::Int(state), options);
    EXPECT_TRUE(ref.ok()) << ref.status().ToString();
    return *ref;
  }
  void Send(const ActorRef& to, std::string_view json) {
    SendOutcome sent = runtime_->TrySend(to, Json(json));
    ASSERT_TRUE(sent.status.ok()) << sent.status.ToString();
  }
  ActorSnapshot Inspect(const ActorRef& ref) {
    auto snap = runtime_->Inspect(ref);
    EXPECT_TRUE(snap.ok()) << snap.status().ToString();
    return *snap;
  }
  // Ticks with a large budget until nothing is runnable (at most `ticks`).
  void Settle(uint32_t ticks = 50) { ASSERT_TRUE(runtime_->Tick(ticks, 1'000'000).ok()); }
  std::string SendJson(const ActorRef& target, int count) {
    return fmt::format(R"({{"op":"send","count":{},"target":{{"$actor":"{}"}}}})", count,
                       target.str());
  }

  std::unique_ptr<Runtime> runtime_;
  std::shared_ptr<const Implementation> counter_ = LoadGuest("counter");
  std::shared_ptr<const Implementation> probe_ = LoadGuest("probe");
};

// --- spec 001's walk-through --------------------------------------------------------------

TEST_F(RuntimeTest, SenderCommitsOneAndReceiverFifteenAfterTicks) {
  ActorRef sender = Spawn(counter_, 0);
  ActorRef receiver = Spawn(counter_, 10);
  Send(sender,
       fmt::format(R"({{"op":"send","value":5,"target":{{"$actor":"{}"}}}})", receiver.str()));
  auto report = runtime_->Tick(100);  // default slice: 32 instructions
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(Inspect(sender).state, Value::Int(1));
  EXPECT_EQ(Inspect(receiver).state, Value::Int(15));
  EXPECT_EQ(report->commits, 2u);
  EXPECT_EQ(Inspect(receiver).status, ActorStatus::kIdle);
}

// A tick walks the actors that may be runnable in ref order, checking each at its turn (spec
// 001): one woken by an earlier actor's send runs in the same tick, one that comes before its
// waker waits for the next tick.
TEST_F(RuntimeTest, AnActorWokenDuringATickRunsInItOnlyIfItsTurnIsStillToCome) {
  ActorRef lo = Spawn(counter_, 0);
  ActorRef hi = Spawn(counter_, 0);
  if (hi < lo) std::swap(lo, hi);
  Send(lo, fmt::format(R"({{"op":"send","value":5,"target":{{"$actor":"{}"}}}})", hi.str()));
  auto first = runtime_->Tick(1, 1'000'000);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->commits, 2u);  // lo, then hi in the same tick
  Send(hi, fmt::format(R"({{"op":"send","value":5,"target":{{"$actor":"{}"}}}})", lo.str()));
  auto second = runtime_->Tick(1, 1'000'000);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->commits, 1u);  // hi only: lo's turn had passed when hi woke it
  auto third = runtime_->Tick(1, 1'000'000);
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(third->commits, 1u);
  EXPECT_EQ(Inspect(lo).state, Value::Int(1 + 5));  // its own send counted, then 5 added
  EXPECT_EQ(Inspect(hi).state, Value::Int(5 + 1));
}

// Actors a tick finds not runnable leave its walk (so stopped actors cost a tick nothing); a
// resume or a restart brings them back with their queued input.
TEST_F(RuntimeTest, ActorsThatLeftTheTickComeBackWhenResumedOrRestarted) {
  ActorRef paused = Spawn(counter_, 0);
  ActorRef killed = Spawn(counter_, 0);
  std::vector<ActorRef> stopped;
  for (int i = 0; i < 200; ++i) {
    stopped.push_back(Spawn(counter_, 0));
    ASSERT_TRUE(runtime_->Kill(stopped.back()).ok());
  }
  ASSERT_TRUE(runtime_->Pause(paused).ok());
  Send(paused, R"({"op":"add","value":1})");
  Send(killed, R"({"op":"add","value":1})");
  ASSERT_TRUE(runtime_->Kill(killed).ok());  // keeps its queued input
  auto idle = runtime_->Tick(5, 1'000'000);
  ASSERT_TRUE(idle.ok());
  EXPECT_EQ(idle->commits, 0u);
  ASSERT_TRUE(runtime_->Resume(paused).ok());
  ASSERT_TRUE(runtime_->Restart(killed).ok());
  auto woken = runtime_->Tick(1, 1'000'000);
  ASSERT_TRUE(woken.ok());
  EXPECT_EQ(woken->commits, 2u);
  EXPECT_EQ(Inspect(paused).state, Value::Int(1));
  EXPECT_EQ(Inspect(killed).state, Value::Int(1));
}

// Idle eviction (program units) takes the actor's retained log entries too: evicted instances
// would otherwise hold up to 1,000 entries each for the life of the server.
TEST_F(RuntimeTest, RemoveOfAnIdleActorDropsItsLogEntries) {
  ActorRef a = Spawn(probe_, 0);
  Send(a, R"({"op":"log","level":4,"text":"an instance's entry"})");
  Settle();
  LogFilter filter;
  filter.actors = {a};
  ASSERT_EQ(runtime_->logs().History(filter, 0, 100)->entries.size(), 1u);
  ASSERT_TRUE(runtime_->Remove(a).ok());
  EXPECT_TRUE(runtime_->logs().History(filter, 0, 100)->entries.empty());
}

TEST_F(RuntimeTest, RemoveStoppedDropsTheMailboxAndForgetsTheRef) {
  ActorRef a = Spawn(probe_, 0);
  ActorRef b = Spawn(counter_, 0);
  Send(a, R"({"op":"log","level":4,"text":"before its removal"})");
  Settle();
  LogFilter filter;
  filter.actors = {a};
  ASSERT_EQ(runtime_->logs().History(filter, 0, 100)->entries.size(), 1u);
  Send(a, R"({"op":"add","value":1})");
  Send(a, R"({"op":"add","value":2})");
  auto running = runtime_->RemoveStopped(a);
  ASSERT_EQ(running.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(running.status().message().find("stop or kill it"), std::string::npos);
  EXPECT_EQ(Inspect(a).queued.size(), 2u) << "a refused removal changes nothing";
  ASSERT_TRUE(runtime_->Stop(a).ok());  // its on_shutdown waits for a tick
  auto stopping = runtime_->RemoveStopped(a);
  ASSERT_EQ(stopping.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(stopping.status().message().find("is stopping"), std::string::npos);

  ASSERT_TRUE(runtime_->Kill(a).ok());
  auto removed = runtime_->RemoveStopped(a);
  ASSERT_TRUE(removed.ok()) << removed.status().ToString();
  EXPECT_EQ(*removed, 2u);
  EXPECT_EQ(runtime_->Inspect(a).status().code(), Code::kNotFound);
  EXPECT_EQ(runtime_->TrySend(a, Json(R"({"op":"add","value":1})")).status.code(), Code::kNotFound);
  EXPECT_EQ(runtime_->RemoveStopped(a).status().code(), Code::kNotFound);
  ASSERT_EQ(runtime_->List().size(), 1u);
  EXPECT_EQ(runtime_->List()[0].ref, b);

  auto logs = runtime_->logs().History(filter, 0, 100);
  ASSERT_TRUE(logs.ok());
  EXPECT_TRUE(logs->entries.empty()) << "its log entries went with it";
  auto page = runtime_->events().Recent(0, 100, {{}, {a}});
  ASSERT_TRUE(page.ok());
  ASSERT_FALSE(page->events.empty());
  EXPECT_EQ(page->events.back().kind, LifecycleKind::kRemoved);
  EXPECT_EQ(page->events.back().detail, "2 message(s) dropped");
  Send(b, R"({"op":"add","value":3})");
  Settle();
  EXPECT_EQ(Inspect(b).state, Value::Int(3)) << "the others tick on";
}

// --- transition table rows ----------------------------------------------------------------

TEST_F(RuntimeTest, ValidTransitionCommitsAcknowledgesAndEnqueuesSends) {
  ActorRef a = Spawn(probe_, 0);
  ActorRef b = Spawn(probe_, 0);
  ASSERT_TRUE(runtime_->Pause(b).ok());  // so b's mailbox can be seen as delivered
  Send(a, SendJson(b, 3));
  ASSERT_TRUE(runtime_->Tick(1, 1'000'000).ok());
  ActorSnapshot after = Inspect(a);
  EXPECT_EQ(after.state, Value::Int(1));
  EXPECT_FALSE(after.reserved.has_value());
  EXPECT_EQ(after.status, ActorStatus::kIdle);
  ActorSnapshot target = Inspect(b);
  ASSERT_EQ(target.queued.size(), 3u) << "all three sends arrived";
  EXPECT_EQ(target.queued.front().sender, a) << "the actor is the sender";
  ASSERT_TRUE(runtime_->Resume(b).ok());
  Settle();
  EXPECT_EQ(Inspect(b).state, Value::Int(3));
}

TEST_F(RuntimeTest, FailedHandlerRetainsStateAndReservedInput) {
  ActorRef a = Spawn(probe_, 7);
  Send(a, R"({"op":"fail"})");
  Send(a, R"({"op":"add","value":1})");
  Settle();
  ActorSnapshot s = Inspect(a);
  EXPECT_EQ(s.status, ActorStatus::kFailed);
  EXPECT_EQ(s.state, Value::Int(7));
  ASSERT_TRUE(s.reserved.has_value());
  EXPECT_EQ(s.reserved->message.ToValue(), Json(R"({"op":"fail"})"));
  EXPECT_EQ(s.queued.size(), 1u) << "later input waits";
  EXPECT_EQ(s.failure, "asked to fail");
  EXPECT_EQ(runtime_->TrySend(a, Value::Int(1)).status.code(), Code::kFailedPrecondition)
      << "a failed actor takes no messages";
}

TEST_F(RuntimeTest, SendToAnUnknownTargetFailsTheTransitionWithoutPartialSends) {
  ActorRef a = Spawn(probe_, 0);
  ActorRef b = Spawn(probe_, 0);
  // Two targets: b is fine, the other does not exist; nothing may reach b.
  Send(a, R"({"op":"send","count":1,"target":{"$actor":"nobodyNNNNNNNNNNNNNNN"}})");
  Settle();
  EXPECT_EQ(Inspect(a).status, ActorStatus::kFailed);
  EXPECT_EQ(Inspect(a).state, Value::Int(0));
  EXPECT_NE(Inspect(a).failure->find("unknown actor"), std::string::npos);
  EXPECT_TRUE(Inspect(b).queued.empty());
}

TEST_F(RuntimeTest, SendToAStoppedOrFailedTargetFailsTheTransition) {
  ActorRef a = Spawn(probe_, 0);
  ActorRef stopped = Spawn(probe_, 0);
  ActorRef failed = Spawn(probe_, 0);
  ASSERT_TRUE(runtime_->Kill(stopped).ok());
  Send(failed, R"({"op":"fail"})");
  Settle();
  ASSERT_EQ(Inspect(failed).status, ActorStatus::kFailed);
  for (const ActorRef& target : {stopped, failed}) {
    Send(a, SendJson(target, 1));
    Settle();
    EXPECT_EQ(Inspect(a).status, ActorStatus::kFailed);
    EXPECT_EQ(Inspect(a).state, Value::Int(0));
    ASSERT_TRUE(runtime_->Restart(a).ok());
    ASSERT_TRUE(runtime_->Pause(a).ok());
    ASSERT_TRUE(runtime_->SetMessages(a, {}, {}).ok());  // drop the failed input
    ASSERT_TRUE(runtime_->Resume(a).ok());
  }
  EXPECT_TRUE(Inspect(stopped).queued.empty());
}

TEST_F(RuntimeTest, OverCapacityIsCheckedOnTheAggregateOfSendsToOneTarget) {
  ActorRef a = Spawn(probe_, 0);
  ActorRef b = Spawn(probe_, 0, /*capacity=*/2);
  ASSERT_TRUE(runtime_->Pause(b).ok());  // b keeps its mailbox as it is
  Send(a, SendJson(b, 3));               // 3 > capacity 2
  Settle();
  EXPECT_EQ(Inspect(a).status, ActorStatus::kFailed);
  EXPECT_NE(Inspect(a).failure->find("capacity"), std::string::npos) << *Inspect(a).failure;
  EXPECT_TRUE(Inspect(b).queued.empty()) << "no partial sends";
  // Repair the failed actor's input to two sends, then restart it.
  ASSERT_TRUE(runtime_->SetMessages(a, {}, {Json(SendJson(b, 2))}).ok());
  ASSERT_TRUE(runtime_->Restart(a).ok());
  Settle();
  EXPECT_EQ(Inspect(b).queued.size(), 2u) << "exactly at capacity is fine";
}

TEST_F(RuntimeTest, SelfSendAcknowledgesTheInputFirst) {
  ActorRef a = Spawn(probe_, 0, /*capacity=*/1);
  Send(a, SendJson(a, 1));  // the mailbox is full while this input is reserved
  ASSERT_TRUE(runtime_->Tick(1, 1'000'000).ok());
  ActorSnapshot s = Inspect(a);
  EXPECT_EQ(s.status, ActorStatus::kIdle) << s.failure.value_or("");
  EXPECT_EQ(s.queued.size(), 1u);
  Settle();
  EXPECT_EQ(Inspect(a).state, Value::Int(2));
}

TEST_F(RuntimeTest, GracefulStopFinishesTheHandlerRunsShutdownAndDoesNotDrain) {
  ActorRef a = Spawn(probe_, 1);
  Send(a, R"({"op":"add","value":1})");
  Send(a, R"({"op":"add","value":100})");
  ASSERT_TRUE(runtime_->Tick(1, 50).ok());  // the first handler is mid-way
  ASSERT_TRUE(Inspect(a).telemetry.has_value());
  ASSERT_TRUE(runtime_->Stop(a).ok());
  Settle();
  ActorSnapshot s = Inspect(a);
  EXPECT_EQ(s.status, ActorStatus::kStopped);
  EXPECT_EQ(s.state, Value::Int(1002)) << "1 + 1, then on_shutdown adds 1000";
  EXPECT_EQ(s.queued.size(), 1u) << "stop does not drain";
}

TEST_F(RuntimeTest, KillDuringAnInvocationKeepsStateAndReservedInput) {
  ActorRef a = Spawn(probe_, 5);
  Send(a, R"({"op":"spin"})");
  ASSERT_TRUE(runtime_->Tick(3).ok());
  ASSERT_EQ(Inspect(a).status, ActorStatus::kRunning);
  ASSERT_TRUE(runtime_->Kill(a).ok());
  ActorSnapshot s = Inspect(a);
  EXPECT_EQ(s.status, ActorStatus::kStopped);
  EXPECT_EQ(s.state, Value::Int(5));
  ASSERT_TRUE(s.reserved.has_value());
  EXPECT_FALSE(s.telemetry.has_value());
}

TEST_F(RuntimeTest, RestartAfterFailurePutsTheReservedInputFirstWithANewIncarnation) {
  ActorRef a = Spawn(probe_, 0);
  Send(a, R"({"op":"fail"})");
  Send(a, R"({"op":"add","value":1})");
  Send(a, R"({"op":"add","value":2})");
  Settle();
  ASSERT_EQ(Inspect(a).status, ActorStatus::kFailed);
  ASSERT_TRUE(runtime_->Restart(a).ok());
  ActorSnapshot s = Inspect(a);
  EXPECT_EQ(s.incarnation, 2u);
  EXPECT_EQ(s.status, ActorStatus::kIdle);
  ASSERT_EQ(s.queued.size(), 3u);
  EXPECT_EQ(s.queued[0].message.ToValue(), Json(R"({"op":"fail"})")) << "reserved input first";
  EXPECT_EQ(s.queued[1].message.ToValue(), Json(R"({"op":"add","value":1})"));
  EXPECT_EQ(s.queued[2].message.ToValue(), Json(R"({"op":"add","value":2})"));
}

TEST_F(RuntimeTest, PauseKeepsTheInvocationAndResumeRestoresThePriorStatus) {
  ActorRef a = Spawn(probe_, 0);
  Send(a, R"({"op":"add","value":4})");
  ASSERT_TRUE(runtime_->Tick(1, 40).ok());
  ASSERT_EQ(Inspect(a).status, ActorStatus::kRunning);
  uint64_t done = Inspect(a).telemetry->instructions;
  ASSERT_TRUE(runtime_->Pause(a).ok());
  ASSERT_TRUE(runtime_->Tick(10, 1'000'000).ok());
  ActorSnapshot paused = Inspect(a);
  EXPECT_EQ(paused.status, ActorStatus::kPaused);
  EXPECT_EQ(paused.paused_from, ActorStatus::kRunning);
  EXPECT_EQ(paused.telemetry->instructions, done) << "not scheduled while paused";
  ASSERT_TRUE(runtime_->Resume(a).ok());
  EXPECT_EQ(Inspect(a).status, ActorStatus::kRunning);
  Settle();
  EXPECT_EQ(Inspect(a).state, Value::Int(4));
}

TEST_F(RuntimeTest, CancelMovesTheReservedInputToTheFrontAndReturnsToIdle) {
  ActorRef a = Spawn(probe_, 0);
  Send(a, R"({"op":"spin"})");
  Send(a, R"({"op":"add","value":1})");
  ASSERT_TRUE(runtime_->Tick(2).ok());
  ASSERT_TRUE(runtime_->Cancel(a).ok());
  ActorSnapshot s = Inspect(a);
  EXPECT_EQ(s.status, ActorStatus::kIdle);
  EXPECT_FALSE(s.reserved.has_value());
  ASSERT_EQ(s.queued.size(), 2u);
  EXPECT_EQ(s.queued[0].message.ToValue(), Json(R"({"op":"spin"})"));
  EXPECT_EQ(runtime_->Cancel(a).code(), Code::kFailedPrecondition) << "nothing to cancel now";
}

TEST_F(RuntimeTest, CancelThenInstallRetriesQueuedInputInOrderWithTheNewImplementation) {
  ActorRef a = Spawn(probe_, 0);
  Send(a, R"({"op":"add","value":2})");
  ASSERT_TRUE(runtime_->Tick(1, 40).ok());
  ASSERT_TRUE(runtime_->Install(a, counter_).ok());
  EXPECT_EQ(Inspect(a).pending_install, counter_->id) << "queued for the handler boundary";
  ASSERT_TRUE(runtime_->Cancel(a).ok());
  EXPECT_EQ(Inspect(a).implementation_id, counter_->id);
  Settle();
  EXPECT_EQ(Inspect(a).state, Value::Int(2));
}

TEST_F(RuntimeTest, InstallWithAFailingMigrationChangesNothing) {
  ActorRef a = Spawn(probe_, 3);
  Status failed = runtime_->InstallWithMigration(
      a, counter_, [](Value) -> Result<Value> { return Status::InvalidArgument("nope"); });
  EXPECT_FALSE(failed.ok());
  EXPECT_EQ(Inspect(a).implementation_id, probe_->id);
  EXPECT_EQ(Inspect(a).state, Value::Int(3));
  ASSERT_TRUE(
      runtime_
          ->InstallWithMigration(
              a, counter_, [](Value v) -> Result<Value> { return Value::Int(v.as_int() * 10); })
          .ok());
  EXPECT_EQ(Inspect(a).implementation_id, counter_->id);
  EXPECT_EQ(Inspect(a).state, Value::Int(30));
}

// --- repair -------------------------------------------------------------------------------

TEST_F(RuntimeTest, SetStateRequiresPausedStoppedOrFailedWithoutAnInvocation) {
  ActorRef a = Spawn(probe_, 1);
  EXPECT_EQ(runtime_->SetState(a, Value::Int(9)).code(), Code::kFailedPrecondition);
  Send(a, R"({"op":"spin"})");
  ASSERT_TRUE(runtime_->Tick(1).ok());
  ASSERT_TRUE(runtime_->Pause(a).ok());
  EXPECT_EQ(runtime_->SetState(a, Value::Int(9)).code(), Code::kFailedPrecondition)
      << "a paused active invocation must be killed first";
  ASSERT_TRUE(runtime_->Kill(a).ok());
  ASSERT_TRUE(runtime_->SetState(a, Value::Int(9)).ok());
  EXPECT_EQ(Inspect(a).state, Value::Int(9));
  EXPECT_EQ(Inspect(a).incarnation, 1u) << "repair does not restart";
}

TEST_F(RuntimeTest, SetMessagesKeepsSendersOfUnchangedMessagesAndChecksEverythingFirst) {
  ActorRef a = Spawn(probe_, 0);
  ActorRef b = Spawn(probe_, 0, /*capacity=*/3);
  ASSERT_TRUE(runtime_->Pause(b).ok());
  Send(a, SendJson(b, 2));
  Settle();
  ASSERT_EQ(Inspect(b).queued.size(), 2u);
  Value add = Json(R"({"op":"add","value":1})");
  // Over capacity: nothing changes.
  EXPECT_EQ(runtime_->SetMessages(b, {}, {add, add, add, add}).code(), Code::kLimitExceeded);
  EXPECT_EQ(Inspect(b).queued.size(), 2u);
  EXPECT_EQ(runtime_->SetMessages(b, {add, add}, {}).code(), Code::kInvalidArgument);
  // Position 0 unchanged keeps sender a; position 1 replaced becomes host-originated.
  ASSERT_TRUE(runtime_->SetMessages(b, {}, {add, Value::Int(5), add}).ok());
  ActorSnapshot s = Inspect(b);
  ASSERT_EQ(s.queued.size(), 3u);
  EXPECT_EQ(s.queued[0].sender, a);
  EXPECT_FALSE(s.queued[1].sender.has_value());
  EXPECT_FALSE(s.queued[2].sender.has_value());
}

// --- logs ---------------------------------------------------------------------------------

TEST_F(RuntimeTest, LogsAreImmediateAndSurviveAFailedHandler) {
  ActorRef a = Spawn(probe_, 0);
  auto follow = runtime_->logs().Follow({});
  Send(a, R"({"op":"log_then_fail","text":"before the failure"})");
  Settle();
  EXPECT_EQ(Inspect(a).status, ActorStatus::kFailed);
  auto page = runtime_->logs().History({}, 0, 100);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->entries.size(), 1u);
  EXPECT_EQ(page->entries[0].message, "before the failure");
  EXPECT_EQ(page->entries[0].actor, a);
  auto live = follow->Poll(10);
  ASSERT_TRUE(live.ok());
  EXPECT_EQ(live->size(), 1u);
}

TEST_F(RuntimeTest, LogLevelDropsEntriesBelowTheMinimum) {
  ActorRef a = Spawn(probe_, 0);
  ASSERT_TRUE(runtime_->SetLogLevel(a, LogLevel::kWarn).ok());
  Send(a, R"({"op":"log","level":2,"text":"info, dropped"})");
  Send(a, R"({"op":"log","level":4,"text":"error, kept"})");
  Settle();
  auto page = runtime_->logs().History({}, 0, 100);
  ASSERT_EQ(page->entries.size(), 1u);
  EXPECT_EQ(page->entries[0].message, "error, kept");
  EXPECT_EQ(Inspect(a).state, Value::Int(2)) << "both handlers committed";
}

TEST_F(RuntimeTest, LifecycleEventsNameEachStep) {
  ActorRef a = Spawn(probe_, 0);
  Send(a, R"({"op":"add","value":1})");
  Settle();
  ASSERT_TRUE(runtime_->Pause(a).ok());
  ASSERT_TRUE(runtime_->Resume(a).ok());
  ASSERT_TRUE(runtime_->Stop(a).ok());
  Settle();
  ASSERT_TRUE(runtime_->Restart(a).ok());
  auto page = runtime_->events().Recent(0, 100, {{}, {a}});
  ASSERT_TRUE(page.ok());
  std::string kinds;
  for (const auto& e : page->events) kinds += std::string(LifecycleKindName(e.kind)) + " ";
  EXPECT_EQ(kinds, "spawned committed paused resumed committed stopped restarted ");
}

TEST_F(RuntimeTest, HostSendsFailClearlyAndGiveTheMessageBack) {
  ActorRef a = Spawn(probe_, 0, /*capacity=*/1);
  Send(a, R"({"op":"add","value":1})");
  SendOutcome full = runtime_->TrySend(a, Value::Int(42));
  EXPECT_EQ(full.status.code(), Code::kLimitExceeded);
  ASSERT_TRUE(full.returned.has_value());
  EXPECT_EQ(*full.returned, Value::Int(42));
  SendOutcome nobody = runtime_->TrySend(*ActorRef::Parse("nobodyNNNNNNNNNNNNNNN"), Value::Int(1));
  EXPECT_EQ(nobody.status.code(), Code::kNotFound);
  EXPECT_EQ(runtime_->Call(a, Value::Int(1), std::chrono::milliseconds(10)).status().code(),
            Code::kFailedPrecondition)
      << "Call needs free-running mode";
}

TEST_F(RuntimeTest, ActorsAreIsolatedAcrossPooledInstances) {
  // Many actors of one implementation share pooled instances; each sees only its own state.
  std::vector<ActorRef> refs;
  for (int i = 0; i < 100; ++i) refs.push_back(Spawn(probe_, i));
  for (int round = 0; round < 3; ++round) {
    for (const ActorRef& r : refs) Send(r, R"({"op":"add","value":1})");
    Settle();
  }
  for (int i = 0; i < 100; ++i) EXPECT_EQ(Inspect(refs[i]).state, Value::Int(i + 3));
}

}  // namespace
}  // namespace reef::actor

namespace reef::actor {
namespace {

// Regression (found by the TSan run): when more invocations finish than the instance pool
// keeps (64), the extra instances are destroyed; each invocation must end first.
TEST_F(RuntimeTest, MoreFinishingInvocationsThanThePoolKeepsIsSafe) {
  std::vector<ActorRef> refs;
  for (int i = 0; i < 100; ++i) refs.push_back(Spawn(probe_, 0));
  for (const ActorRef& r : refs) Send(r, R"({"op":"add","value":1})");
  ASSERT_TRUE(runtime_->Tick(1, 20).ok());  // every actor now holds an instance mid-invocation
  for (const ActorRef& r : refs) ASSERT_EQ(Inspect(r).status, ActorStatus::kRunning);
  Settle();
  for (const ActorRef& r : refs) EXPECT_EQ(Inspect(r).state, Value::Int(1));
}

}  // namespace
}  // namespace reef::actor

namespace reef::actor {
namespace {

// --- regressions from the runtime review --------------------------------------------------

TEST_F(RuntimeTest, StopOnAFailedActorKeepsTheFailedInput) {
  ActorRef a = Spawn(probe_, 0);
  Send(a, R"({"op":"fail"})");
  Settle();
  ASSERT_TRUE(runtime_->Stop(a).ok());
  Settle();
  ActorSnapshot stopped = Inspect(a);
  EXPECT_EQ(stopped.status, ActorStatus::kStopped);
  EXPECT_EQ(stopped.state, Value::Int(1000)) << "on_shutdown ran";
  ASSERT_TRUE(stopped.reserved.has_value()) << "the failed input is not acknowledged";
  ASSERT_TRUE(runtime_->Restart(a).ok());
  EXPECT_EQ(Inspect(a).queued.front().message.ToValue(), Json(R"({"op":"fail"})"));
}

TEST_F(RuntimeTest, AReservationSetByRepairRunsFirstAfterResume) {
  ActorRef a = Spawn(probe_, 0, /*capacity=*/2);
  ASSERT_TRUE(runtime_->Pause(a).ok());
  ASSERT_TRUE(runtime_
                  ->SetMessages(a, {Json(R"({"op":"add","value":1})")},
                                {Json(R"({"op":"add","value":10})")})
                  .ok());
  ASSERT_TRUE(runtime_->Resume(a).ok());
  Settle();
  EXPECT_EQ(Inspect(a).state, Value::Int(11));
  EXPECT_FALSE(Inspect(a).reserved.has_value());
  // Both slots are free again.
  Send(a, R"({"op":"add","value":100})");
  Send(a, R"({"op":"add","value":100})");
}

TEST_F(RuntimeTest, NoHiddenGuestStateSurvivesBetweenInvocations) {
  // A guest that counts its calls in a global and returns that count as its new state.
  auto module = wasm::Module::FromText(R"((module
    (memory (export "memory") 1)
    (global $calls (mut i32) (i32.const 0))
    (func (export "reef_abi_version") (result i32) (i32.const 1))
    (func (export "reef_alloc") (param i32) (result i32) (i32.const 1024))
    (func (export "reef_handle") (param i32 i32 i32 i32 i32 i32) (result i64)
      (global.set $calls (i32.add (global.get $calls) (i32.const 1)))
      (i32.store8 (i32.const 512) (global.get $calls))
      (i64.or (i64.const 512) (i64.shl (i64.const 1) (i64.const 32))))))");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto hidden = MakeImplementation(*module, "hidden");
  ASSERT_TRUE(hidden.ok());
  ActorRef a = Spawn(*hidden, 0);
  for (int i = 0; i < 3; ++i) Send(a, "null");
  Settle();
  EXPECT_EQ(Inspect(a).state, Value::Int(1)) << "every invocation starts from a clean instance";
}

TEST_F(RuntimeTest, AnActorOfAnotherAbiVersionFailsOnItsFirstInputAndKeepsIt) {
  // The runtime checks a module's reef_abi_version once per instance, when it creates one.
  auto module = wasm::Module::FromText(R"((module
    (memory (export "memory") 1)
    (func (export "reef_abi_version") (result i32) (i32.const 2))
    (func (export "reef_alloc") (param i32) (result i32) (i32.const 1024))
    (func (export "reef_handle") (param i32 i32 i32 i32 i32 i32) (result i64)
      (i64.or (i64.extend_i32_u (local.get 0)) (i64.shl (i64.extend_i32_u (local.get 1)) (i64.const 32))))))");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto other = MakeImplementation(*module, "other-abi");
  ASSERT_TRUE(other.ok());
  ActorRef a = Spawn(*other, 5);
  Send(a, "1");
  Settle();
  ActorSnapshot snap = Inspect(a);
  EXPECT_EQ(snap.status, ActorStatus::kFailed);
  EXPECT_NE(snap.failure.value_or("").find("ABI reef version 2"), std::string::npos)
      << snap.failure.value_or("");
  EXPECT_EQ(snap.state, Value::Int(5));
  EXPECT_TRUE(snap.reserved.has_value());
}

TEST_F(RuntimeTest, OperationsWithoutAnImplementationAreRejected) {
  EXPECT_EQ(runtime_->Spawn(nullptr, Value::Int(0)).status().code(), Code::kInvalidArgument);
  ActorRef a = Spawn(probe_, 0);
  EXPECT_EQ(runtime_->Install(a, nullptr).code(), Code::kInvalidArgument);
  EXPECT_EQ(
      runtime_->InstallWithMigration(a, nullptr, [](Value v) -> Result<Value> { return v; }).code(),
      Code::kInvalidArgument);
}

}  // namespace
}  // namespace reef::actor
