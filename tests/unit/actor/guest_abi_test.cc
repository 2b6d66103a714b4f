// ABI v1 host side: the counter example through the C SDK, and the import contract.
#include "actor/guest_abi.h"

#include <gtest/gtest.h>

#include <string>

#include "core/json.h"

namespace reef::actor {
namespace {

using wasm::RunState;

using test_support::Json;

ActorRef Ref(std::string_view id) {
  return *ActorRef::Parse(id);
}

class ActorAbiTest : public ::testing::Test {
 protected:
  void LoadGuest(std::shared_ptr<const wasm::Module> module) {
    ASSERT_NE(module, nullptr);
    auto instance = engine_.Instantiate(module);
    ASSERT_TRUE(instance.ok()) << instance.status().ToString();
    instance_ = std::move(*instance);
  }
  void LoadGuest(const std::string& name) {
    auto module = wasm::Module::FromFile(std::string(REEF_GUEST_DIR) + "/" + name + ".wasm");
    ASSERT_TRUE(module.ok()) << module.status().ToString();
    LoadGuest(*module);
  }
  void LoadWat(const std::string& wat) {
    auto module = wasm::Module::FromText(wat);
    ASSERT_TRUE(module.ok()) << module.status().ToString();
    LoadGuest(*module);
  }

  // Runs one handler invocation to its end in 32-instruction slices (the manual-mode default).
  RunState Handle(const Value& state, const Value& sender, const Value& message) {
    context_.effects = {};
    auto invocation = StartHandle(*instance_, context_, state, sender, message);
    EXPECT_TRUE(invocation.ok()) << invocation.status().ToString();
    if (!invocation.ok()) return RunState::kTrapped;
    RunState run = RunState::kBudgetExhausted;
    while (run == RunState::kBudgetExhausted) run = (*invocation)->Run(32);
    if (run == RunState::kFinished) {
      auto decoded = DecodeNewState(*instance_, **invocation, context_.value_limits);
      EXPECT_TRUE(decoded.ok()) << decoded.status().ToString();
      if (decoded.ok()) new_state_ = *decoded;
    } else if (run == RunState::kTrapped) {
      trap_ = (*invocation)->trap();
    }
    return run;
  }

