// Asynchronous protocol ops (ProtocolDispatcher::RegisterAsync) on a real server: a waiting op
// holds no handler thread, a connection's requests still run one at a time in order, an op
// that drops its answer is answered `internal`, and an answer after the server stopped goes
// nowhere (ASan/TSan run these).
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "server_test_support.h"

namespace reef::server::test {
namespace {

// Answers held by the test until it releases them, from its own thread.
class HeldAnswers {
 public:
  void Hold(OpDone done) {
    std::lock_guard lock(mu_);
    held_.push_back(std::move(done));
    changed_.notify_all();
  }
  // True when `n` answers are held within kTimeout.
  bool WaitHeld(size_t n) {
    std::unique_lock lock(mu_);
    return changed_.wait_for(lock, kTimeout, [&] { return held_.size() >= n; });
  }
  size_t held() {
    std::lock_guard lock(mu_);
    return held_.size();
  }
  // Answers every held op with {"answered": `value`} from a thread of its own.
  void AnswerAll(int value) {
    std::vector<OpDone> taken;
    {
      std::lock_guard lock(mu_);
      taken.swap(held_);
    }
    std::thread([taken = std::move(taken), value] {
      for (const OpDone& done : taken) done(json{{"answered", value}});
    }).join();
  }
  void DropAll() {
    std::lock_guard lock(mu_);
    held_.clear();
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  std::vector<OpDone> held_;
};

json Request(const json& id, const std::string& op) {
  return {{"v", 1}, {"id", id}, {"op", op}, {"args", json::object()}};
}

std::unique_ptr<Server> StartWithHeldOp(std::shared_ptr<HeldAnswers> held, ServerOptions options) {
  EXPECT_TRUE(options.dispatcher
                  .RegisterAsync("wait", "answers when the test says so",
                                 [held](const json&, Connection&, OpDone done) {
                                   held->Hold(std::move(done));
                                 })
                  .ok());
  return StartServer(std::move(options));
}

TEST(AsyncOpTest, AWaitingOpHoldsNoHandlerThread) {
  // Given a server with one handler thread and two connections waiting in an async op
  auto held = std::make_shared<HeldAnswers>();
  ServerOptions options;
  options.handler_threads = 1;
  auto server = StartWithHeldOp(held, std::move(options));
  ASSERT_NE(server, nullptr);
  WsClient first(server->port());
  WsClient second(server->port());
  ASSERT_FALSE(first.Send(Request(1, "wait").dump()));
  ASSERT_FALSE(second.Send(Request(2, "wait").dump()));
  ASSERT_TRUE(held->WaitHeld(2));

  // then a third connection and GET /health are answered while they wait
  WsClient third(server->port());
  ExpectPong(third.Call(Ping(3)), 3);
  EXPECT_EQ(testing::HttpGet(server->port(), "/health").status, 200u);

  // and the waiting ops get their answers when they come, from another thread
  held->AnswerAll(7);
  EXPECT_EQ(first.Receive(),
            (json{{"v", 1}, {"id", 1}, {"ok", true}, {"result", {{"answered", 7}}}}));
  EXPECT_EQ(second.Receive(),
            (json{{"v", 1}, {"id", 2}, {"ok", true}, {"result", {{"answered", 7}}}}));
}

TEST(AsyncOpTest, RequestsOfOneConnectionRunInOrderBehindAWaitingOp) {
  auto held = std::make_shared<HeldAnswers>();
  auto server = StartWithHeldOp(held, {});
  ASSERT_NE(server, nullptr);
  WsClient client(server->port());
  // Given a ping sent behind a waiting op on the same connection
  ASSERT_FALSE(client.Send(Request("a", "wait").dump()));
  ASSERT_FALSE(client.Send(Ping("b").dump()));
  ASSERT_TRUE(held->WaitHeld(1));
  // then the ping has not run yet (no second op started, no answer)
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(held->held(), 1u);

  // when the op answers, both answers come, in order
  held->AnswerAll(1);
  EXPECT_EQ(client.Receive()["id"], "a");
  ExpectPong(client.Receive(), "b");
}

TEST(AsyncOpTest, AnOpThatDropsItsAnswerIsAnsweredInternal) {
  auto held = std::make_shared<HeldAnswers>();
  auto server = StartWithHeldOp(held, {});
  ASSERT_NE(server, nullptr);
  WsClient client(server->port());
  ASSERT_FALSE(client.Send(Request(5, "wait").dump()));
  ASSERT_TRUE(held->WaitHeld(1));
  held->DropAll();
  ExpectError(client.Receive(), 5, "internal", "ended without answering");
  ExpectPong(client.Call(Ping(6)), 6);  // the connection goes on
}

TEST(AsyncOpTest, AnAnswerAfterTheServerStoppedGoesNowhere) {
  auto held = std::make_shared<HeldAnswers>();
  ServerOptions options;
  options.limits.shutdown_timeout = std::chrono::milliseconds(200);
  auto server = StartWithHeldOp(held, std::move(options));
  ASSERT_NE(server, nullptr);
  {
    WsClient client(server->port());
    ASSERT_FALSE(client.Send(Request(1, "wait").dump()));
    ASSERT_TRUE(held->WaitHeld(1));
    // When the server stops while the op still waits: Stop ends within its deadline
    auto started = std::chrono::steady_clock::now();
    server.reset();
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
  }
  // and the late answer (its connection and server gone) is dropped without harm
  held->AnswerAll(1);
}

TEST(AsyncOpTest, AnswersRacingStopNeverOutliveTheServer) {
  // An answer that comes while Stop runs either reaches its connection or goes nowhere; the
  // work it posts must never outlive the server's thread pools (ASan: a use after free of the
  // io_context or of a strand). The answers fire from their own thread at a varying moment
  // around Stop, 40 times.
  for (int round = 0; round < 40; ++round) {
    auto held = std::make_shared<HeldAnswers>();
    ServerOptions options;
    options.limits.shutdown_timeout = std::chrono::milliseconds(20);
    auto server = StartWithHeldOp(held, std::move(options));
    ASSERT_NE(server, nullptr);
    WsClient client(server->port());
    for (int i = 0; i < 4; ++i) ASSERT_FALSE(client.Send(Request(i, "wait").dump()));
    ASSERT_TRUE(held->WaitHeld(1));
    std::thread answers([held, round] {
      std::this_thread::sleep_for(std::chrono::microseconds(500 * (round % 8)));
      for (int i = 0; i < 4; ++i) {
        held->AnswerAll(i);
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    });
    auto started = std::chrono::steady_clock::now();
    server.reset();
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
    answers.join();
  }
}

}  // namespace
}  // namespace reef::server::test
