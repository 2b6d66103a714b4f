// The server on real loopback sockets, driven by a Beast client. Every blocking step of the
// client runs with a deadline (kTimeout), so a broken server fails a test instead of hanging.
#include "server/server.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "server_test_support.h"

namespace reef::server {
namespace {

using namespace test;  // NOLINT: the clients and helpers of server_test_support.h

using testing::HttpCall;
using testing::HttpGet;
using testing::HttpResult;

// ---- HTTP ---------------------------------------------------------------------------------------

TEST(ServerTest, HealthReturnsOk) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  ASSERT_NE(server->port(), 0);

  HttpResult result = HttpGet(server->port(), "/health");

  ASSERT_FALSE(result.ec) << result.ec.message();
  EXPECT_EQ(result.status, 200u);
  EXPECT_EQ(result.body, (json{{"status", "ok"}}));
}

TEST(ServerTest, UnknownRouteIs404WithErrorBody) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);

  HttpResult result = HttpGet(server->port(), "/no/such/route");

  ASSERT_FALSE(result.ec) << result.ec.message();
  EXPECT_EQ(result.status, 404u);
  EXPECT_EQ(result.body["error"]["code"], "not_found") << result.body.dump();
  EXPECT_NE(result.body["error"]["message"].get<std::string>().find("/no/such/route"),
            std::string::npos);
}

TEST(ServerTest, NonLoopbackWithoutTokenIsRefused) {
  ServerOptions options;
  options.listen = "0.0.0.0:0";

  auto server = Server::Start(std::move(options));

  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(server.status().message().find("auth token"), std::string::npos);
}

TEST(ServerTest, TokenRequiredWhenSet) {
  ServerOptions options;
  options.auth_token = "s3cret";
  auto server = StartServer(std::move(options));
  ASSERT_NE(server, nullptr);

  HttpResult without = HttpGet(server->port(), "/health");
  HttpResult wrong = HttpGet(server->port(), "/health", "guess");
  HttpResult with = HttpGet(server->port(), "/health", "s3cret");
  WsClient ws_without(server->port());
  WsClient ws_with(server->port(), std::string(kSubprotocol), "s3cret");

  EXPECT_EQ(without.status, 401u);
  EXPECT_EQ(without.body["error"]["code"], "unauthenticated");
  EXPECT_EQ(wrong.status, 401u);
  // a missing token and a wrong one are told apart
  EXPECT_NE(without.text.find("requires its auth token"), std::string::npos) << without.text;
  EXPECT_NE(wrong.text.find("does not carry this server's auth token"), std::string::npos)
      << wrong.text;
  EXPECT_EQ(with.status, 200u);
  EXPECT_EQ(ws_without.handshake_error, websocket::error::upgrade_declined);
  EXPECT_EQ(ws_without.response.result_int(), 401u);
  ASSERT_FALSE(ws_with.handshake_error) << ws_with.handshake_error.message();
  ExpectPong(ws_with.Call(Ping(1)), 1);
}

// ---- Asynchronous routes ------------------------------------------------------------------------

// Responders an asynchronous test route has taken and not answered yet.
struct HeldResponders {
  std::mutex mu;
  std::condition_variable changed;
  std::vector<std::shared_ptr<HttpResponder>> held;

  HttpRoute Route() {
    HttpRoute route;
    route.method = "GET";
    route.path = "/slow";
    route.async_handler = [this](const HttpRequest&, std::shared_ptr<HttpResponder> responder) {
      std::lock_guard lock(mu);
      held.push_back(std::move(responder));
      changed.notify_all();
    };
    return route;
  }
  bool WaitFor(size_t n) {
    std::unique_lock lock(mu);
    return changed.wait_for(lock, kTimeout, [&] { return held.size() >= n; });
  }
  std::vector<std::shared_ptr<HttpResponder>> Take() {
    std::lock_guard lock(mu);
    return std::exchange(held, {});
  }
};

