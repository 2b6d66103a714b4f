// The server's limits under hostile or unlucky clients (issue 13, items 5, 7, 8, 9 and 11): a
// real Server on loopback with small limits, driven by Beast clients with deadlines.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "server/server.h"
#include "server_test_support.h"

namespace reef::server {
namespace {

using namespace test;  // NOLINT: the clients and helpers of server_test_support.h
using std::chrono::milliseconds;
using testing::HttpCall;
using testing::HttpGet;
using testing::HttpResult;
using Clock = std::chrono::steady_clock;

// Polls `condition` every millisecond for at most kTimeout.
template <typename Condition>
bool Eventually(Condition condition) {
  auto deadline = Clock::now() + kTimeout;
  while (Clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(milliseconds(1));
  }
  return condition();
}

// Registers op "block", which waits in `gate` until it is released.
Status RegisterBlockingOp(ServerOptions& options, const std::shared_ptr<Gate>& gate) {
  return options.dispatcher.Register("block", "Blocks until released",
                                     [gate](const json&, Connection&) -> Result<json> {
                                       gate->Enter();
                                       return json::object();
                                     });
}

// Starts server->Stop() on its own thread and returns once the listener no longer takes
// connections (Stop has begun).
std::thread StopInBackground(Server& server) {
  uint16_t port = server.port();
  std::thread stopper([&server] { server.Stop(); });
  EXPECT_TRUE(Eventually([port] { return HttpGet(port, "/health").status != 200; }));
  return stopper;
}

json Request(const json& id, std::string_view op, json args = json::object()) {
  return {{"v", 1}, {"id", id}, {"op", op}, {"args", std::move(args)}};
}

// ---- Item 5: authentication and body limits from the request head ----------------------------

TEST(ServerLimitsTest, UnauthenticatedUploadGets401FromItsHeadBeforeTheBody) {
  // Given a server with a token and a route accepting 64 MiB bodies
  auto calls = std::make_shared<std::atomic<int>>(0);
  ServerOptions options;
  options.auth_token = "s3cret";
  options.routes.push_back({"POST", "/upload",
                            [calls](const HttpRequest&) -> Result<json> {
                              ++*calls;
                              return json::object();
                            },
                            "upload", 64u << 20});
  auto server = StartServer(std::move(options));
  ASSERT_NE(server, nullptr);
  RawHttpClient client(server->port());
  ASSERT_FALSE(client.connect_error);

  // when a client without the token sends the head of a 60 MB upload and none of its body
  ASSERT_FALSE(
      client.Write("POST /upload HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 60000000\r\n\r\n"));
  HttpResult result = client.Read(milliseconds(5'000));

  // then it is refused from the head at once: the server neither waits for nor buffers a body
  EXPECT_EQ(result.status, 401u) << result.ec.message();
  EXPECT_EQ(result.body["error"]["code"], "unauthenticated") << result.text;
  EXPECT_FALSE(client.keep_alive);
  EXPECT_EQ(*calls, 0);
}

TEST(ServerLimitsTest, ContentLengthOverTheRouteLimitGets413FromTheHead) {
  // Given a route accepting at most 1 KiB
  ServerOptions options;
  options.auth_token = "s3cret";
  options.routes.push_back({"POST", "/small",
                            [](const HttpRequest&) -> Result<json> { return json::object(); },
                            "small", 1024});
  auto server = StartServer(std::move(options));
  ASSERT_NE(server, nullptr);
  RawHttpClient client(server->port());

  // when an authenticated client announces a 2 KiB body and sends none of it
  ASSERT_FALSE(client.Write(
      "POST /small HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer s3cret\r\nContent-Length: "
      "2048\r\n\r\n"));
  HttpResult result = client.Read(milliseconds(5'000));

  // then it gets 413 naming the limit at once
  EXPECT_EQ(result.status, 413u) << result.ec.message();
  EXPECT_EQ(result.body["error"]["code"], "limit_exceeded") << result.text;
  EXPECT_NE(result.text.find("limit of 1024 bytes for POST /small"), std::string::npos)
      << result.text;
}

TEST(ServerLimitsTest, MalformedFramingGets400BeforeTheConnectionCloses) {
  ServerOptions options;
  options.routes.push_back({"POST", "/small",
                            [](const HttpRequest&) -> Result<json> { return json::object(); },
                            "small", 1024});
  auto server = StartServer(std::move(options));
  ASSERT_NE(server, nullptr);
  for (const char* head :
       {"POST /small HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: -1\r\n\r\n",
        "POST /small HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
        "POST /small HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"}) {
    RawHttpClient client(server->port());
    ASSERT_FALSE(client.Write(head));
    HttpResult result = client.Read(milliseconds(5'000));
    EXPECT_EQ(result.status, 400u) << head << result.ec.message();
    EXPECT_NE(result.text.find("malformed HTTP request"), std::string::npos) << result.text;
    EXPECT_FALSE(client.keep_alive);
  }
}

TEST(ServerLimitsTest, AHeaderThatCarriesOneValueSentTwiceIsRefusedBeforeTheRouteRuns) {
  auto calls = std::make_shared<std::atomic<int>>(0);
  ServerOptions options;
  options.routes.push_back(CountingRoute("POST", "/run", calls));
  auto server = StartServer(std::move(options));
  ASSERT_NE(server, nullptr);
  RawHttpClient client(server->port());
  ASSERT_FALSE(client.Write(
      "POST /run HTTP/1.1\r\nHost: 127.0.0.1\r\nIdempotency-Key: a\r\nIdempotency-Key: b\r\n"
      "Content-Length: 2\r\n\r\n{}"));
  HttpResult result = client.Read(milliseconds(5'000));
  EXPECT_EQ(result.status, 400u) << result.ec.message();
  EXPECT_NE(result.text.find("header Idempotency-Key is sent more than once"), std::string::npos)
      << result.text;
  EXPECT_EQ(*calls, 0);
  // Fields that may repeat still do (the last value is kept).
  ASSERT_FALSE(
      client.Write("POST /run HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Note: a\r\nX-Note: b\r\n"
                   "Content-Length: 2\r\n\r\n{}"));
  EXPECT_EQ(client.Read(milliseconds(5'000)).status, 200u);
  EXPECT_EQ(*calls, 1);
}

TEST(ServerLimitsTest, ContentLengthOverEveryRouteLimitGets413FromTheHead) {
  // Given routes accepting at most 1 MiB
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  RawHttpClient client(server->port());

  // when a client announces a 1 GB body
  ASSERT_FALSE(client.Write(
      "POST /health HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000000000\r\n\r\n"));
  HttpResult result = client.Read(milliseconds(5'000));

  // then it gets 413 at once
  EXPECT_EQ(result.status, 413u) << result.ec.message();
  EXPECT_NE(result.text.find("1048576"), std::string::npos) << result.text;
}

// ---- Item 7: WebSocket requests waiting for the handler are bounded ----------------------------

TEST(ServerLimitsTest, WebSocketReadsNoFurtherWhileRequestsWaitForTheHandler) {
  // Given an op that blocks until released, and 1 MiB of requests allowed to wait for it
  auto gate = std::make_shared<Gate>();
  ServerOptions options;
  options.limits.max_inbound_bytes = 1 << 20;
  ASSERT_TRUE(RegisterBlockingOp(options, gate).ok());
  auto server = StartServer(std::move(options));
  ASSERT_NE(server, nullptr);
  ReleaseOnExit release{gate};
  WsClient client(server->port());
  ASSERT_FALSE(client.Send(Request(1, "block").dump()));
  ASSERT_TRUE(gate->WaitEntered(1));

  // when the client sends 200 requests of 1 MB behind the blocked one
  std::string frame = Request(2, "ping", {{"pad", std::string(1'000'000, 'x')}}).dump();
  int sent = 0;
  while (sent < 200 && !client.TrySend(frame, milliseconds(1'000))) ++sent;

  // then the server stopped reading them (TCP pushed back on the client) instead of queueing
  // 200 MB: what got through is the bound plus what the sockets' buffers hold
  EXPECT_LT(sent, 100);
}

TEST(ServerLimitsTest, StopEndsWithinItsDeadlineWhileAClientFloodsRequests) {
  // Given a slow op and a client sending 1 MB requests for it as fast as it can
  ServerOptions options;
  options.limits.shutdown_timeout = milliseconds(1'000);
  ASSERT_TRUE(options.dispatcher
                  .Register("slow", "Takes 20 ms",
                            [](const json&, Connection&) -> Result<json> {
                              std::this_thread::sleep_for(milliseconds(20));
                              return json::object();
                            })
                  .ok());
  auto server = StartServer(std::move(options));
  ASSERT_NE(server, nullptr);
  std::atomic<int> sent{0};
  std::thread flood([port = server->port(), &sent] {
    WsClient client(port);
    std::string frame = Request(1, "slow", {{"pad", std::string(1'000'000, 'x')}}).dump();
    while (sent < 600 && !client.TrySend(frame, milliseconds(2'000))) ++sent;
  });
  // (8 sent: the 4 MiB of requests allowed to wait are full, the rest sits in socket buffers)
  EXPECT_TRUE(Eventually([&] { return sent >= 8; }));

  // when the server stops
  auto start = Clock::now();
  server->Stop();
  auto took = Clock::now() - start;
  flood.join();

  // then it stopped within its shutdown deadline (requests read but not started are refused,
  // not run): 1 s, plus at most 2 s for the aborted connection to go, plus slack for a loaded
  // sanitizer build; running the 600 requests would take 12 s
  EXPECT_LT(took, milliseconds(5'000));
}

TEST(ServerLimitsTest, AWebSocketOpStillRunningWhenStopGivesUpOnItsConnectionEndsCleanly) {
  // Given a WebSocket op that blocks until released, running, and a 100 ms shutdown deadline
  auto gate = std::make_shared<Gate>();
  ServerOptions options;
  options.limits.shutdown_timeout = milliseconds(100);
  ASSERT_TRUE(RegisterBlockingOp(options, gate).ok());
  auto server = StartServer(std::move(options));
  ASSERT_NE(server, nullptr);
  WsClient client(server->port());
  ASSERT_FALSE(client.Send(Request(1, "block").dump()));
  ASSERT_TRUE(gate->WaitEntered(1));

  // when the server stops, and the op returns only after Stop stopped waiting for its
  // aborted connection (2 s) and stopped the I/O threads, so the answer is left queued
  std::thread release([gate] {
    std::this_thread::sleep_for(milliseconds(2'500));
    gate->Release();
  });
  server->Stop();
  release.join();
  server.reset();

  // then the client lost its connection without an answer, and the connection's session was
  // destroyed while the handler pool its strand belongs to was alive (the sanitizer builds
  // report the use-after-free this test was written for)
  json answer = client.Receive();
  EXPECT_TRUE(answer.is_discarded()) << answer.dump();
}

// ---- Item 8: the WebSocket outgoing queue is bounded in bytes -----------------------------------

TEST(ServerLimitsTest, ClientThatDoesNotReadIsClosedAtTheOutgoingByteBound) {
  // Given an op pushing 64 events of 1 MiB, and 4 MiB allowed to queue for a client
  auto done = std::make_shared<Gate>();
  auto refusal = std::make_shared<Status>();
  ServerOptions options;
  options.limits.max_outgoing_bytes = 4 << 20;
  ASSERT_TRUE(
      options.dispatcher
          .Register("flood", "Pushes 64 events of 1 MiB",
                    [done, refusal](const json&, Connection& connection) -> Result<json> {
                      for (int i = 0; i < 64 && refusal->ok(); ++i) {
                        *refusal = connection.Push("blob", {{"text", std::string(1 << 20, 'x')}});
                      }
                      done->Release();
                      return json::object();
                    })
          .ok());
  auto server = StartServer(std::move(options));
  ASSERT_NE(server, nullptr);
  WsClient client(server->port());

  // when a client asks for them and reads only once the op is over
  ASSERT_FALSE(client.Send(Request(1, "flood").dump()));
  ASSERT_TRUE(done->WaitReleased());
  int events = 0;
  while (!client.Receive().is_discarded()) ++events;

  // then the op was told the queue is full, the client got what fit, then close code 1008
  // naming the byte limit
  EXPECT_EQ(refusal->code(), Code::kLimitExceeded) << refusal->ToString();
  EXPECT_NE(refusal->message().find("max_outgoing_bytes"), std::string::npos);
  EXPECT_LT(events, 64);
  // (The read ends with `closed`, or with a transport error when the server's teardown beats
  // the client's close reply, as it can under ASan at -O0; the close frame is what counts.)
  EXPECT_TRUE(client.last_error);
  EXPECT_EQ(client.close_reason().code, websocket::close_code::policy_error);
  EXPECT_NE(client.close_text().find("max_outgoing_bytes = 4194304"), std::string::npos)
      << client.close_text();
}

// ---- Item 9: idle connections and the connection cap ------------------------------------------

TEST(ServerLimitsTest, IdleConnectionsAtTheCapDoNotLockOutHealth) {
  // Given a server taking 8 connections, and 40 clients that connect and send nothing
  ServerOptions options;
  options.limits.max_connections = 8;
  auto server = StartServer(std::move(options));
  ASSERT_NE(server, nullptr);
  std::vector<std::unique_ptr<RawHttpClient>> idle;
  for (int i = 0; i < 40; ++i) idle.push_back(std::make_unique<RawHttpClient>(server->port()));

  // when a fresh client asks for /health
  HttpResult health = HttpGet(server->port(), "/health");

  // then it is answered: the oldest idle connections made room
  EXPECT_EQ(health.status, 200u) << health.text << health.ec.message();
  EXPECT_TRUE(idle.front()->ClosedWithin(milliseconds(5'000)));
}

TEST(ServerLimitsTest, IdleWebSocketsDoNotLockOutHealth) {
  // Given a server taking 8 connections, at most 4 of them WebSockets, all 4 taken
  ServerOptions options;
  options.limits.max_connections = 8;
  options.limits.max_websockets = 4;
  auto server = StartServer(std::move(options));
  ASSERT_NE(server, nullptr);
  std::vector<std::unique_ptr<WsClient>> sockets;
  for (int i = 0; i < 4; ++i) {
    sockets.push_back(std::make_unique<WsClient>(server->port()));
    ASSERT_FALSE(sockets.back()->handshake_error) << sockets.back()->handshake_error.message();
  }

  // when a fifth WebSocket and then a fresh HTTP client connect
  WsClient fifth(server->port());
  HttpResult health = HttpGet(server->port(), "/health");

  // then the WebSocket is refused naming the limit, and /health is answered
  EXPECT_EQ(fifth.handshake_error, websocket::error::upgrade_declined);
  EXPECT_EQ(fifth.response.result_int(), 503u);
  EXPECT_NE(fifth.response.body().find("max_websockets (4"), std::string::npos)
      << fifth.response.body();
  EXPECT_EQ(health.status, 200u) << health.text << health.ec.message();
}

TEST(ServerLimitsTest, SilentConnectionIsClosedAfterTheHeaderTimeout) {
  // Given a 200 ms header timeout
  ServerOptions options;
  options.limits.header_timeout = milliseconds(200);
  auto server = StartServer(std::move(options));
  ASSERT_NE(server, nullptr);

  // when a client connects and sends nothing
  auto start = Clock::now();
  RawHttpClient client(server->port());

  // then the server closes the connection after the timeout
  EXPECT_TRUE(client.ClosedWithin(milliseconds(5'000)));
  EXPECT_GE(Clock::now() - start, milliseconds(150));
}

TEST(ServerLimitsTest, WebSocketPeerThatAnswersNoPingIsClosed) {
  // Given a 400 ms WebSocket idle timeout
  auto disconnected = std::make_shared<Gate>();
  ServerOptions options;
  options.limits.websocket_idle_timeout = milliseconds(400);
  options.on_disconnect = [disconnected](uint64_t) { disconnected->Release(); };
  auto server = StartServer(std::move(options));
  ASSERT_NE(server, nullptr);
  WsClient client(server->port());
  ExpectPong(client.Call(Ping(1)), 1);

  // when the client then neither sends nor reads (so it never answers the server's ping)
  // then the server drops the connection
  EXPECT_TRUE(disconnected->WaitReleased());
}

TEST(ServerLimitsTest, IdleWebSocketThatAnswersPingsStaysOpen) {
  // Given a 300 ms WebSocket idle timeout
  ServerOptions options;
  options.limits.websocket_idle_timeout = milliseconds(300);
  auto server = StartServer(std::move(options));
  ASSERT_NE(server, nullptr);
  WsClient client(server->port());

  // when the client sends nothing for a second but keeps reading (answering pings)
  json response = client.IdleThenCall(milliseconds(1'000), Ping(1));

  // then the connection is still open
  ExpectPong(response, 1);
}

// ---- Item 11: Stop answers what is in flight ----------------------------------------------------

TEST(ServerLimitsTest, StopAnswersTheHttpRequestInFlight) {
  // Given a request whose handler is running
  auto gate = std::make_shared<Gate>();
  ServerOptions options;
  options.routes.push_back({"GET", "/slow",
                            [gate](const HttpRequest&) -> Result<json> {
                              gate->Enter();
                              return json{{"done", true}};
                            },
                            "slow"});
  auto server = StartServer(std::move(options));
  ASSERT_NE(server, nullptr);
  ReleaseOnExit release{gate};
  HttpResult result;
  std::thread client([&, port = server->port()] { result = HttpGet(port, "/slow"); });
  EXPECT_TRUE(gate->WaitEntered(1));

  // when the server stops while it runs, and the handler then finishes
  std::thread stopper = StopInBackground(*server);
  gate->Release();
  client.join();
  stopper.join();

  // then the client got its answer
  EXPECT_FALSE(result.ec) << result.ec.message();
  EXPECT_EQ(result.status, 200u);
  EXPECT_EQ(result.body, (json{{"done", true}}));
}

TEST(ServerLimitsTest, RequestArrivingDuringStopGets503WithoutRunning) {
  // Given a request in flight (keeping Stop waiting) and a second client half way through
  // sending a request
  auto gate = std::make_shared<Gate>();
  auto counted = std::make_shared<std::atomic<int>>(0);
  ServerOptions options;
  options.routes.push_back({"GET", "/slow",
                            [gate](const HttpRequest&) -> Result<json> {
                              gate->Enter();
                              return json::object();
                            },
                            "slow"});
  options.routes.push_back(CountingRoute("POST", "/count", counted));
  auto server = StartServer(std::move(options));
  ASSERT_NE(server, nullptr);
  ReleaseOnExit release{gate};
  HttpResult slow;
  std::thread client([&, port = server->port()] { slow = HttpGet(port, "/slow"); });
  EXPECT_TRUE(gate->WaitEntered(1));
  RawHttpClient late(server->port());
  EXPECT_FALSE(late.Write("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
  EXPECT_EQ(late.Read().status, 200u);  // (so the server took the connection before stopping)
  EXPECT_FALSE(
      late.Write("POST /count HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 10\r\n\r\n12345"));
  EXPECT_TRUE(late.WaitDelivered());

  // when the server starts stopping and the second request's last bytes arrive
  std::thread stopper = StopInBackground(*server);
  EXPECT_FALSE(late.Write("67890"));
  HttpResult refused = late.Read(milliseconds(5'000));
  gate->Release();
  client.join();
  stopper.join();

  // then the late request got 503 and never ran; the one in flight was answered
  EXPECT_EQ(refused.status, 503u) << refused.ec.message();
  EXPECT_NE(refused.text.find("shutting down"), std::string::npos) << refused.text;
  EXPECT_EQ(*counted, 0);
  EXPECT_EQ(slow.status, 200u) << slow.ec.message();
}

TEST(ServerLimitsTest, StopAnswersWebSocketRequestsInFlightThenCloses) {
  // Given a WebSocket request whose op is running
  auto gate = std::make_shared<Gate>();
  ServerOptions options;
  ASSERT_TRUE(options.dispatcher
                  .Register("block", "Blocks until released",
                            [gate](const json&, Connection&) -> Result<json> {
                              gate->Enter();
                              return json{{"done", true}};
                            })
                  .ok());
  auto server = StartServer(std::move(options));
  ASSERT_NE(server, nullptr);
  ReleaseOnExit release{gate};
  WsClient client(server->port());
  ASSERT_FALSE(client.Send(Request(7, "block").dump()));
  ASSERT_TRUE(gate->WaitEntered(1));

  // when the server stops while it runs, and the op then finishes
  std::thread stopper = StopInBackground(*server);
  gate->Release();
  json response = client.Receive();
  json after = client.Receive();
  stopper.join();

  // then the client got the response, then close code 1001
  EXPECT_EQ(response, (json{{"v", 1}, {"id", 7}, {"ok", true}, {"result", {{"done", true}}}}));
  EXPECT_TRUE(after.is_discarded());
  EXPECT_EQ(client.close_reason().code, websocket::close_code::going_away);
}

}  // namespace
}  // namespace reef::server
