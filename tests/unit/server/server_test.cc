// The server on real loopback sockets, driven by a Beast client. Every blocking step of the
// client runs with a deadline (kTimeout), so a broken server fails a test instead of hanging.
#include "server/server.h"

#include <gtest/gtest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <chrono>
#include <optional>
#include <string>
#include <thread>

#include "support/http_test_client.h"

namespace reef::server {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;
using json = nlohmann::json;

constexpr auto kTimeout = std::chrono::seconds(10);

std::unique_ptr<Server> StartServer(ServerOptions options = {}) {
  options.listen = "127.0.0.1:0";
  auto server = Server::Start(std::move(options));
  EXPECT_TRUE(server.ok()) << server.status().ToString();
  return server.ok() ? std::move(server).value() : nullptr;
}

// Runs one asynchronous client operation to completion or to kTimeout (then the socket is
// closed and the operation fails with timed_out).
class Driver {
 public:
  template <typename Start>
  beast::error_code Await(beast::tcp_stream& socket, Start&& start) {
    std::optional<beast::error_code> done;
    start([&done](beast::error_code ec, auto&&...) { done = ec; });
    ioc_.restart();
    ioc_.run_for(kTimeout);
    if (!done) {
      socket.close();
      ioc_.restart();
      ioc_.run();
      ADD_FAILURE() << "client operation timed out";
      return asio::error::timed_out;
    }
    return *done;
  }
  asio::io_context& ioc() { return ioc_; }

 private:
  asio::io_context ioc_;
};

using testing::HttpGet;
using testing::HttpResult;

// A WebSocket client of one server.
class WsClient {
 public:
  // Connects and upgrades; `handshake_error` and `response` tell how the upgrade went.
  WsClient(uint16_t port, std::string subprotocol = std::string(kSubprotocol),
           std::string token = "")
      : ws_(driver_.ioc()) {
    tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), port);
    handshake_error =
        Await([&](auto handler) { beast::get_lowest_layer(ws_).async_connect(endpoint, handler); });
    if (handshake_error) return;
    ws_.set_option(websocket::stream_base::decorator([=](websocket::request_type& request) {
      if (!subprotocol.empty()) request.set(http::field::sec_websocket_protocol, subprotocol);
      if (!token.empty()) request.set(http::field::authorization, "Bearer " + token);
    }));
    handshake_error =
        Await([&](auto handler) { ws_.async_handshake(response, "127.0.0.1", "/", handler); });
  }

  beast::error_code Send(const std::string& text) {
    ws_.text(true);
    return Await([&](auto handler) { ws_.async_write(asio::buffer(text), handler); });
  }

  // The next message as JSON (discarded JSON on a read error, with `last_error` set).
  json Receive() {
    beast::flat_buffer buffer;
    last_error = Await([&](auto handler) { ws_.async_read(buffer, handler); });
    if (last_error) return json::value_t::discarded;
    return json::parse(beast::buffers_to_string(buffer.data()), nullptr, false);
  }

  // Sends `request` and returns the next message.
  json Call(const json& request) {
    EXPECT_FALSE(Send(request.dump()));
    return Receive();
  }

  websocket::close_reason close_reason() const { return ws_.reason(); }

  beast::error_code handshake_error;
  beast::error_code last_error;
  websocket::response_type response;

 private:
  template <typename Start>
  beast::error_code Await(Start&& start) {
    return driver_.Await(beast::get_lowest_layer(ws_), std::forward<Start>(start));
  }

  Driver driver_;
  websocket::stream<beast::tcp_stream> ws_;
};

json Ping(const json& id) {
  return {{"v", 1}, {"id", id}, {"op", "ping"}, {"args", json::object()}};
}

void ExpectPong(const json& response, const json& id) {
  EXPECT_EQ(response, (json{{"v", 1}, {"id", id}, {"ok", true}, {"result", {{"pong", true}}}}))
      << response.dump();
}

void ExpectError(const json& response, const json& id, std::string_view code,
                 std::string_view fragment) {
  ASSERT_TRUE(response.is_object()) << response.dump();
  EXPECT_EQ(response.value("v", 0), 1);
  EXPECT_EQ(response["id"], id) << response.dump();
  EXPECT_EQ(response["ok"], false) << response.dump();
  EXPECT_EQ(response["error"]["code"], code) << response.dump();
  EXPECT_NE(response["error"]["message"].get<std::string>().find(fragment), std::string::npos)
      << response.dump();
}

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
  EXPECT_EQ(with.status, 200u);
  EXPECT_EQ(ws_without.handshake_error, websocket::error::upgrade_declined);
  EXPECT_EQ(ws_without.response.result_int(), 401u);
  ASSERT_FALSE(ws_with.handshake_error) << ws_with.handshake_error.message();
  ExpectPong(ws_with.Call(Ping(1)), 1);
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
  options.stop_timeout = std::chrono::milliseconds(200);
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