TEST(ServerTest, AsyncRoutesHoldNoHandlerThreadAndAnswerFromAnyThread) {
  HeldResponders slow;
  ServerOptions options;
  options.handler_threads = 1;
  options.routes.push_back(slow.Route());
  auto server = StartServer(std::move(options));
  ASSERT_NE(server, nullptr);
  // Given: four requests wait on the route, more than the one handler thread.
  constexpr int kWaiting = 4;
  std::vector<HttpResult> answers(kWaiting);
  std::vector<std::thread> clients;
  for (int i = 0; i < kWaiting; ++i) {
    clients.emplace_back([&, i] { answers[i] = HttpGet(server->port(), "/slow"); });
  }
  ASSERT_TRUE(slow.WaitFor(kWaiting));
  // Then: the handler thread is free for other requests.
  HttpResult health = HttpGet(server->port(), "/health");
  EXPECT_EQ(health.status, 200u) << health.text;
  // And each waiting request gets what its responder sends, from another thread; a second
  // send is ignored.
  std::thread answerer([held = slow.Take()] {
    for (size_t i = 0; i < held.size(); ++i) {
      held[i]->Send(HttpResponse::Json(201, json{{"n", i}}));
      held[i]->Send(Status::Internal("ignored: answered already"));
    }
  });
  answerer.join();
  for (auto& client : clients) client.join();
  std::set<int> seen;
  for (const HttpResult& answer : answers) {
    EXPECT_EQ(answer.status, 201u) << answer.text;
    seen.insert(answer.body.value("n", -1));
  }
  EXPECT_EQ(seen, (std::set<int>{0, 1, 2, 3}));
}

