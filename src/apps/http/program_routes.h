// The HTTP API of programs and units (docs/http-api.md "Programs and units"; spec 003):
//
//   POST /programs                        {"manifest": {...}, "modules": {"<name>": "<base64>"}}
//        -> {"generation", "program", "units": {"added", "changed", "unchanged", "removed"}}
//   GET  /programs/current                -> the published program (404 before the first deploy)
//   GET  /units                           -> {"generation", "units": [unit...]}
//   GET  /units/{unit}/instances          -> {"unit", "instances": [instance...]}
//   POST /units/{unit}/invoke?mode=wait|enqueue|try&instance=N&timeout_ms=T
//        body: the message (JSON; {"$actor": ...} for refs) ->
//        wait 200 {"result", "instance", "generation"}; enqueue/try 202 {"queued": true, ...};
//        429 inbox_full (try) and 503 no_room (enqueue, wait) with Retry-After; 504 timeout
//        (wait); 500 invocation_failed (the handler failed; its instance is poisoned); 404
//   POST /units/{unit}/instances/{instance}/kill   -> the instance (poisoned)
//   GET  /reactors                        -> {"reactors": [{"id", "liveness", "actors"}]}
//   POST /reactors/{id}/drain[?timeout_ms=T]       -> {"id", "liveness", "actors"}
//
// Errors: {"error": {"code", "message"}}. The server's auth token applies to every route.
//
// Thread ownership: handlers run on the server's handler threads; `runtime` must outlive the
// server.
#pragma once

#include <vector>

#include "apps/program/program_runtime.h"
#include "server/server.h"

namespace reef::apps::http {

std::vector<server::HttpRoute> ProgramRoutes(program::ProgramRuntime& runtime);

}  // namespace reef::apps::http
