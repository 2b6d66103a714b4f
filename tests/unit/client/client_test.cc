// The client against a real Server on loopback (port 0): requests and responses, server
// errors, pushed events, refused connections and timeouts.
#include "client/client.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <string>
#include <thread>
#include <vector>

#include "server/server.h"

namespace reef::client {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

constexpr auto kTimeout = 10s;

// A server with the built-ins plus test ops: "fail" (NotFound), "emit" (pushes args.count
// events {"n": i} before answering), "slow" (answers after args.ms milliseconds).
std::unique_ptr<server::Server> StartServer(std::optional<std::string> token = std::nullopt) {
  server::ServerOptions options;
  options.listen = "127.0.0.1:0";
  options.auth_token = std::move(token);
  EXPECT_TRUE(options.dispatcher
                  .Register("fail", "always fails",
                            [](const json&, server::Connection&) -> Result<json> {
                              return Status::NotFound("unknown actor @nobody");
                            })
                  .ok());
  EXPECT_TRUE(options.dispatcher
                  .Register("emit", "pushes events",
                            [](const json& args, server::Connection& connection) -> Result<json> {
                              int count = args.value("count", 1);
                              for (int i = 0; i < count; ++i) {
                                REEF_RETURN_IF_ERROR(connection.Push("tick", {{"n", i}}));
                              }
                              return json{{"pushed", count}};
                            })
                  .ok());
  EXPECT_TRUE(options.dispatcher
                  .Register("slow", "answers late",
                            [](const json& args, server::Connection&) -> Result<json> {
                              std::this_thread::sleep_for(
                                  std::chrono::milliseconds(args.value("ms", 0)));
                              return json{{"slept", true}};
                            })
                  .ok());
  auto server = server::Server::Start(std::move(options));
  EXPECT_TRUE(server.ok()) << server.status().ToString();
  return server.ok() ? std::move(server).value() : nullptr;
}

std::unique_ptr<Client> ConnectTo(const server::Server& server) {
  ClientOptions options;
  options.address = server.address();
  auto client = Client::Connect(options);
  EXPECT_TRUE(client.ok()) << client.status().ToString();
  return client.ok() ? std::move(client).value() : nullptr;
}

// A port nothing listens on: bind an ephemeral port, then close it.
uint16_t ClosedPort() {
  boost::asio::io_context ioc;
  boost::asio::ip::tcp::acceptor acceptor(
      ioc, boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
  uint16_t port = acceptor.local_endpoint().port();
  acceptor.close();
  return port;
}

// A one-connection WebSocket server speaking reef.v1 that answers the requests in order with
// `replies` (raw text; "$ID" becomes the request's id), then waits for the client's close.
// Stands in for a broken or hostile server, which a real Server cannot be made into.
class FakeServer {
 public:
  explicit FakeServer(std::vector<std::string> replies)
      : acceptor_(ioc_, boost::asio::ip::tcp::endpoint(
                            boost::asio::ip::make_address("127.0.0.1"), 0)) {
    thread_ = std::thread([this, replies = std::move(replies)] { Serve(replies); });
  }
  ~FakeServer() { thread_.join(); }

  std::string address() const {
    return "127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port());
  }

 private:
  void Serve(const std::vector<std::string>& replies) {
    namespace beast = boost::beast;
    namespace websocket = beast::websocket;
    boost::asio::ip::tcp::socket socket(ioc_);
    beast::error_code ec;
    acceptor_.accept(socket, ec);
    if (ec) return;
    websocket::stream<boost::asio::ip::tcp::socket> ws(std::move(socket));
    ws.set_option(websocket::stream_base::decorator([](websocket::response_type& response) {
      response.set(beast::http::field::sec_websocket_protocol, "reef.v1");
    }));
    ws.accept(ec);
    if (ec) return;
    for (std::string reply : replies) {
      beast::flat_buffer buffer;
      ws.read(buffer, ec);
      if (ec) return;
      json request = json::parse(beast::buffers_to_string(buffer.data()), nullptr, false);
      std::string id = request.is_object() && request.contains("id") && request["id"].is_string()
                           ? request["id"].get<std::string>()
                           : "";
      if (size_t at = reply.find("$ID"); at != std::string::npos) reply.replace(at, 3, id);
      ws.text(true);
      ws.write(boost::asio::buffer(reply), ec);
      if (ec) return;
    }
    beast::flat_buffer buffer;
    ws.read(buffer, ec);  // until the client closes
  }

  boost::asio::io_context ioc_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::thread thread_;
};

TEST(ClientTest, PingReturnsTheResult) {
  auto server = StartServer();
  ASSERT_TRUE(server);
  auto client = ConnectTo(*server);
  ASSERT_TRUE(client);
  auto result = client->Call("ping", json::object(), kTimeout);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(*result, (json{{"pong", true}}));
  EXPECT_TRUE(client->connected());
}

TEST(ClientTest, OpsListsRegisteredOperations) {
  auto server = StartServer();
  ASSERT_TRUE(server);
  auto client = ConnectTo(*server);
  ASSERT_TRUE(client);
  auto result = client->Call("ops", json::object(), kTimeout);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  std::vector<std::string> names;
  for (const json& op : (*result)["ops"]) names.push_back(op["name"]);
  EXPECT_NE(std::find(names.begin(), names.end(), "ping"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "emit"), names.end());
}

TEST(ClientTest, ServerErrorBecomesStatusWithItsCode) {
  auto server = StartServer();
  ASSERT_TRUE(server);
  auto client = ConnectTo(*server);
  ASSERT_TRUE(client);
  auto failed = client->Call("fail", json::object(), kTimeout);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), Code::kNotFound);
  EXPECT_EQ(failed.status().message(), "unknown actor @nobody");

