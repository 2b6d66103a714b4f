#include "server/http_stats.h"

#include <algorithm>

namespace reef::server {

namespace {

constexpr MetricDesc kRequestDuration = {
    "reef_http_request_duration_seconds", MetricType::kHistogram,
    "Time from an HTTP request's head read to its answer handed to the socket, by route "
    "pattern (\"none\": no route matched)"};
constexpr MetricDesc kResponses = {"reef_http_responses_total", MetricType::kCounter,
                                   "HTTP answers by status code"};

}  // namespace

HttpStats::HttpStats(std::vector<std::string> routes) {
  routes.push_back("none");
  for (std::string& label : routes) {
    auto route = std::make_unique<Route>();
    route->label = std::move(label);
    routes_.push_back(std::move(route));
  }
}

void HttpStats::Record(int route, unsigned status, std::chrono::nanoseconds took) {
  size_t index = route < 0 ? routes_.size() - 1 : std::min<size_t>(route, routes_.size() - 1);
  Route& r = *routes_[index];
  double seconds = std::chrono::duration<double>(took).count();
  size_t bucket = std::lower_bound(kBounds.begin(), kBounds.end(), seconds) - kBounds.begin();
  r.counts[bucket].fetch_add(1, std::memory_order_relaxed);
  r.sum_ns.fetch_add(static_cast<uint64_t>(std::max<int64_t>(0, took.count())),
                     std::memory_order_relaxed);
  if (status < responses_.size()) responses_[status].fetch_add(1, std::memory_order_relaxed);
}

void HttpStats::Collect(MetricFamilies& out) const {
  out.Declare(kRequestDuration);
  out.Declare(kResponses);
  std::array<uint64_t, kBounds.size() + 1> counts;
  for (const auto& route : routes_) {
    uint64_t total = 0;
    for (size_t i = 0; i < counts.size(); ++i) {
      counts[i] = route->counts[i].load(std::memory_order_relaxed);
      total += counts[i];
    }
    if (total == 0) continue;
    double sum = static_cast<double>(route->sum_ns.load(std::memory_order_relaxed)) / 1e9;
    out.AddHistogram(kRequestDuration, {{"route", route->label}}, kBounds, counts, sum);
  }
  for (size_t code = 0; code < responses_.size(); ++code) {
    uint64_t n = responses_[code].load(std::memory_order_relaxed);
    if (n > 0) out.Add(kResponses, {{"code", std::to_string(code)}}, n);
  }
}

}  // namespace reef::server