TEST(ServerTest, AClientThatLeavesWhileItsReplyIsOwedFreesItsConnectionAtOnce) {
  // Given a server taking 8 connections, and 8 clients whose requests wait on an async route
  HeldResponders slow;
  ServerOptions options;
  options.limits.max_connections = 8;
  options.routes.push_back(slow.Route());
  auto server = StartServer(std::move(options));
  ASSERT_NE(server, nullptr);
  std::vector<std::unique_ptr<RawHttpClient>> waiting;
  for (int i = 0; i < 8; ++i) {
    waiting.push_back(std::make_unique<RawHttpClient>(server->port()));
    ASSERT_FALSE(waiting.back()->Write("GET /slow HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
  }
  ASSERT_TRUE(slow.WaitFor(8));
  // No waiting connection can be evicted: while they all wait, there is no room.
  EXPECT_EQ(HttpGet(server->port(), "/health").status, 503u);
  // When those clients go away
  waiting.clear();
  // then their connections close without waiting for the replies: /health is answered
  bool answered = false;
  for (int attempt = 0; attempt < 200 && !answered; ++attempt) {
    answered = HttpGet(server->port(), "/health").status == 200u;
    if (!answered) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(answered) << "the connections of clients that left still hold their slots";
  // and the routes' late answers go nowhere, harmlessly.
  for (auto& responder : slow.Take()) responder->Send(HttpResponse::Json(200, json::object()));
  EXPECT_EQ(HttpGet(server->port(), "/health").status, 200u);
}

TEST(ServerTest, APipelinedRequestBehindAnOwedReplyIsAnsweredAfterIt) {
  HeldResponders slow;
  ServerOptions options;
  options.routes.push_back(slow.Route());
  auto server = StartServer(std::move(options));
  ASSERT_NE(server, nullptr);
  RawHttpClient client(server->port());
  ASSERT_FALSE(client.Write("GET /slow HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
  ASSERT_TRUE(slow.WaitFor(1));
  // A second request on the same connection before the first is answered (pipelining).
  ASSERT_FALSE(client.Write("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
  ASSERT_TRUE(client.WaitDelivered());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  for (auto& responder : slow.Take()) responder->Send(HttpResponse::Json(201, json{{"n", 1}}));
  HttpResult first = client.Read();
  EXPECT_EQ(first.status, 201u) << first.text;
  HttpResult second = client.Read();
  EXPECT_EQ(second.status, 200u) << second.text;
}

TEST(ServerTest, AHandOffRouteRunsOnTheIoThreadForASmallBodyAndOnAHandlerThreadForALargeOne) {
  std::mutex mu;
  std::thread::id handler_thread;
  std::vector<std::thread::id> hand_off_threads;
  ServerOptions options;
  options.handler_threads = 1;
  HttpRoute where;  // a plain route: it runs on the one handler thread
  where.method = "GET";
  where.path = "/where";
  where.handler = [&](const HttpRequest&) -> Result<json> {
    std::lock_guard lock(mu);
    handler_thread = std::this_thread::get_id();
    return json::object();
  };
  options.routes.push_back(where);
  HttpRoute hand_off;
  hand_off.method = "POST";
  hand_off.path = "/hand-off";
  hand_off.hand_off_on_io = true;
  hand_off.async_handler = [&](const HttpRequest& r, std::shared_ptr<HttpResponder> responder) {
    {
      std::lock_guard lock(mu);
      hand_off_threads.push_back(std::this_thread::get_id());
    }
    if (r.body == "drop") return;  // the responder goes unanswered
    responder->Send(HttpResponse::Json(200, json{{"bytes", r.body.size()}}));
  };
  options.routes.push_back(hand_off);
  auto server = StartServer(std::move(options));
  ASSERT_NE(server, nullptr);

  ASSERT_EQ(HttpGet(server->port(), "/where").status, 200u);
  HttpResult small = HttpCall(server->port(), http::verb::post, "/hand-off", "{}");
  const std::string large_body(ServerLimits::kUnchargedBodyBytes + 1, 'x');
  HttpResult large = HttpCall(server->port(), http::verb::post, "/hand-off", large_body);
  HttpResult dropped = HttpCall(server->port(), http::verb::post, "/hand-off", "drop");

  EXPECT_EQ(small.status, 200u) << small.text;
  EXPECT_EQ(small.body["bytes"], 2);
  EXPECT_EQ(large.status, 200u) << large.text;
  EXPECT_EQ(large.body["bytes"], large_body.size());
  EXPECT_EQ(dropped.status, 500u) << dropped.text;  // answered internal, as on a handler thread
  std::lock_guard lock(mu);
  ASSERT_EQ(hand_off_threads.size(), 3u);
  EXPECT_NE(hand_off_threads[0], handler_thread);  // the small body: on the I/O thread
  EXPECT_EQ(hand_off_threads[1], handler_thread);  // the large one: on the handler thread
  EXPECT_NE(hand_off_threads[2], handler_thread);
}

TEST(ServerTest, AnAsyncRouteThatDropsItsResponderOrFailsAnswersAnError) {
  ServerOptions options;
  HttpRoute dropped;
  dropped.method = "GET";
  dropped.path = "/dropped";
  dropped.async_handler = [](const HttpRequest&, std::shared_ptr<HttpResponder>) {};
  options.routes.push_back(dropped);
  HttpRoute failed;
  failed.method = "GET";
  failed.path = "/failed";
  failed.async_handler = [](const HttpRequest&, std::shared_ptr<HttpResponder> responder) {
    responder->Send(Status::NotFound("no such thing"));
  };
  options.routes.push_back(failed);
  auto server = StartServer(std::move(options));
  ASSERT_NE(server, nullptr);

  HttpResult drop = HttpGet(server->port(), "/dropped");
  HttpResult fail = HttpGet(server->port(), "/failed");

  EXPECT_EQ(drop.status, 500u) << drop.text;
  EXPECT_EQ(drop.body["error"]["code"], "internal") << drop.text;
  EXPECT_EQ(fail.status, 404u) << fail.text;
  EXPECT_EQ(fail.body["error"]["message"], "no such thing") << fail.text;
}

TEST(ServerTest, StopEndsRequestsStillOwedByAnAsyncRouteAndALateAnswerGoesNowhere) {
  HeldResponders slow;
  ServerOptions options;
  options.limits.shutdown_timeout = std::chrono::milliseconds(200);
  options.routes.push_back(slow.Route());
  auto server = StartServer(std::move(options));
  ASSERT_NE(server, nullptr);
  HttpResult answer;
  std::thread client([&, port = server->port()] { answer = HttpGet(port, "/slow"); });
  ASSERT_TRUE(slow.WaitFor(1));

  server.reset();  // stops within its shutdown timeout, though the reply is still owed
  client.join();
  EXPECT_NE(answer.status, 200u) << "the connection closed without an answer";

  // The route answers after the server is gone: nothing happens (ASan checks the memory).
  for (auto& responder : slow.Take()) responder->Send(HttpResponse::Json(200, json{{"late", 1}}));
}

// ---- WebSocket ----------------------------------------------------------------------------------

TEST(ServerTest, WebSocketPingRoundTripWithCorrelationId) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  WsClient client(server->port());
  ASSERT_FALSE(client.handshake_error) << client.handshake_error.message();
  EXPECT_EQ(client.response[http::field::sec_websocket_protocol], kSubprotocol);

  ExpectPong(client.Call(Ping("req-1")), "req-1");
  ExpectPong(client.Call(Ping(42)), 42);
}

TEST(ServerTest, OpsListsRegisteredOpsWithSummaries) {
  ServerOptions options;
  ASSERT_TRUE(options.dispatcher
                  .Register("echo", "Returns its args",
                            [](const json& args, Connection&) -> Result<json> { return args; })
                  .ok());
  auto server = StartServer(std::move(options));
  ASSERT_NE(server, nullptr);
  WsClient client(server->port());

  json response = client.Call({{"v", 1}, {"id", 1}, {"op", "ops"}});
  json echoed = client.Call({{"v", 1}, {"id", 2}, {"op", "echo"}, {"args", {{"x", 5}}}});

  ASSERT_EQ(response["ok"], true) << response.dump();
  std::vector<std::string> names;
  for (const json& row : response["result"]["ops"]) {
    names.push_back(row["name"]);
    EXPECT_FALSE(row["summary"].get<std::string>().empty());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"echo", "ops", "ping"}));
  EXPECT_EQ(echoed["result"], (json{{"x", 5}}));
}

TEST(ServerTest, UnknownOpIsAnExplicitError) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  WsClient client(server->port());

  json response = client.Call({{"v", 1}, {"id", "u1"}, {"op", "frobnicate"}, {"args", {}}});

  ExpectError(response, "u1", "not_found", "unknown op \"frobnicate\"");
  EXPECT_NE(response["error"]["message"].get<std::string>().find("ops, ping"), std::string::npos);
  ExpectPong(client.Call(Ping(2)), 2);
}

TEST(ServerTest, MalformedFrameGetsErrorAndConnectionKeepsWorking) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  WsClient client(server->port());
  ASSERT_FALSE(client.handshake_error);

  ASSERT_FALSE(client.Send("{\"v\":1,\"id\":3,"));
  ExpectError(client.Receive(), nullptr, "invalid_argument", "malformed JSON");
  ASSERT_FALSE(client.Send("[1,2]"));
  ExpectError(client.Receive(), nullptr, "invalid_argument", "JSON object");
  ExpectError(client.Call({{"v", 2}, {"id", 4}, {"op", "ping"}}), 4, "invalid_argument",
              "protocol version 2");
  ExpectError(client.Call({{"v", 1}, {"id", 5}}), 5, "invalid_argument", "\"op\"");
  ExpectError(client.Call({{"v", 1}, {"op", "ping"}}), nullptr, "invalid_argument", "\"id\"");
  ExpectError(client.Call({{"v", 1}, {"id", 6}, {"op", "ping"}, {"args", 1}}), 6,
              "invalid_argument", "\"args\"");
  ExpectError(client.Call({{"v", 1}, {"id", 7}, {"op", "ping"}, {"extra", 1}}), 7,
              "invalid_argument", "unknown request field \"extra\"");

  ExpectPong(client.Call(Ping(8)), 8);
}

TEST(ServerTest, OversizedFrameGetsErrorWhileAnotherClientKeepsWorking) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  WsClient big(server->port());
  WsClient other(server->port());
  ASSERT_FALSE(big.handshake_error);
  ASSERT_FALSE(other.handshake_error);

  std::string frame = R"({"v":1,"id":1,"op":"ping","args":{"pad":")";
  frame += std::string((1 << 20) + 1, 'x') + "\"}}";
  ASSERT_FALSE(big.Send(frame));

  ExpectError(big.Receive(), nullptr, "limit_exceeded", "1048576");
  ExpectPong(other.Call(Ping("other")), "other");
  ExpectPong(big.Call(Ping("after")), "after");
}

