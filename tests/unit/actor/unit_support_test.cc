// What the actor runtime offers program units (spec 003): poisoning by FailurePolicy::kReset,
// Remove for idle eviction, Mailbox occupancy, Call that waits for room and takes an optional
// reply, and handler exports other than reef_handle. Run under ThreadSanitizer too.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "actor/runtime.h"
#include "core/json.h"
#include "unit/actor/test_guests.h"

namespace reef::actor {
namespace {

using std::chrono::milliseconds;

Value Op(const char* json) {
  auto value = ValueFromJson(json, {});
  EXPECT_TRUE(value.ok()) << json;
  return *value;
}

class UnitSupportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RuntimeOptions options;
    options.mode = SchedulingMode::kFreeRunning;
    options.reactors = 2;
    auto runtime = Runtime::Create(options);
    ASSERT_TRUE(runtime.ok());
    runtime_ = std::move(*runtime);
    probe_ = test_support::LoadGuest("probe");
    ASSERT_NE(probe_, nullptr);
  }

  ActorRef SpawnProbe(int64_t state, FailurePolicy policy, uint32_t capacity = 256) {
    SpawnOptions options;
    options.failure_policy = policy;
    options.mailbox_capacity = capacity;
    auto ref = runtime_->Spawn(probe_, Value::Int(state), options);
    EXPECT_TRUE(ref.ok()) << ref.status().ToString();
    return *ref;
  }

  // Kills `ref` once an invocation runs (kReset refuses to kill an idle actor).
  Status KillRunning(const ActorRef& ref) {
    Status killed = Status::Ok();
    for (int i = 0; i < 500; ++i) {
      killed = runtime_->Kill(ref);
      if (killed.code() != Code::kFailedPrecondition) return killed;
      std::this_thread::sleep_for(milliseconds(10));
    }
    return killed;
  }

  // Waits until `ref` is idle with an empty mailbox; returns its snapshot.
  ActorSnapshot Settled(const ActorRef& ref) {
    for (int i = 0; i < 500; ++i) {
      auto snap = runtime_->Inspect(ref);
      EXPECT_TRUE(snap.ok());
      if (snap->status == ActorStatus::kIdle && snap->queued.empty() && !snap->reserved) {
        return *snap;
      }
      std::this_thread::sleep_for(milliseconds(10));
    }
    ADD_FAILURE() << "actor did not settle";
    return *runtime_->Inspect(ref);
  }

  std::unique_ptr<Runtime> runtime_;
  std::shared_ptr<const Implementation> probe_;
};

