// The server-wide budget for HTTP bodies being parsed and handled
// (ServerLimits::max_concurrent_body_bytes): large bodies take turns, small ones and bodyless
// requests never wait, and a client that stalls mid-body holds nothing.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
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

TEST(ServerBodyBudgetTest, LargeBodiesWaitForRoomInTheServerWideBudgetSmallOnesDoNot) {
  // Given a budget of 1 MiB for bodies in flight, and a route that holds its request until
  // released and counts how many run at once
  auto gate = std::make_shared<Gate>();
  auto running = std::make_shared<std::atomic<int>>(0);
  auto most = std::make_shared<std::atomic<int>>(0);
  ServerOptions options;
  options.limits.max_concurrent_body_bytes = 1 << 20;
  options.routes.push_back({"POST", "/big",
                            [gate, running, most](const HttpRequest& request) -> Result<json> {
                              int now = ++*running;
                              for (int seen = *most;
                                   now > seen && !most->compare_exchange_weak(seen, now);) {
                              }
                              gate->Enter();
                              --*running;
                              return json{{"bytes", request.body.size()}};
                            },
                            "big", 4u << 20});
  options.routes.push_back({"POST", "/small",
                            [](const HttpRequest& request) -> Result<json> {
                              return json{{"bytes", request.body.size()}};
                            },
                            "small"});
  auto server = StartServer(std::move(options));
  ASSERT_NE(server, nullptr);
  ReleaseOnExit release{gate};

  // when four clients send 600 KB bodies at once
  std::vector<HttpResult> results(4);
  std::vector<std::thread> clients;
  for (int i = 0; i < 4; ++i) {
    clients.emplace_back([&, i, port = server->port()] {
      results[i] =
          HttpCall(port, boost::beast::http::verb::post, "/big", std::string(600'000, 'x'));
    });
  }
  ASSERT_TRUE(gate->WaitEntered(1));
  std::this_thread::sleep_for(milliseconds(300));

  // then one runs and the rest wait (two would not fit in 1 MiB), while a request without a
  // body and a small body are answered at once
  EXPECT_EQ(running->load(), 1);
  EXPECT_EQ(HttpGet(server->port(), "/health").status, 200u);  // answered, not held back
  HttpResult small =
      HttpCall(server->port(), boost::beast::http::verb::post, "/small", std::string(1000, 'y'));
  EXPECT_EQ(small.status, 200u) << small.text;

  // and once released, every one is answered in turn
  gate->Release();
  for (auto& client : clients) client.join();
  for (const HttpResult& result : results) {
    EXPECT_EQ(result.status, 200u) << result.text;
    EXPECT_EQ(result.body["bytes"], 600'000) << result.text;
  }
  EXPECT_EQ(most->load(), 1);
}

TEST(ServerBodyBudgetTest, AClientThatStallsMidBodyHoldsNoRoomInTheBudget) {
  // Given a budget of 1 MiB, and a client that announced a 3 MB body, sent 100 KB and stalls
  ServerOptions options;
  options.limits.max_concurrent_body_bytes = 1 << 20;
  options.routes.push_back({"POST", "/big",
                            [](const HttpRequest& request) -> Result<json> {
                              return json{{"bytes", request.body.size()}};
                            },
                            "big", 4u << 20});
  auto server = StartServer(std::move(options));
  ASSERT_NE(server, nullptr);
  RawHttpClient staller(server->port());
  ASSERT_FALSE(
      staller.Write("POST /big HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 3000000\r\n\r\n" +
                    std::string(100'000, 'x')));

  // when another client sends a 600 KB body
  auto start = Clock::now();
  HttpResult result =
      HttpCall(server->port(), boost::beast::http::verb::post, "/big", std::string(600'000, 'y'));

  // then it is answered without waiting for the stalled one
  EXPECT_EQ(result.status, 200u) << result.text;
  EXPECT_LT(Clock::now() - start, milliseconds(5'000));
}

TEST(ServerBodyBudgetTest, ABodyLargerThanTheWholeBudgetRunsAlone) {
  ServerOptions options;
  options.limits.max_concurrent_body_bytes = 100'000;
  options.routes.push_back({"POST", "/big",
                            [](const HttpRequest& request) -> Result<json> {
                              return json{{"bytes", request.body.size()}};
                            },
                            "big", 4u << 20});
  auto server = StartServer(std::move(options));
  ASSERT_NE(server, nullptr);
  HttpResult result =
      HttpCall(server->port(), boost::beast::http::verb::post, "/big", std::string(2'000'000, 'x'));
  EXPECT_EQ(result.status, 200u) << result.text;
  EXPECT_EQ(result.body["bytes"], 2'000'000);
}

}  // namespace
}  // namespace reef::server