TEST(ServerTest, WrongSubprotocolRefused) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);

  WsClient chat(server->port(), "chat");
  WsClient none(server->port(), "");

  EXPECT_EQ(chat.handshake_error, websocket::error::upgrade_declined);
  EXPECT_EQ(chat.response.result_int(), 400u);
  EXPECT_NE(chat.response.body().find("reef.v1"), std::string::npos) << chat.response.body();
  EXPECT_NE(chat.response.body().find("chat"), std::string::npos) << chat.response.body();
  EXPECT_EQ(none.handshake_error, websocket::error::upgrade_declined);
  EXPECT_EQ(none.response.result_int(), 400u);
}

TEST(ServerTest, PushedEventReachesTheClient) {
  ServerOptions options;
  ASSERT_TRUE(options.dispatcher
                  .Register("notify-me", "Pushes one event",
                            [](const json&, Connection& connection) -> Result<json> {
                              REEF_RETURN_IF_ERROR(connection.Push("hello", {{"n", 1}}));
                              return json{{"pushed", true}};
                            })
                  .ok());
  auto server = StartServer(std::move(options));
  ASSERT_NE(server, nullptr);
  WsClient client(server->port());

  json event = client.Call({{"v", 1}, {"id", 1}, {"op", "notify-me"}});
  json response = client.Receive();

  EXPECT_EQ(event, (json{{"v", 1}, {"event", "hello"}, {"data", {{"n", 1}}}}));
  EXPECT_EQ(response["result"], (json{{"pushed", true}}));
}

