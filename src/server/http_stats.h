// What the listener's HTTP side did, for GET /metrics (docs/http-api.md "HTTP metrics"):
//
//   reef_http_request_duration_seconds{route}  histogram: from a request's head read to its
//                                              answer handed to the socket; route is the
//                                              matched pattern ("POST /commands/{name}/execute")
//                                              or "none"; only routes with requests appear
//   reef_http_responses_total{code}            counter: answers by HTTP status code
//
// An accepted WebSocket upgrade is not counted (a WebSocket's requests are protocol ops); one
// refused (401, 403) is, like any other answer.
//
// Thread ownership: Record from any thread (the connections' strands), Collect from any
// thread (a scrape); both lock-free. Routes are fixed when the server starts.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/metrics.h"

namespace reef::server {

class HttpStats {
 public:
  // Bucket bounds in seconds: 0.5 ms to 10 s.
  static constexpr std::array<double, 14> kBounds = {
      0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};

  // `routes`: one label per route of the server's table ("GET /health"), in table order.
  explicit HttpStats(std::vector<std::string> routes);

  // One answered request: `route` indexes the table, -1 for none; `status` is its HTTP status.
  void Record(int route, unsigned status, std::chrono::nanoseconds took);
  // Adds both metrics' current samples.
  void Collect(MetricFamilies& out) const;

 private:
  struct Route {
    std::string label;
    std::array<std::atomic<uint64_t>, kBounds.size() + 1> counts{};
    std::atomic<uint64_t> sum_ns{0};
  };
  std::vector<std::unique_ptr<Route>> routes_;          // the table's, then "none"
  std::array<std::atomic<uint64_t>, 600> responses_{};  // by status code 0..599
};

}  // namespace reef::server
