// Helpers for the server's tests on real loopback sockets: a server on an ephemeral port, and
// checks of protocol responses (the clients are in tests/support/ws_test_client.h).
//
// Thread ownership: each helper is used by the thread that calls it.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/error.hpp>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "server/server.h"
#include "support/http_test_client.h"
#include "support/ws_test_client.h"

namespace reef::server {
namespace test {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using json = nlohmann::json;

using testing::kTimeout;
using testing::RawHttpClient;
using testing::WsClient;

inline std::unique_ptr<Server> StartServer(ServerOptions options = {}) {
  options.listen = "127.0.0.1:0";
  auto server = Server::Start(std::move(options));
  EXPECT_TRUE(server.ok()) << server.status().ToString();
  return server.ok() ? std::move(server).value() : nullptr;
}

inline json Ping(const json& id) {
  return {{"v", 1}, {"id", id}, {"op", "ping"}, {"args", json::object()}};
}

inline void ExpectPong(const json& response, const json& id) {
  EXPECT_EQ(response, (json{{"v", 1}, {"id", id}, {"ok", true}, {"result", {{"pong", true}}}}))
      << response.dump();
}

inline void ExpectError(const json& response, const json& id, std::string_view code,
                        std::string_view fragment) {
  ASSERT_TRUE(response.is_object()) << response.dump();
  EXPECT_EQ(response.value("v", 0), 1);
  EXPECT_EQ(response["id"], id) << response.dump();
  EXPECT_EQ(response["ok"], false) << response.dump();
  EXPECT_EQ(response["error"]["code"], code) << response.dump();
  EXPECT_NE(response["error"]["message"].get<std::string>().find(fragment), std::string::npos)
      << response.dump();
}

// Holds handlers until released; counts the ones that entered.
class Gate {
 public:
  void Enter() {
    std::unique_lock lock(mu_);
    ++entered_;
    changed_.notify_all();
    changed_.wait(lock, [this] { return released_; });
  }
  // True when `n` handlers entered within kTimeout.
  bool WaitEntered(int n) {
    std::unique_lock lock(mu_);
    return changed_.wait_for(lock, kTimeout, [&] { return entered_ >= n; });
  }
  void Release() {
    std::lock_guard lock(mu_);
    released_ = true;
    changed_.notify_all();
  }
  // True when Release was called within kTimeout.
  bool WaitReleased() {
    std::unique_lock lock(mu_);
    return changed_.wait_for(lock, kTimeout, [&] { return released_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  int entered_ = 0;
  bool released_ = false;
};

// Releases a gate when it goes out of scope: declared after the server, so a failing test
// does not leave the server's Stop waiting for a held handler.
struct ReleaseOnExit {
  std::shared_ptr<Gate> gate;
  ~ReleaseOnExit() { gate->Release(); }
};

// A route that counts its calls in `calls` and answers {}.
inline HttpRoute CountingRoute(std::string method, std::string path,
                               std::shared_ptr<std::atomic<int>> calls) {
  return {std::move(method), std::move(path),
          [calls](const HttpRequest&) -> Result<json> {
            ++*calls;
            return json::object();
          },
          "counts its calls"};
}

}  // namespace test
}  // namespace reef::server