TEST(ServerTest, StopClosesClients) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  uint16_t port = server->port();
  WsClient client(port);
  ExpectPong(client.Call(Ping(1)), 1);

  std::thread stopper([&] { server->Stop(); });
  json after = client.Receive();
  stopper.join();

  EXPECT_TRUE(after.is_discarded());
  EXPECT_EQ(client.last_error, websocket::error::closed) << client.last_error.message();
  EXPECT_EQ(client.close_reason().code, websocket::close_code::going_away);
  EXPECT_EQ(client.close_reason().reason, "server shutting down");
  EXPECT_TRUE(HttpGet(port, "/health").ec);  // the listener is gone
  server.reset();                            // a second Stop (the destructor) is harmless
}

TEST(ServerTest, StopDropsClientsThatDoNotAnswerTheCloseHandshake) {
  // Given a client that stops reading, so it never answers the server's close frame
  ServerOptions options;
  options.limits.shutdown_timeout = std::chrono::milliseconds(200);
  auto server = StartServer(std::move(options));
  ASSERT_NE(server, nullptr);
  WsClient client(server->port());
  ExpectPong(client.Call(Ping(1)), 1);

  // when the server stops (without being destroyed)
  server->Stop();

  // then the client's socket was closed anyway: its next read sees the close frame the
  // server sent and then the end of the stream, never a live connection
  json after = client.Receive();
  EXPECT_TRUE(after.is_discarded());
  EXPECT_TRUE(client.last_error) << "the connection is still open after Stop";
  EXPECT_NE(client.last_error, asio::error::timed_out);
}

}  // namespace
}  // namespace reef::server