  wasm::Engine engine_{AbiV1Registry()};
  std::unique_ptr<wasm::Instance> instance_;
  ActorCallContext context_{Ref("counterAAAAAAAAAAAAAA")};
  Value new_state_;
  wasm::Trap trap_;
};

TEST_F(ActorAbiTest, CounterAddsFiveToZero) {
  LoadGuest("counter");
  ASSERT_EQ(Handle(Value::Int(0), Value::Null(), Json(R"({"op":"add","value":5})")),
            RunState::kFinished);
  EXPECT_EQ(new_state_, Value::Int(5));
  EXPECT_TRUE(context_.effects.sends.empty());
}

TEST_F(ActorAbiTest, CounterSendQueuesAnAddAndCountsOne) {
  LoadGuest("counter");
  Value message = Json(R"({"op":"send","value":5,"target":{"$actor":"receiverBBBBBBBBBBBBB"}})");
  ASSERT_EQ(Handle(Value::Int(0), Value::Null(), message), RunState::kFinished);
  EXPECT_EQ(new_state_, Value::Int(1));
  ASSERT_EQ(context_.effects.sends.size(), 1u);
  const SendEffect send = context_.effects.sends[0];  // a copy: Handle resets effects
  EXPECT_EQ(send.target, Ref("receiverBBBBBBBBBBBBB"));
  EXPECT_EQ(send.sender, context_.self);
  EXPECT_EQ(send.message.ToValue(), Json(R"({"op":"add","value":5})"));

  // The receiver, spawned with 10, handles the send: 15 (spec 001's walk-through).
  ASSERT_EQ(Handle(Value::Int(10), Value::Ref(*send.sender), send.message.ToValue()),
            RunState::kFinished);
  EXPECT_EQ(new_state_, Value::Int(15));
}

TEST_F(ActorAbiTest, CounterUnknownOpFailsExplicitly) {
  LoadGuest("counter");
  ASSERT_EQ(Handle(Value::Int(3), Value::Null(), Json(R"({"op":"mul","value":2})")),
            RunState::kTrapped);
  EXPECT_EQ(trap_.kind, wasm::TrapKind::kGuestFailure);
  EXPECT_EQ(trap_.function, "reef.fail");
  ASSERT_TRUE(context_.effects.failure.has_value());
  EXPECT_EQ(*context_.effects.failure, "counter: unknown op 'mul'; expected add, send or get");
}

TEST_F(ActorAbiTest, CounterRejectsAStringState) {
  LoadGuest("counter");
  EXPECT_EQ(Handle(Value::String("x"), Value::Null(), Json(R"({"op":"add","value":1})")),
            RunState::kTrapped);
  EXPECT_EQ(trap_.kind, wasm::TrapKind::kGuestFailure);
}

TEST_F(ActorAbiTest, HelloLogsAGreeting) {
  LoadGuest("hello");
  ASSERT_EQ(Handle(Value::Int(0), Value::Null(), Json(R"({"name":"reef"})")), RunState::kFinished);
  ASSERT_EQ(context_.effects.logs.size(), 1u);
  EXPECT_EQ(context_.effects.logs[0].level, LogLevel::kInfo);
  EXPECT_EQ(context_.effects.logs[0].message, "hello, reef!");
}

TEST(ActorAbiExportsTest, ModuleWithoutTheAbiExportsIsRejectedByName) {
  auto module = wasm::Module::FromText("(module (memory (export \"memory\") 1))");
  ASSERT_TRUE(module.ok());
  Status status = CheckActorExports(**module);
  EXPECT_EQ(status.code(), Code::kInvalidArgument);
  EXPECT_NE(status.message().find("missing export `reef_handle`"), std::string::npos)
      << status.message();
}

// A guest exercising each import's return codes. Memory layout: 0..26 a valid actor ref
// (CBOR), 32 an int (CBOR 0x05), 100.. 600 bytes of 'a'.
constexpr const char* kImportProbe = R"((module
  (import "reef" "send" (func $send (param i32 i32 i32 i32) (result i32)))
  (import "reef" "send_from" (func $send_from (param i32 i32 i32 i32 i32 i32) (result i32)))
  (import "reef" "log" (func $log (param i32 i32 i32) (result i32)))
  (import "reef" "self" (func $self (param i32 i32) (result i32)))
  (import "reef" "fail" (func $fail (param i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "\da\52\45\45\46\75targetCCCCCCCCCCCCCCC")
  (data (i32.const 32) "\05\f6")
  (func (export "send_ok") (result i32) (call $send (i32.const 0) (i32.const 27) (i32.const 32) (i32.const 1)))
  (func (export "send_int_target") (result i32) (call $send (i32.const 32) (i32.const 1) (i32.const 32) (i32.const 1)))
  (func (export "send_bad_cbor") (result i32) (call $send (i32.const 0) (i32.const 26) (i32.const 32) (i32.const 1)))
  (func (export "send_from_host") (result i32)
    (call $send_from (i32.const 33) (i32.const 1) (i32.const 0) (i32.const 27) (i32.const 32) (i32.const 1)))
  (func (export "send_oob") (result i32) (call $send (i32.const 65530) (i32.const 27) (i32.const 32) (i32.const 1)))
  (func (export "log_ok") (result i32) (call $log (i32.const 3) (i32.const 100) (i32.const 512)))
  (func (export "log_long") (result i32) (call $log (i32.const 3) (i32.const 100) (i32.const 513)))
  (func (export "log_level") (result i32) (call $log (i32.const 6) (i32.const 100) (i32.const 1)))
  (func (export "log_debug") (result i32) (call $log (i32.const 1) (i32.const 100) (i32.const 1)))
  (func (export "self_small") (result i32) (call $self (i32.const 200) (i32.const 26)))
  (func (export "self_ok") (result i32) (call $self (i32.const 200) (i32.const 27)))
  (func (export "fail") (call $fail (i32.const 100) (i32.const 3)))
  (func $fill (i32.const 100) (i32.const 97) (i32.const 600) (memory.fill))
  (start $fill))
)";

class ImportContractTest : public ActorAbiTest {
 protected:
  void SetUp() override { LoadWat(kImportProbe); }
  int32_t CallI32(std::string_view name) {
    auto results = instance_->Call(name, {}, &context_);
    EXPECT_TRUE(results.ok()) << results.status().ToString();
    return results.ok() ? std::get<int32_t>((*results)[0]) : -999;
  }
};

TEST_F(ImportContractTest, SendRecordsAnEffectFromSelf) {
  EXPECT_EQ(CallI32("send_ok"), 0);
  ASSERT_EQ(context_.effects.sends.size(), 1u);
  EXPECT_EQ(context_.effects.sends[0].target, Ref("targetCCCCCCCCCCCCCCC"));
  EXPECT_EQ(context_.effects.sends[0].message.ToValue(), Value::Int(5));
  EXPECT_EQ(context_.effects.sends[0].sender, context_.self);
}

TEST_F(ImportContractTest, SendFromNullSenderIsHostOriginated) {
  EXPECT_EQ(CallI32("send_from_host"), 0);
  ASSERT_EQ(context_.effects.sends.size(), 1u);
  EXPECT_FALSE(context_.effects.sends[0].sender.has_value());
}

TEST_F(ImportContractTest, SendRejectsANonRefTargetAndMalformedCbor) {
  EXPECT_EQ(CallI32("send_int_target"), -1);
  EXPECT_EQ(CallI32("send_bad_cbor"), -1);
  EXPECT_TRUE(context_.effects.sends.empty());
}

TEST_F(ImportContractTest, SendsPerTransitionAreLimited) {
  context_.transition_limits.max_sends_per_transition = 2;
  EXPECT_EQ(CallI32("send_ok"), 0);
  EXPECT_EQ(CallI32("send_ok"), 0);
  EXPECT_EQ(CallI32("send_ok"), -2);
  EXPECT_EQ(context_.effects.sends.size(), 2u);
}

TEST_F(ImportContractTest, OutOfBoundsBufferTrapsHostBounds) {
  auto results = instance_->Call("send_oob", {}, &context_);
  ASSERT_FALSE(results.ok());
  EXPECT_NE(results.status().message().find("host_bounds in `reef.send`"), std::string::npos)
      << results.status().message();
}

TEST_F(ImportContractTest, LogEnforces512BytesLevelsAndTheMinimumLevel) {
  EXPECT_EQ(CallI32("log_ok"), 0);
  EXPECT_EQ(CallI32("log_long"), -2);
  EXPECT_EQ(CallI32("log_level"), -1);
  EXPECT_EQ(CallI32("log_debug"), 0);  // accepted but below the minimum level: not stored
  ASSERT_EQ(context_.effects.logs.size(), 1u);
  EXPECT_EQ(context_.effects.logs[0].level, LogLevel::kWarn);
  EXPECT_EQ(context_.effects.logs[0].message, std::string(512, 'a'));
}

TEST_F(ImportContractTest, SelfReportsItsLengthAndWritesOnlyWhenItFits) {
  EXPECT_EQ(CallI32("self_small"), 27);
  EXPECT_EQ((*instance_->memory().Read(200, 1))[0], 'a');
  EXPECT_EQ(CallI32("self_ok"), 27);
  EXPECT_EQ((*instance_->memory().Read(200, 1))[0], 0xda);
}

TEST_F(ImportContractTest, FailEndsTheInvocationWithTheReason) {
  auto results = instance_->Call("fail", {}, &context_);
  ASSERT_FALSE(results.ok());
  EXPECT_NE(results.status().message().find("guest_failure"), std::string::npos);
  EXPECT_EQ(context_.effects.failure, "aaa");
}

}  // namespace
}  // namespace reef::actor

