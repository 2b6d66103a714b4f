// ServerOptions::on_disconnect and Connection::Handle, the server hooks the image relies on
// for per-connection state (server/server.h).
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include "image_test_support.h"

namespace reef::server {
namespace {

using image::test_support::Client;
using image::test_support::json;

TEST(ServerDisconnectTest, OnDisconnectRunsOncePerClosedConnectionAfterItsRequests) {
  std::mutex mu;
  std::multiset<uint64_t> disconnected;
  std::set<uint64_t> seen;
  ServerOptions options;
  options.listen = "127.0.0.1:0";
  ASSERT_TRUE(options.dispatcher
                  .Register("whoami", "Connection id",
                            [&](const json&, Connection& connection) -> Result<json> {
                              std::lock_guard lock(mu);
                              seen.insert(connection.id());
                              return json{{"id", connection.id()}};
                            })
                  .ok());
  options.on_disconnect = [&](uint64_t id) {
    std::lock_guard lock(mu);
    disconnected.insert(id);
  };
  auto server = Server::Start(std::move(options));
  ASSERT_TRUE(server.ok()) << server.status().ToString();

  // Given two clients that made a request each and closed
  for (int i = 0; i < 2; ++i) {
    Client client((*server)->port());
    client.Ok("whoami");
  }
  // then each was reported once (asynchronously, after its requests)
  for (int wait = 0; wait < 500; ++wait) {
    {
      std::lock_guard lock(mu);
      if (disconnected.size() >= 2) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // and a client still open when the server stops is reported by the time it is destroyed
  Client open((*server)->port());
  open.Ok("whoami");
  server->reset();
  std::lock_guard lock(mu);
  EXPECT_EQ(std::set<uint64_t>(disconnected.begin(), disconnected.end()), seen);
  EXPECT_EQ(disconnected.size(), 3u);
}

TEST(ServerDisconnectTest, HandleOutlivesTheOpAndExpiresAfterClose) {
  std::mutex mu;
  std::weak_ptr<Connection> kept;
  ServerOptions options;
  options.listen = "127.0.0.1:0";
  ASSERT_TRUE(options.dispatcher
                  .Register("keep", "Keeps a handle",
                            [&](const json&, Connection& connection) -> Result<json> {
                              std::lock_guard lock(mu);
                              kept = connection.Handle();
                              return json{{"room", connection.OutgoingRoomBytes()}};
                            })
                  .ok());
  auto server = Server::Start(std::move(options));
  ASSERT_TRUE(server.ok());
  {
    Client client((*server)->port());
    json result = client.Ok("keep");
    EXPECT_GT(result["room"].get<uint64_t>(), 0u);
    // Given a handle kept after the op returned, a later push reaches the client
    std::shared_ptr<Connection> connection;
    {
      std::lock_guard lock(mu);
      connection = kept.lock();
    }
    ASSERT_NE(connection, nullptr);
    EXPECT_TRUE(connection->Push("later", {{"n", 1}}).ok());
    connection.reset();
    EXPECT_EQ(client.NextEvent(), (json{{"v", 1}, {"event", "later"}, {"data", {{"n", 1}}}}));
  }
  // then, once the client closed, the handle expires
  for (int wait = 0; wait < 500 && !kept.expired(); ++wait) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(kept.expired());
}

}  // namespace
}  // namespace reef::server
