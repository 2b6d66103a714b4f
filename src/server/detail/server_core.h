// ServerCore: the state a running Server shares with its connection sessions (internal to
// src/server). Sessions hold a reference to it; it outlives them because the io_context that
// owns every pending session handler is destroyed before the registry it reports to.
//
// Thread ownership: options, dispatcher and routes are constant after Start; the session
// registry is protected by mu; the io_context runs on the Asio threads; `handlers` is the
// pool that runs route handlers and protocol ops.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/mutex.h"
#include "core/status.h"
#include "server/detail/byte_budget.h"
#include "server/http_stats.h"
#include "server/server.h"

namespace reef::server::detail {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

using HttpMessage = http::request<http::string_body>;
using HttpReply = http::response<http::string_body>;

// A live connection the server can ask to close.
class Session {
 public:
  // Where a connection stands, for the connection cap (ServerLimits::max_connections).
  enum class State : int {
    kBusy,       // a request is being read, handled or answered, or a WebSocket is open
    kEvictable,  // an HTTP connection waiting for a request head: nothing in flight
    kEvicted,    // closed by ServerCore::Track to make room for a new connection
  };

  virtual ~Session() = default;
  // Starts closing gracefully: HTTP answers the request in flight, if any, then closes;
  // WebSocket answers the requests in flight, then sends close code 1001 "server shutting
  // down". Any thread.
  virtual void Shutdown() = 0;
  // Closes the TCP socket at once, without a close handshake: Stop calls it for sessions
  // that did not finish closing within ServerLimits::shutdown_timeout, and Track for an
  // evicted one. Any thread.
  virtual void Abort() = 0;

  // kEvictable -> kBusy when the session takes up a request head; false when it was evicted
  // meanwhile (then it must stop). Any thread.
  bool Claim() {
    State expected = State::kEvictable;
    return state_.compare_exchange_strong(expected, State::kBusy) || expected == State::kBusy;
  }
  // Marks the session as waiting for a request head; false when it was evicted. Any thread.
  bool MarkEvictable() {
    State expected = State::kBusy;
    return state_.compare_exchange_strong(expected, State::kEvictable) ||
           expected == State::kEvictable;
  }
  // A snapshot: the session is waiting for a request head. Any thread.
  bool evictable() const { return state_.load() == State::kEvictable; }
  // kEvictable -> kEvicted; false when the session is busy. Any thread.
  bool TryEvict() {
    State expected = State::kEvictable;
    return state_.compare_exchange_strong(expected, State::kEvicted);
  }

 private:
  std::atomic<State> state_{State::kBusy};
};

struct ServerCore;

// A session's place in ServerCore::sessions, given up when destroyed. A session declares it
// as its first member, so it is destroyed last, after the socket and stream: Stop waits until
// every session is untracked before it destroys the io_context, and this way that holds even
// when the last reference to a session goes on a thread of its own (a reactor answering an
// asynchronous op, a log-follow pump), not on an I/O thread Stop joins.
class TrackedSlot {
 public:
  TrackedSlot(ServerCore& core, uint64_t id) : core_(core), id_(id) {}
  ~TrackedSlot();
  TrackedSlot(const TrackedSlot&) = delete;
  TrackedSlot& operator=(const TrackedSlot&) = delete;

 private:
  ServerCore& core_;
  const uint64_t id_;
};

struct ServerCore;

// An asynchronous route's or op's answer still owed to a connection (HttpRoute::async_handler,
// ProtocolDispatcher::RegisterAsync). The answer takes `session` through a TakenReply; Stop
// takes it from every reply still owed, so nothing reaches a session, or the io_context, after
// the server stopped.
struct OwedReply {
  OwedReply(uint64_t reply_id, ServerCore* owner, std::shared_ptr<Session> owed_to)
      : id(reply_id), core(owner), session(std::move(owed_to)) {}

  const uint64_t id;
  ServerCore* const core;  // alive while `session` is set
  Mutex mu;
  std::shared_ptr<Session> session GUARDED_BY(mu);  // null once answered or abandoned
};

// The session one answer of an OwedReply goes to, taken by that answer (any thread). Empty
// when the reply was answered or abandoned already, or the server no longer takes answers
// (ServerCore::CloseAnswers). While a TakenReply is not empty, Stop waits before it joins the
// handler pool, so the work the answer posts (a write on the connection's strand, a WebSocket
// connection's next request on its handler strand) never lands in a pool that has stopped
// running tasks. Drop it as soon as that work is posted.
class TakenReply {
 public:
  explicit TakenReply(OwedReply& owed);
  ~TakenReply();
  TakenReply(const TakenReply&) = delete;
  TakenReply& operator=(const TakenReply&) = delete;

  explicit operator bool() const { return session_ != nullptr; }
  // The session; the reply is forgotten by the core already. REQUIRES: not empty.
  const std::shared_ptr<Session>& session() const { return session_; }

 private:
  ServerCore* core_ = nullptr;
  std::shared_ptr<Session> session_;
};

struct ServerCore {
  explicit ServerCore(ServerOptions opts, uint32_t handler_threads)
      : options(std::move(opts)), limits(options.limits), handlers(handler_threads) {}

