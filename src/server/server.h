// Server: the image's one network listener. A single TCP port serves plain HTTP (a table of
// routes; GET /health now) and WebSocket upgrades speaking the reef.v1 protocol
// (server/protocol.h). Loopback only unless an auth token is set; with a token, every HTTP
// request and every WebSocket upgrade must carry it (`Authorization: Bearer <token>` or the
// dashboard's cookie, server/access.h) or gets 401, except the public routes
// (HttpRoute::public_route). Requests from other sites' pages get 403 (the browser guards).
//
// Thread ownership: Start and Stop from any thread (Stop is idempotent; the destructor calls
// it). Inside, `io_threads` Asio threads do network I/O only; requests are handed to
// `handler_threads` handler threads, which run HTTP route handlers and protocol ops. Requests
// of one connection are handled in arrival order; different connections run in parallel.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"
#include "server/limits.h"
#include "server/protocol.h"

namespace reef::server {

class HttpStats;

// An HTTP request as a route handler sees it.
struct HttpRequest {
  std::string method;  // "GET"
  std::string target;  // "/health?x=1", as sent
  std::string path;    // "/health", the target without its query
  std::string body;    // at most ServerLimits::max_request_bytes bytes
  // Header fields by lowercase name ("idempotency-key"). A repeated field keeps its last
  // value, except Authorization, Content-Type, Idempotency-Key and X-Correlation-Id: a request
  // repeating one of them is refused with 400 before any route runs.
  std::map<std::string, std::string, std::less<>> headers;
  // Values of the route's `{name}` path segments, percent-decoded ("/commands/{name}/execute"
  // on "/commands/deposit/execute" gives {"name": "deposit"}).
  std::map<std::string, std::string, std::less<>> params;

  // The header `name` (lowercase), or nullopt.
  std::optional<std::string> Header(std::string_view name) const;
  // The query parameter `name` of the target, percent-decoded; nullopt when absent.
  std::optional<std::string> QueryParam(std::string_view name) const;
  // The route's `{name}` path segment. REQUIRES: the matched route's pattern has it (the
  // router fills every segment of the pattern before the handler runs).
  const std::string& PathParam(std::string_view name) const;
};

// A reply with a chosen status, content type and extra headers, for routes whose answer is
// not "200 with JSON" (201 Created, 422, Prometheus text, Retry-After).
struct HttpResponse {
  unsigned status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;