  auto unknown = client->Call("pnig", json::object(), kTimeout);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), Code::kNotFound);
  EXPECT_NE(unknown.status().message().find("pnig"), std::string::npos);

  // The connection keeps working after errors.
  EXPECT_TRUE(client->Call("ping", json::object(), kTimeout).ok());
}

TEST(ClientTest, PushedEventsArriveThroughNextEventInOrder) {
  auto server = StartServer();
  ASSERT_TRUE(server);
  auto client = ConnectTo(*server);
  ASSERT_TRUE(client);
  auto result = client->Call("emit", {{"count", 3}}, kTimeout);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  for (int i = 0; i < 3; ++i) {
    auto event = client->NextEvent(kTimeout);
    ASSERT_TRUE(event.ok()) << event.status().ToString();
    ASSERT_TRUE(event->has_value());
    EXPECT_EQ((*event)->kind, "tick");
    EXPECT_EQ((*event)->data, (json{{"n", i}}));
  }
  auto none = client->NextEvent(50ms);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

TEST(ClientTest, EventQueueOverflowIsReportedNotSkippedSilently) {
  auto server = StartServer();
  ASSERT_TRUE(server);
  ClientOptions options;
  options.address = server->address();
  options.max_queued_events = 2;
  auto client = Client::Connect(options);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  ASSERT_TRUE((*client)->Call("emit", {{"count", 5}}, kTimeout).ok());
  EXPECT_TRUE((*client)->NextEvent(kTimeout).ok());
  EXPECT_TRUE((*client)->NextEvent(kTimeout).ok());
  auto overflow = (*client)->NextEvent(kTimeout);
  ASSERT_FALSE(overflow.ok());
  EXPECT_EQ(overflow.status().code(), Code::kLimitExceeded);
  EXPECT_NE(overflow.status().message().find("max_queued_events"), std::string::npos);
}

TEST(ClientTest, ConnectionRefusedIsExplicitAndNamesTheAddress) {
  std::string address = "127.0.0.1:" + std::to_string(ClosedPort());
  ClientOptions options;
  options.address = address;
  auto client = Client::Connect(options);
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), Code::kUnavailable);
  EXPECT_NE(client.status().message().find("cannot connect to " + address), std::string::npos)
      << client.status().message();
  EXPECT_NE(client.status().message().find("is `reef serve` running?"), std::string::npos);
}

TEST(ClientTest, MalformedAddressIsInvalidArgument) {
  for (std::string_view address :
       {"127.0.0.1", "127.0.0.1:", "127.0.0.1:99999", ":7433", "::1:7433"}) {
    ClientOptions options;
    options.address = std::string(address);
    auto client = Client::Connect(options);
    ASSERT_FALSE(client.ok()) << address;
    EXPECT_EQ(client.status().code(), Code::kInvalidArgument) << address;
  }
  EXPECT_EQ(SplitAddress("[::1]:7433")->first, "::1");
  EXPECT_EQ(SplitAddress("localhost:80")->second, 80);
}

