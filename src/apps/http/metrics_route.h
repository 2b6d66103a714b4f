// GET /metrics: the Prometheus text of every series registered with a MetricsRegistry
// (core/metrics.h; docs/http-api.md "GET /metrics").
//
//   GET /metrics    -> 200 text/plain; version=0.0.4; charset=utf-8
//                      500 internal when a collector declared a metric wrongly
//
// Thread ownership: the handler runs on the server's handler threads and collects there;
// `registry` must outlive the server.
#pragma once

#include "core/metrics.h"
#include "server/server.h"

namespace reef::apps::http {

server::HttpRoute MetricsRoute(const MetricsRegistry& registry);

}  // namespace reef::apps::http