  // `body` as compact JSON text with a trailing newline.
  static HttpResponse Json(unsigned status, const nlohmann::json& body);
  // The error shape of every route: {"error": {"code": ..., "message": ...}}.
  static HttpResponse Error(unsigned status, std::string_view code, std::string_view message);
};
using HttpResponseHandler = std::function<Result<HttpResponse>(const HttpRequest&)>;

// True when `path` matches the route pattern `pattern`: segments match literally, except a
// `{name}` segment, which matches one non-empty segment and is stored percent-decoded in
// *params (when not null). A segment that does not percent-decode to valid text never matches.
bool MatchRoutePath(std::string_view pattern, std::string_view path,
                    std::map<std::string, std::string, std::less<>>* params);

// Answers one request of an asynchronous route (HttpRoute::async_handler) later, from any
// thread, without blocking: a response as given, a Status in the error shape of every route
// (HttpResponse::Error, with CodeHttpStatus). The first Send wins; later ones are ignored.
// The last copy of a responder that never sent answers 500 `internal`, so a request is
// never left unanswered. Sends after the server stopped are dropped (the connection is gone).
class HttpResponder {
 public:
  virtual ~HttpResponder() = default;
  virtual void Send(Result<HttpResponse> response) = 0;
};
// Starts handling a request and returns at once; the answer goes through `responder`. Runs on
// a handler thread (or, for HttpRoute::hand_off_on_io, the connection's I/O thread);
// `request` is valid only during the call (copy what is needed later).
using HttpAsyncHandler =
    std::function<void(const HttpRequest& request, std::shared_ptr<HttpResponder> responder)>;

// Answers an HTTP request: a value is sent as 200 with a JSON body; a Status as its
// CodeHttpStatus with {"error":{"code":"<CodeName>","message":"..."}}. Runs on a handler
// thread.
using HttpHandler = std::function<Result<nlohmann::json>(const HttpRequest&)>;

// One row of the HTTP route table.
struct HttpRoute {
  std::string method;  // "GET", exactly as on the wire
  // "/health"; matched against the path without the query, segment by segment, where a
  // `{name}` segment matches any one segment (MatchRoutePath). The first matching route wins.
  std::string path;
  HttpHandler handler;
  std::string summary;  // one line for docs and listings
  // Largest request body this route accepts, in bytes; 0 = ServerLimits::max_request_bytes.
  uint64_t max_body_bytes = 0;
  // When set, used instead of `handler`: the route chooses status, content type and headers.
  HttpResponseHandler response_handler;
  // When set, used instead of both: for routes that wait (for a guest, a deadline), so the
  // wait holds no handler thread. Requests of the connection still go in arrival order: the
  // next one is read after this one is answered.
  HttpAsyncHandler async_handler;
  // For an async_handler that only checks a small request and hands it on (a unit invocation,
  // a command execution): it runs on the connection's I/O thread when the body is under
  // ServerLimits::kUnchargedBodyBytes, saving a hop to a handler thread and back. It must not
  // block and must cost no more than parsing its (small) body.
  bool hand_off_on_io = false;
  // Served without the auth token (server/access.h): the dashboard's page, its assets and its
  // login, which a browser must reach before it has the token. The browser guards still apply.
  bool public_route = false;
};

struct ServerOptions {
  // "HOST:PORT" with HOST an IPv4 literal, "[IPv6 literal]" or "localhost". Port 0 picks an
  // ephemeral port (see Server::port()).
  std::string listen = "127.0.0.1:7433";
  // When set (non-empty), every connection must present it; required for a non-loopback
  // listen address.
  std::optional<std::string> auth_token;
  // Sizes, connection caps, queue bounds and timeouts (server/limits.h).
  ServerLimits limits;
  uint32_t io_threads = 1;       // Asio threads doing network I/O
  uint32_t handler_threads = 2;  // threads running route handlers and protocol ops
  // Protocol operations. Start adds the built-ins ("ping", "ops"); register the rest first.
  ProtocolDispatcher dispatcher;
  // HTTP routes in addition to the built-in GET /health.
  std::vector<HttpRoute> routes;
  // Called exactly once for every WebSocket connection that completed its handshake, after
  // its last request was handled, with Connection::id(): lets op handlers drop per-connection
  // state (subscriptions, cursors). Normally runs on a server handler thread soon after the
  // connection closed; for a connection still open when the server stops, it runs at the
  // latest while the Server is destroyed, on the thread that releases the connection last.
  // It must not block on the server and must not call Stop. Empty = not called.
  std::function<void(uint64_t connection_id)> on_disconnect;
};

class Server {
 public:
  // Binds, listens and starts the threads.
  // Errors: InvalidArgument for an unparsable listen address or zero threads/limits;
  // FailedPrecondition for a non-loopback address without an auth token; AlreadyExists when
  // a built-in op or route is registered already; Unavailable when the address cannot be
  // bound (in use, not local).
  static Result<std::unique_ptr<Server>> Start(ServerOptions options);

  // Stops (see Stop).
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Stops gracefully: closes the listener; answers every request already read (HTTP: its
  // reply, then the connection closes; WebSocket: the responses, then close code 1001 "server
  // shutting down"); a request that arrives meanwhile gets 503 / `unavailable` without running;
  // idle connections close at once. Waits at most ServerLimits::shutdown_timeout for that,
  // then closes the TCP socket of every connection still open and joins every thread (a route
  // handler or op still running is waited for: threads cannot be cancelled).
  // Idempotent; any thread except a server thread (a handler must not stop its own server).
  void Stop();

  // The bound TCP port (the ephemeral one when listen asked for port 0).
  uint16_t port() const;
  // The bound address, "127.0.0.1:40123".
  std::string address() const;
  // The route table: built-ins first, then ServerOptions::routes.
  const std::vector<HttpRoute>& routes() const;
  // Its HTTP metrics (server/http_stats.h); shared, so a metrics collector may outlive it.
  std::shared_ptr<const HttpStats> http_stats() const;

  class Impl;

 private:
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Splits "HOST:PORT" as ServerOptions::listen describes and checks that HOST is an IP literal
// or "localhost" and PORT a number in 0..65535. Returns the IP text and the port.
// Errors: InvalidArgument naming what is wrong.
Result<std::pair<std::string, uint16_t>> ParseListenAddress(std::string_view listen);

// The checks Server::Start makes on its address before binding, for callers that want to
// fail before doing other work: the address parses, a set token is non-empty, and a
// non-loopback address has a token.
// Errors: InvalidArgument (address, empty token); FailedPrecondition (non-loopback without
// a token).
Status CheckListenPolicy(std::string_view listen, const std::optional<std::string>& auth_token);

}  // namespace reef::server