TEST(ClientTest, MissingTokenIsRefusedWithAHint) {
  auto server = StartServer("s3cret");
  ASSERT_TRUE(server);
  ClientOptions options;
  options.address = server->address();
  auto refused = Client::Connect(options);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Code::kFailedPrecondition);
  EXPECT_TRUE(IsUnauthenticated(refused.status())) << refused.status().ToString();
  EXPECT_TRUE(refused.status().message().starts_with("unauthenticated: "))
      << refused.status().message();
  EXPECT_NE(refused.status().message().find("REEF_AUTH_TOKEN"), std::string::npos);
  // The refusal is not described twice ("unauthenticated: ... unauthenticated: ...").
  EXPECT_EQ(refused.status().message().find("unauthenticated", 1), std::string::npos)
      << refused.status().message();
  EXPECT_FALSE(IsUnauthenticated(Status::FailedPrecondition("actor is not paused")));

  options.auth_token = "wrong";
  auto wrong = Client::Connect(options);
  ASSERT_FALSE(wrong.ok());
  EXPECT_TRUE(IsUnauthenticated(wrong.status())) << wrong.status().ToString();

  options.auth_token = "s3cret";
  auto accepted = Client::Connect(options);
  ASSERT_TRUE(accepted.ok()) << accepted.status().ToString();
  EXPECT_TRUE((*accepted)->Call("ping", json::object(), kTimeout).ok());
}

TEST(ClientTest, CallTimesOutAndTheLateResponseIsDropped) {
  auto server = StartServer();
  ASSERT_TRUE(server);
  auto client = ConnectTo(*server);
  ASSERT_TRUE(client);
  auto late = client->Call("slow", {{"ms", 500}}, 50ms);
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.status().code(), Code::kUnavailable);
  EXPECT_NE(late.status().message().find("within 50 ms"), std::string::npos);
  // The next call gets its own response, not the late one.
  auto ping = client->Call("ping", json::object(), kTimeout);
  ASSERT_TRUE(ping.ok()) << ping.status().ToString();
  EXPECT_EQ(*ping, (json{{"pong", true}}));
}

TEST(ClientTest, OversizedRequestIsRefusedBeforeSending) {
  auto server = StartServer();
  ASSERT_TRUE(server);
  auto client = ConnectTo(*server);
  ASSERT_TRUE(client);
  auto big = client->Call("ping", {{"blob", std::string(2u << 20, 'x')}}, kTimeout);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), Code::kLimitExceeded);
  EXPECT_TRUE(client->Call("ping", json::object(), kTimeout).ok());
}

TEST(ClientTest, ServerShutdownIsReportedOnTheNextCall) {
  auto server = StartServer();
  ASSERT_TRUE(server);
  auto client = ConnectTo(*server);
  ASSERT_TRUE(client);
  server.reset();  // stops: close code 1001, then the sockets are closed
  auto result = client->Call("ping", json::object(), kTimeout);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), Code::kUnavailable);
  EXPECT_FALSE(client->connected());
  // The close frame that arrived while the client was idle names the reason.
  EXPECT_NE(result.status().message().find("code 1001: server shutting down"), std::string::npos)
      << result.status().message();
  EXPECT_EQ(client->failure().message(), result.status().message());
}

TEST(ClientTest, MalformedResponsesAreErrorsNotExceptions) {
  // Given a server whose responses have fields of the wrong types,
  FakeServer server({
      R"({"v":1,"id":"$ID","ok":"yes","result":1})",
      R"({"v":1,"id":"$ID","ok":false,"error":{"code":7,"message":["no"]}})",
      R"({"v":1,"id":"$ID","ok":false,"error":"broken"})",
      R"({"v":1,"id":"$ID","ok":true,"result":{"pong":true}})",
  });
  ClientOptions options;
  options.address = server.address();
  auto client = Client::Connect(options);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  // when calls read them, then each is an error status and the connection stays usable.
  for (int i = 0; i < 3; ++i) {
    auto result = (*client)->Call("ping", json::object(), kTimeout);
    ASSERT_FALSE(result.ok()) << i;
    EXPECT_EQ(result.status().code(), Code::kInternal) << result.status().ToString();
  }
  auto result = (*client)->Call("ping", json::object(), kTimeout);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ((*result)["pong"], true);
}

TEST(ClientTest, CloseIsCleanAndIdempotent) {
  auto server = StartServer();
  ASSERT_TRUE(server);
  auto client = ConnectTo(*server);
  ASSERT_TRUE(client);
  EXPECT_TRUE(client->Close().ok());
  EXPECT_TRUE(client->Close().ok());
  auto after = client->Call("ping", json::object(), kTimeout);
  EXPECT_EQ(after.status().code(), Code::kUnavailable);
}

}  // namespace
}  // namespace reef::client
