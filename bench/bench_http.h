// What the HTTP benchmarks (apps_bench, program_bench) share: the nearest-rank quantile of
// latency samples, and one keep-alive HTTP/1.1 connection to a server on 127.0.0.1.
//
// A benchmark has no use for a failed request: every failure (connect, write, read, the server
// closing the connection) prints "<program>: <what>" to stderr and exits with status 1, so a
// broken server never turns into a fast-looking number.
//
// Thread ownership: a KeepAliveConnection is used by one thread at a time (it runs its own
// io_context on the caller's thread).
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace reef::bench {

// The q-quantile (0..1) of `samples`, nearest rank; 0 for no samples.
inline double Quantile(std::vector<double> samples, double q) {
  if (samples.empty()) return 0;
  std::sort(samples.begin(), samples.end());
  const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(samples.size())));
  return samples[std::clamp<size_t>(rank, 1, samples.size()) - 1];
}

// A keep-alive HTTP/1.1 connection to 127.0.0.1:port; connect, each write and each read must
// finish within `step_timeout`.
class KeepAliveConnection {
 public:
  // `program` prefixes the message of a failure (see the top of this file).
  KeepAliveConnection(std::string_view program, uint16_t port,
                      std::chrono::seconds step_timeout = std::chrono::seconds(30))
      : program_(program), step_timeout_(step_timeout), stream_(ioc_) {
    const boost::asio::ip::tcp::endpoint endpoint(boost::asio::ip::make_address("127.0.0.1"), port);
    if (auto ec = Await([&](auto handler) { stream_.async_connect(endpoint, handler); })) {
      Fail(fmt::format("connect to port {}: {}", port, ec.message()));
    }
  }

  // POSTs `body` (as `content_type`) to `target`; returns the reply's status and body.
  std::pair<unsigned, std::string> Post(const std::string& target, const std::string& body,
                                        std::string_view content_type = "application/json") {
    return Request(boost::beast::http::verb::post, target, body, content_type);
  }
  // GETs `target`; returns the reply's status and body.
  std::pair<unsigned, std::string> Get(const std::string& target) {
    return Request(boost::beast::http::verb::get, target, "");
  }

 private:
  std::pair<unsigned, std::string> Request(boost::beast::http::verb verb, const std::string& target,
                                           const std::string& body,
                                           std::string_view content_type = "application/json") {
    namespace http = boost::beast::http;
    const std::string what = fmt::format("{} {}", std::string(http::to_string(verb)), target);
    http::request<http::string_body> request(verb, target, 11);
    request.set(http::field::host, "127.0.0.1");
    if (verb == http::verb::post) request.set(http::field::content_type, content_type);
    request.keep_alive(true);
    request.body() = body;
    request.prepare_payload();
    if (auto ec = Await([&](auto handler) { http::async_write(stream_, request, handler); })) {
      Fail(fmt::format("{}: write: {}", what, ec.message()));
    }
    http::response<http::string_body> response;
    if (auto ec =
            Await([&](auto handler) { http::async_read(stream_, buffer_, response, handler); })) {
      Fail(fmt::format("{}: read: {}", what, ec.message()));
    }
    if (!response.keep_alive()) {
      Fail(fmt::format("{}: the server closed the connection", what));
    }
    return {response.result_int(), std::move(response.body())};
  }

  [[noreturn]] void Fail(const std::string& what) {
    fmt::print(stderr, "{}: {}\n", program_, what);
    std::fflush(stdout);
    std::_Exit(1);
  }

  template <typename Start>
  boost::beast::error_code Await(Start start) {
    std::optional<boost::beast::error_code> done;
    stream_.expires_after(step_timeout_);
    start([&done](boost::beast::error_code ec, auto&&...) { done = ec; });
    ioc_.restart();
    ioc_.run();
    return done.value_or(boost::asio::error::timed_out);
  }

  std::string program_;
  std::chrono::seconds step_timeout_;
  boost::asio::io_context ioc_;
  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
};

}  // namespace reef::bench