TEST_F(UnitSupportTest, ResetPolicyPoisonsOnlyTheFailedInvocationAndGoesOn) {
  ActorRef a = SpawnProbe(7, FailurePolicy::kReset);
  ActorRef b = SpawnProbe(7, FailurePolicy::kReset);
  ASSERT_TRUE(runtime_->TrySend(a, Op(R"({"op":"add","value":5})")).status.ok());
  ASSERT_TRUE(runtime_->TrySend(b, Op(R"({"op":"add","value":5})")).status.ok());
  auto failed = runtime_->Call(a, Op(R"({"op":"fail"})"), milliseconds(5'000));
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(failed.status().message().find("asked to fail"), std::string::npos);
  ASSERT_TRUE(runtime_->TrySend(a, Op(R"({"op":"add","value":1})")).status.ok());
  ActorSnapshot after = Settled(a);
  EXPECT_EQ(after.status, ActorStatus::kIdle);  // not failed: it went on
  EXPECT_EQ(after.incarnation, 2u);
  EXPECT_EQ(after.state, Value::Int(8));  // the spawn state 7, then + 1
  EXPECT_EQ(after.failure.value_or(""), "asked to fail");
  EXPECT_EQ(Settled(b).state, Value::Int(12));  // the other actor is untouched
  EXPECT_EQ(Settled(b).incarnation, 1u);
}

TEST_F(UnitSupportTest, RetainPolicyStillFailsTheActorAsSpec001Says) {
  ActorRef a = SpawnProbe(7, FailurePolicy::kRetain);
  EXPECT_FALSE(runtime_->Call(a, Op(R"({"op":"fail"})"), milliseconds(5'000)).ok());
  auto snap = runtime_->Inspect(a);
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ(snap->status, ActorStatus::kFailed);
  EXPECT_TRUE(snap->reserved.has_value());
}

TEST_F(UnitSupportTest, KillUnderResetPolicyDropsTheInvocationAndKeepsTheQueue) {
  ActorRef a = SpawnProbe(3, FailurePolicy::kReset);
  ASSERT_TRUE(runtime_->TrySend(a, Op(R"({"op":"add","value":10})")).status.ok());
  ASSERT_TRUE(runtime_->TrySend(a, Op(R"({"op":"spin"})")).status.ok());
  ASSERT_TRUE(runtime_->TrySend(a, Op(R"({"op":"add","value":2})")).status.ok());
  // Wait until the spin runs (the add before it committed).
  for (int i = 0; i < 500; ++i) {
    auto snap = runtime_->Inspect(a);
    if (snap.ok() && snap->telemetry && snap->state == Value::Int(13)) break;
    std::this_thread::sleep_for(milliseconds(5));
  }
  ASSERT_TRUE(KillRunning(a).ok());
  ActorSnapshot after = Settled(a);
  EXPECT_EQ(after.incarnation, 2u);
  EXPECT_EQ(after.state, Value::Int(5));  // reset to 3, then the queued add of 2
  EXPECT_EQ(after.failure.value_or(""), "killed");
  EXPECT_EQ(runtime_->Mailbox(a)->used, 0u);  // the dropped input freed its slot
}

TEST_F(UnitSupportTest, RemoveTakesOnlyAnIdleActorAndItsRefIsGoneAfterwards) {
  ActorRef a = SpawnProbe(0, FailurePolicy::kReset);
  ASSERT_TRUE(runtime_->TrySend(a, Op(R"({"op":"spin"})")).status.ok());
  ASSERT_TRUE(runtime_->TrySend(a, Op(R"({"op":"add","value":1})")).status.ok());
  auto usage = runtime_->Mailbox(a);
  ASSERT_TRUE(usage.ok());
  EXPECT_EQ(usage->used, 2u);
  EXPECT_EQ(usage->capacity, 256u);
  Status busy = runtime_->Remove(a);
  EXPECT_EQ(busy.code(), Code::kFailedPrecondition) << busy.ToString();
  ASSERT_TRUE(KillRunning(a).ok());
  Settled(a);
  EXPECT_EQ(runtime_->Kill(a).code(), Code::kFailedPrecondition);  // idle: nothing to kill
  EXPECT_EQ(runtime_->Inspect(a)->incarnation, 2u);                // and no reset
  uint64_t before = 0;
  for (const ReactorInfo& r : runtime_->Reactors()) before += r.actors;
  ASSERT_TRUE(runtime_->Remove(a).ok());
  uint64_t after = 0;
  for (const ReactorInfo& r : runtime_->Reactors()) after += r.actors;
  EXPECT_EQ(after, before - 1);
  EXPECT_EQ(runtime_->Inspect(a).status().code(), Code::kNotFound);
  EXPECT_EQ(runtime_->Mailbox(a).status().code(), Code::kNotFound);
  SendOutcome sent = runtime_->TrySend(a, Op(R"({"op":"add","value":1})"));
  EXPECT_EQ(sent.status.code(), Code::kNotFound);
  EXPECT_TRUE(sent.returned.has_value());  // handed back, not lost
  EXPECT_EQ(runtime_->Remove(a).code(), Code::kNotFound);
}

TEST_F(UnitSupportTest, CallWaitsForRoomAndAnOptionalReplyMayBeNull) {
  ActorRef a = SpawnProbe(4, FailurePolicy::kReset, /*capacity=*/1);
  // No reply from "add": required -> error, optional -> null.
  auto required = runtime_->Call(a, Op(R"({"op":"add","value":1})"), milliseconds(5'000));
  EXPECT_EQ(required.status().code(), Code::kFailedPrecondition);
  auto optional = runtime_->Call(a, Op(R"({"op":"add","value":1})"), milliseconds(5'000),
                                 ReplyPolicy::kOptional);
  ASSERT_TRUE(optional.ok()) << optional.status().ToString();
  EXPECT_TRUE(optional->is_null());
  // A full mailbox (capacity 1, a spin holds it): the call waits, then gets its turn.
  ASSERT_TRUE(runtime_->TrySend(a, Op(R"({"op":"spin"})")).status.ok());
  std::thread killer([&] {
    std::this_thread::sleep_for(milliseconds(200));
    EXPECT_TRUE(KillRunning(a).ok());
  });
  auto reply = runtime_->Call(a, Op(R"({"op":"reply"})"), milliseconds(10'000));
  killer.join();
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(*reply, Value::Int(4));  // the kill reset the state to the spawn state
  // And a mailbox that stays full ends the call at its deadline, message not queued.
  ASSERT_TRUE(runtime_->TrySend(a, Op(R"({"op":"spin"})")).status.ok());
  auto late = runtime_->Call(a, Op(R"({"op":"reply"})"), milliseconds(100));
  EXPECT_EQ(late.status().code(), Code::kUnavailable);
  EXPECT_NE(late.status().message().find("stayed full"), std::string::npos);
  ASSERT_TRUE(KillRunning(a).ok());
}

TEST_F(UnitSupportTest, HandlerExportIsCheckedAndPartOfTheIdentity) {
  auto module = wasm::Module::FromFile(std::string(REEF_GUEST_DIR) + "/probe.wasm");
  ASSERT_TRUE(module.ok());
  auto missing = MakeImplementation(*module, "probe", std::nullopt, "no_such_handler");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no_such_handler"), std::string::npos);
  // reef_abi_version exists but has the wrong signature for a handler.
  auto wrong = MakeImplementation(*module, "probe", std::nullopt, "reef_abi_version");
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("must be function"), std::string::npos);
  auto plain = MakeImplementation(*module, "probe");
  auto named = MakeImplementation(*module, "probe", std::nullopt, "reef_handle");
  ASSERT_TRUE(plain.ok() && named.ok());
  EXPECT_EQ((*plain)->id, (*named)->id);
  EXPECT_EQ((*plain)->handler, "reef_handle");
}

}  // namespace
}  // namespace reef::actor
