#include "apps/http/metrics_route.h"

#include <string>
#include <utility>

namespace reef::apps::http {

server::HttpRoute MetricsRoute(const MetricsRegistry& registry) {
  server::HttpRoute route;
  route.method = "GET";
  route.path = "/metrics";
  route.summary =
      "Prometheus metrics of the modules, the event store, the units, the reactors and the "
      "engine";
  route.response_handler = [&registry](const server::HttpRequest&) -> Result<server::HttpResponse> {
    REEF_ASSIGN_OR_RETURN(std::string text, RenderPrometheusText(registry.Collect()));
    server::HttpResponse response;
    response.content_type = "text/plain; version=0.0.4; charset=utf-8";
    response.body = std::move(text);
    return response;
  };
  return route;
}

}  // namespace reef::apps::http
