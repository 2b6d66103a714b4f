// The client against a real Server on loopback (port 0): requests and responses, server
// errors, pushed events, refused connections and timeouts.
#include "client/client.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <thread>

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
  EXPECT_NE(refused.status().message().find("REEF_AUTH_TOKEN"), std::string::npos);

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