  // Records a new connection so Stop can close it. At max_connections it evicts the oldest
  // evictable session (Session::State) to make room. Any thread.
  // Errors: Unavailable when the server is stopping, or at max_connections with no session
  // to evict (the caller then refuses the connection with 503).
  Status Track(uint64_t id, std::weak_ptr<Session> session);
  // Moves the connection slot of HTTP session `http_id` to the WebSocket session `ws_id`
  // after an upgrade. Any thread.
  // Errors: Unavailable when the server is stopping or at max_websockets (the upgrade is
  // refused with 503; the HTTP session's slot is freed when it goes).
  Status TrackUpgrade(uint64_t http_id, uint64_t ws_id, std::weak_ptr<Session> session);
  // Forgets a session (its destructor calls this). Any thread.
  void Untrack(uint64_t id);
  uint64_t NextId() { return next_id.fetch_add(1) + 1; }
  // Registers a reply owed by an asynchronous route; Forget it once answered. Any thread.
  void Owe(std::shared_ptr<OwedReply> reply);
  void ForgetOwed(uint64_t id);
  // Stop: drops the sessions of replies still owed (a late answer then goes nowhere). Any
  // thread; takes each OwedReply::mu, never holding owed_mu.
  void AbandonOwedReplies();
  // The gate every answer of an OwedReply passes (TakenReply): Begin is false once Stop closed
  // it; CloseAnswers closes it and waits until every answer that got through has ended. Any
  // thread; Begin is called with the reply's OwedReply::mu held (lock order OwedReply::mu ->
  // answers_mu).
  bool BeginAnswer();
  void EndAnswer();
  void CloseAnswers();
  // True once Stop began. Any thread.
  bool stopping() const { return stop_requested.load(std::memory_order_acquire); }
  // True once Stop's deadline passed and it closed the connections still open: a handler task
  // that starts after this has no one to answer and is dropped without running. Any thread.
  bool abandoning() const { return abandon_requested.load(std::memory_order_acquire); }

  struct Tracked {
    std::weak_ptr<Session> session;
    bool websocket = false;
  };

  // ---- Protected by mu --------------------------------------------------------------------
  Mutex mu;
  CondVar drained;  // signalled when sessions becomes empty
  std::unordered_map<uint64_t, Tracked> sessions GUARDED_BY(mu);
  uint32_t websockets GUARDED_BY(mu) = 0;  // entries of `sessions` with websocket set
  bool stopping_locked GUARDED_BY(mu) = false;

  // ---- Constant after Start ---------------------------------------------------------------
  ServerOptions options;  // options.dispatcher holds the op table
  const ServerLimits limits;
  std::vector<HttpRoute> routes;
  // Request durations and answers by code (GET /metrics); made once the routes are known.
  std::shared_ptr<HttpStats> http_stats;
  // The largest body any route accepts (max_request_bytes or a route's max_body_bytes): the
  // limit a request head is read under before its route is known.
  uint64_t largest_body_bytes = 0;

  // ---- Any thread -------------------------------------------------------------------------
  std::atomic<uint64_t> next_id{0};
  std::atomic<bool> stop_requested{false};     // set by Stop before it closes anything
  std::atomic<bool> abandon_requested{false};  // set by Stop when its deadline passed

  // Replies owed by asynchronous routes, by OwedReply::id. Lock order: OwedReply::mu ->
  // owed_mu.
  Mutex owed_mu;
  std::unordered_map<uint64_t, std::shared_ptr<OwedReply>> owed GUARDED_BY(owed_mu);

  Mutex answers_mu;
  CondVar answers_ended;  // signalled when answering drops to 0
  uint32_t answering GUARDED_BY(answers_mu) = 0;
  bool answers_closed GUARDED_BY(answers_mu) = false;

  // Request bodies being read, parsed and handled at once (max_concurrent_body_bytes).
  ByteBudget bodies{limits.max_concurrent_body_bytes};

  // ---- Threads (declared last: destroyed first) ---------------------------------------------
  // Stop joins `handlers` without stopping it, so no handler task is left queued in it; what
  // can be left is I/O completions in `ioc` that hold sessions. A WebSocket session's handler
  // strand belongs to `handlers`, so `ioc` (declared after it) is destroyed first: the
  // sessions it still holds go while the pool their strands use is alive.
  asio::thread_pool handlers;
  asio::io_context ioc;
};

// True when `request` may pass: no token configured, `Authorization: Bearer <token>`, or the
// token cookie (server/access.h).
bool Authorized(const ServerCore& core, const HttpMessage& request);
// 403 "forbidden" saying why `request` fails the browser guards (BrowserGuardRefusal), or
// nullopt when it passes.
std::optional<HttpReply> RefusedByBrowserGuards(const ServerCore& core, const HttpMessage& request);

// RFC 3986 percent-decoding; `plus_is_space` for query strings (form encoding). nullopt for a
// malformed escape or a result that is not valid UTF-8.
std::optional<std::string> PercentDecode(std::string_view text, bool plus_is_space);

// A reply with a JSON body (and Content-Type application/json).
HttpReply JsonReply(const HttpMessage& request, http::status status, const nlohmann::json& body);
// {"error":{"code":"<code>","message":"..."}} with the HTTP status for `status`'s code.
HttpReply ErrorReply(const HttpMessage& request, const Status& status);
// A route's own HttpResponse, as a reply to `request`.
HttpReply ResponseReply(const HttpMessage& request, const HttpResponse& response);
// 401 with WWW-Authenticate: Bearer and an "unauthenticated" error body.
HttpReply UnauthorizedReply(const HttpMessage& request);

// Serves HTTP on `socket` (and hands WebSocket upgrades to StartWebSocketSession).
void StartHttpSession(ServerCore& core, tcp::socket socket);
// Takes over `stream` after an HTTP upgrade request was read and authorized on the HTTP session
// `http_id`, whose connection slot it takes (ServerCore::TrackUpgrade).
void StartWebSocketSession(ServerCore& core, uint64_t http_id, beast::tcp_stream stream,
                           HttpMessage upgrade);

}  // namespace reef::server::detail
