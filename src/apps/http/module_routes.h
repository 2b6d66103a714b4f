// The HTTP API of event-sourced modules (docs/http-api.md "Modules"). For each KIND in
// commands | projectors | effects:
//
//   POST   /KIND/{name}/versions/{version}[?activate=true]   body: the .wasm bytes
//          -> 201 (stored) or 200 (the same bytes again) {"kind", "name", "version", "sha256",
//             "size_bytes", "created", "active"}; 409 already_exists for other bytes
//   GET    /KIND                       -> {"modules": [module...]}
//   GET    /KIND/{name}                -> module: versions, active version, env, status
//   PUT    /KIND/{name}/active         {"version": "1.2.0"} -> module (a rolling upgrade)
//   DELETE /KIND/{name}/active         -> module (deactivated; its state is kept)
//   POST   /KIND/{name}/replay         -> module (projectors and effects)
//   GET    /KIND/{name}/env            -> {"env": {...}}
//   PUT    /KIND/{name}/env/{key}      {"value": "..."} -> {"env": {...}}
//   DELETE /KIND/{name}/env/{key}      -> {"env": {...}}
//   DELETE /KIND/{name}/versions/{version}, DELETE /KIND/{name}   (never the active version)
// and
//   POST   /commands/{name}/execute    body: the input JSON; headers Idempotency-Key,
//          X-Correlation-Id -> 200 {"position", "events", "execution_id", "attempts",
//          "replayed"}; 422 command_rejected with the module's message; 409 conflict
//   POST   /projectors/{name}/query    {"sql": "SELECT ...", "params": [...]} -> {"rows": [...]}
//   DELETE /crypto-keys/{scope}        -> {"scope", "shredded": true}
// GET /metrics is MetricsRoute (apps/http/metrics_route.h); the modules' series come from
// ModuleRuntime::CollectMetrics.
//
// Errors: {"error": {"code", "message"}} with the status of the code (400, 404, 409, 412, 413,
// 422, 500, 503). The server's auth token applies to every route.
//
// Thread ownership: handlers run on the server's handler threads, except command executions
// and projector queries: their handlers hand them to the runtime (ExecuteAsync on the reactor
// fleet, QueryProjectorAsync on its I/O threads) and return; the answer is sent from where
// the work ends. Past RuntimeOptions::max_executions (1,024) in progress, 503 `unavailable`
// with Retry-After. `runtime` must outlive the server.
#pragma once

#include <vector>

#include "apps/module_runtime.h"
#include "server/server.h"

namespace reef::apps::http {

std::vector<server::HttpRoute> ModuleRoutes(ModuleRuntime& runtime);

}  // namespace reef::apps::http