namespace reef::actor {
namespace {

TEST(ImportBoundsTest, SelfChecksItsBufferEvenWhenTheRefDoesNotFit) {
  wasm::Engine engine(AbiV1Registry());
  auto module = wasm::Module::FromText(R"((module
    (import "reef" "self" (func $self (param i32 i32) (result i32)))
    (memory (export "memory") 1)
    (func (export "f") (result i32) (call $self (i32.const 70000) (i32.const 0)))))");
  ASSERT_TRUE(module.ok());
  auto instance = engine.Instantiate(*module);
  ASSERT_TRUE(instance.ok());
  ActorCallContext context{*ActorRef::Parse("counterAAAAAAAAAAAAAA")};
  auto result = (*instance)->Call("f", {}, &context);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("host_bounds"), std::string::npos)
      << result.status().message();
}

TEST(AbiVersionTest, AModuleOfAnotherAbiVersionIsNotRun) {
  wasm::Engine engine(AbiV1Registry());
  auto module = wasm::Module::FromText(R"((module
    (memory (export "memory") 1)
    (func (export "reef_abi_version") (result i32) (i32.const 2))
    (func (export "reef_alloc") (param i32) (result i32) (i32.const 1024))
    (func (export "reef_handle") (param i32 i32 i32 i32 i32 i32) (result i64)
      (i64.or (i64.extend_i32_u (local.get 0)) (i64.shl (i64.extend_i32_u (local.get 1)) (i64.const 32))))))");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto instance = engine.Instantiate(*module);
  ASSERT_TRUE(instance.ok());
  ActorCallContext context{*ActorRef::Parse("counterAAAAAAAAAAAAAA")};
  auto started = StartHandle(**instance, context, Value::Int(0), Value::Null(), Value::Int(1));
  ASSERT_FALSE(started.ok());
  EXPECT_NE(started.status().message().find("ABI reef version 2"), std::string::npos)
      << started.status().message();
}

}  // namespace
}  // namespace reef::actor
