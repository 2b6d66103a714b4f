#include "server/server.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <charconv>
#include <thread>

#include "core/utf8.h"
#include "server/detail/server_core.h"

namespace reef::server {

using detail::ServerCore;
namespace asio = detail::asio;
namespace http = detail::http;
using detail::tcp;

// ---- ServerCore and shared HTTP helpers -------------------------------------------------------

namespace detail {

Status ServerCore::Track(uint64_t id, std::weak_ptr<Session> session) {
  // Sessions looked at, released after the lock: a destructor calls Untrack.
  std::vector<std::shared_ptr<Session>> held;
  MutexLock lock(mu);
  if (stopping_locked) return Status::Unavailable("server is shutting down");
  while (sessions.size() >= limits.max_connections) {
    // The oldest connection with nothing in flight makes room (ids grow with accept order).
    uint64_t oldest = 0;
    Session* candidate = nullptr;
    for (auto& [other_id, tracked] : sessions) {
      if (oldest != 0 && other_id > oldest) continue;
      auto other = tracked.session.lock();
      if (other == nullptr || !other->evictable()) continue;
      candidate = other.get();
      oldest = other_id;
      held.push_back(std::move(other));
    }
    if (candidate == nullptr) {
      return Status::Unavailable(fmt::format(
          "server is at max_connections ({}) and every connection has a request in flight",
          limits.max_connections));
    }
    if (!candidate->TryEvict()) continue;  // it took up a request meanwhile: look again
    sessions.erase(oldest);
    candidate->Abort();
  }
  sessions.emplace(id, Tracked{std::move(session), false});
  return Status::Ok();
}

Status ServerCore::TrackUpgrade(uint64_t http_id, uint64_t ws_id, std::weak_ptr<Session> session) {
  MutexLock lock(mu);
  if (stopping_locked) return Status::Unavailable("server is shutting down");
  if (websockets >= limits.max_websockets) {
    return Status::Unavailable(fmt::format("server is at max_websockets ({} WebSocket connections)",
                                           limits.max_websockets));
  }
  sessions.erase(http_id);
  sessions.emplace(ws_id, Tracked{std::move(session), true});
  ++websockets;
  return Status::Ok();
}

TrackedSlot::~TrackedSlot() {
  core_.Untrack(id_);
}

void ServerCore::Untrack(uint64_t id) {
  MutexLock lock(mu);
  auto it = sessions.find(id);
  if (it == sessions.end()) return;
  if (it->second.websocket) --websockets;
  sessions.erase(it);
  if (sessions.empty()) drained.NotifyAll();
}

void ServerCore::Owe(std::shared_ptr<OwedReply> reply) {
  MutexLock lock(owed_mu);
  uint64_t id = reply->id;
  owed.emplace(id, std::move(reply));
}

void ServerCore::ForgetOwed(uint64_t id) {
  MutexLock lock(owed_mu);
  owed.erase(id);
}

void ServerCore::AbandonOwedReplies() {
  std::unordered_map<uint64_t, std::shared_ptr<OwedReply>> taken;
  {
    MutexLock lock(owed_mu);
    taken.swap(owed);
  }
  for (auto& [id, reply] : taken) {
    std::shared_ptr<Session> session;
    {
      MutexLock lock(reply->mu);
      session = std::move(reply->session);
    }
    // `session` goes here, outside the lock: its destructor reports to this core.
  }
}

bool ServerCore::BeginAnswer() {
  MutexLock lock(answers_mu);
  if (answers_closed) return false;
  ++answering;
  return true;
}

void ServerCore::EndAnswer() {
  MutexLock lock(answers_mu);
  if (--answering == 0) answers_ended.NotifyAll();
}

void ServerCore::CloseAnswers() {
  MutexLock lock(answers_mu);
  answers_closed = true;
  while (answering > 0) answers_ended.Wait(answers_mu);
}

TakenReply::TakenReply(OwedReply& owed) {
  MutexLock lock(owed.mu);
  if (!owed.session || !owed.core->BeginAnswer()) return;
  core_ = owed.core;
  session_ = std::move(owed.session);
  owed.session.reset();
  core_->ForgetOwed(owed.id);
}

TakenReply::~TakenReply() {
  if (core_ == nullptr) return;
  session_.reset();  // before EndAnswer: Stop may go on, and end the io_context, right after it
  core_->EndAnswer();
}

HttpReply JsonReply(const HttpMessage& request, http::status status, const nlohmann::json& body) {
  HttpReply reply(status, request.version());
  reply.set(http::field::server, "reef");
  reply.set(http::field::content_type, "application/json");
  reply.body() = ToText(body) + "\n";
  reply.prepare_payload();
  return reply;
}

HttpReply ErrorReply(const HttpMessage& request, const Status& status) {
  nlohmann::json body = {
      {"error", {{"code", CodeName(status.code())}, {"message", status.message()}}}};
  return JsonReply(request, static_cast<http::status>(CodeHttpStatus(status.code())), body);
}

HttpReply ResponseReply(const HttpMessage& request, const HttpResponse& response) {
  HttpReply reply(static_cast<http::status>(response.status), request.version());
  reply.set(http::field::server, "reef");
  reply.set(http::field::content_type, response.content_type);
  for (const auto& [name, value] : response.headers) reply.set(name, value);
  reply.body() = response.body;
  reply.prepare_payload();
  return reply;
}

HttpReply UnauthorizedReply(const HttpMessage& request) {
  // A client that sent a token learns that it is the wrong one, not that one is missing.
  std::string_view message =
      request.find(http::field::authorization) == request.end()
          ? "this server requires its auth token: send Authorization: Bearer <token>"
          : "the Authorization header does not carry this server's auth token (Bearer <token>, "
            "the token `reef serve` was given)";
  nlohmann::json body = {{"error", {{"code", "unauthenticated"}, {"message", message}}}};
  HttpReply reply = JsonReply(request, http::status::unauthorized, body);
  reply.set(http::field::www_authenticate, "Bearer realm=\"reef\"");
  return reply;
}

}  // namespace detail

// ---- Requests, responses and route patterns ---------------------------------------------------

using detail::PercentDecode;

std::optional<std::string> HttpRequest::Header(std::string_view name) const {
  auto it = headers.find(name);
  if (it == headers.end()) return std::nullopt;
  return it->second;
}

const std::string& HttpRequest::PathParam(std::string_view name) const {
  return params.find(name)->second;
}

std::optional<std::string> HttpRequest::QueryParam(std::string_view name) const {
  size_t q = target.find('?');
  if (q == std::string::npos) return std::nullopt;
  std::string_view query = std::string_view(target).substr(q + 1);
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    size_t eq = pair.find('=');
    auto key = PercentDecode(pair.substr(0, eq), true);
    if (!key || *key != name) continue;
    if (eq == std::string_view::npos) return std::string();
    return PercentDecode(pair.substr(eq + 1), true);
  }
  return std::nullopt;
}

HttpResponse HttpResponse::Json(unsigned status, const nlohmann::json& body) {
  HttpResponse response;
  response.status = status;
  response.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  return response;
}

HttpResponse HttpResponse::Error(unsigned status, std::string_view code, std::string_view message) {
  return Json(status, {{"error", {{"code", code}, {"message", message}}}});
}

bool MatchRoutePath(std::string_view pattern, std::string_view path,
                    std::map<std::string, std::string, std::less<>>* params) {
  while (true) {
    if (pattern.empty() || path.empty()) return pattern.empty() && path.empty();
    if (pattern[0] != '/' || path[0] != '/') return false;
    pattern.remove_prefix(1);
    path.remove_prefix(1);
    size_t ps = pattern.find('/');
    size_t qs = path.find('/');
    std::string_view want = pattern.substr(0, ps);
    std::string_view got = path.substr(0, qs);
    if (want.size() >= 2 && want.front() == '{' && want.back() == '}') {
      if (got.empty()) return false;
      auto decoded = PercentDecode(got, false);
      if (!decoded) return false;
      if (params != nullptr) (*params)[std::string(want.substr(1, want.size() - 2))] = *decoded;
    } else if (want != got) {
      return false;
    }
    pattern = ps == std::string_view::npos ? std::string_view() : pattern.substr(ps);
    path = qs == std::string_view::npos ? std::string_view() : path.substr(qs);
  }
}

// ---- Listen address ---------------------------------------------------------------------------

Result<std::pair<std::string, uint16_t>> ParseListenAddress(std::string_view listen) {
  std::string_view host;
  std::string_view port;
  if (listen.starts_with('[')) {
    size_t close = listen.find(']');
    if (close == std::string_view::npos || listen.substr(close + 1, 1) != ":") {
      return Status::InvalidArgument(
          fmt::format("listen address \"{}\" is not [IPV6]:PORT", listen));
    }
    host = listen.substr(1, close - 1);
    port = listen.substr(close + 2);
  } else {
    size_t colon = listen.rfind(':');
    if (colon == std::string_view::npos) {
      return Status::InvalidArgument(fmt::format("listen address \"{}\" has no :PORT", listen));
    }
    host = listen.substr(0, colon);
    port = listen.substr(colon + 1);
  }
  uint16_t number = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), number);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size()) {
    return Status::InvalidArgument(fmt::format(
        "listen address \"{}\": port \"{}\" is not a number in 0..65535", listen, port));
  }
  std::string ip = host == "localhost" ? "127.0.0.1" : std::string(host);
  boost::system::error_code parse_error;
  asio::ip::make_address(ip, parse_error);
  if (parse_error) {
    return Status::InvalidArgument(fmt::format(
        "listen address \"{}\": host \"{}\" is not an IP address or localhost", listen, host));
  }
  return std::pair{ip, number};
}

// ---- Server -----------------------------------------------------------------------------------

class Server::Impl {
 public:
  explicit Impl(std::unique_ptr<ServerCore> core)
      : core_(std::move(core)),
        acceptor_(asio::make_strand(core_->ioc)),
        accept_timer_(acceptor_.get_executor()),
        work_(asio::make_work_guard(core_->ioc)) {}

  Status Listen(const tcp::endpoint& endpoint, std::string_view listen) {
    boost::system::error_code ec;
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (!ec) bound_ = acceptor_.local_endpoint(ec);
    if (ec)
      return Status::Unavailable(fmt::format("cannot listen on {}: {}", listen, ec.message()));
    return Status::Ok();
  }

  void Run() {
    Accept();
    for (uint32_t i = 0; i < core_->options.io_threads; ++i) {
      io_threads_.emplace_back([this] { core_->ioc.run(); });
    }
  }

  void Stop() {
    std::vector<std::shared_ptr<detail::Session>> live;
    {
      MutexLock lock(core_->mu);
      if (core_->stopping_locked) return;
      core_->stopping_locked = true;
      core_->stop_requested.store(true, std::memory_order_release);
      for (auto& [id, tracked] : core_->sessions) {
        if (auto session = tracked.session.lock()) live.push_back(std::move(session));
      }
    }
    asio::post(acceptor_.get_executor(), [this] {
      boost::system::error_code ec;
      acceptor_.cancel(ec);
      accept_timer_.cancel();
      // Connections already waiting in the listen backlog get 503 instead of a reset.
      acceptor_.non_blocking(true, ec);
      for (uint32_t i = 0; !ec && i < core_->limits.max_connections; ++i) {
        tcp::socket socket(asio::make_strand(core_->ioc));
        acceptor_.accept(socket, ec);
        if (!ec) detail::StartHttpSession(*core_, std::move(socket));
      }
      acceptor_.close(ec);
    });
    // Requests in flight are answered, then each connection closes (Session::Shutdown).
    for (auto& session : live) session->Shutdown();
    live.clear();
    {
      MutexLock lock(core_->mu);
      const auto deadline = std::chrono::steady_clock::now() + core_->limits.shutdown_timeout;
      while (!core_->sessions.empty()) {
        if (core_->drained.WaitUntil(core_->mu, deadline) == std::cv_status::timeout) break;
      }
      // Connections still open past the deadline (a slow request, a client that does not
      // answer the close handshake) lose their socket now, so none is left connected to a
      // stopped server.
      for (auto& [id, tracked] : core_->sessions) {
        if (auto session = tracked.session.lock()) live.push_back(std::move(session));
      }
    }
    if (!live.empty()) {
      spdlog::warn("server: closing {} connection(s) still busy after the shutdown timeout ({} ms)",
                   live.size(), core_->limits.shutdown_timeout.count());
      core_->abandon_requested.store(true, std::memory_order_release);
      for (auto& session : live) session->Abort();
      live.clear();
      // A session waiting for an asynchronous route's answer is held by it: let it go.
      core_->AbandonOwedReplies();
      // Aborted sockets complete their pending operations at once, so the sessions normally
      // go within milliseconds; the wait lets them report their disconnects before the
      // io_context stops. A session still held past it (by a route handler still running) is
      // released when the handler returns and the io_context is destroyed (ServerCore).
      MutexLock lock(core_->mu);
      const auto deadline = std::chrono::steady_clock::now() + kAbortWait;
      while (!core_->sessions.empty()) {
        if (core_->drained.WaitUntil(core_->mu, deadline) == std::cv_status::timeout) break;
      }
    }
    work_.reset();
    core_->ioc.stop();
    for (auto& thread : io_threads_) thread.join();
    io_threads_.clear();
    // Answers from now on go nowhere; one in progress (on a reactor, say) has taken its
    // session and may still post work to the handler pool: wait for it, so that work is in
    // the pool before the join below runs it.
    core_->CloseAnswers();
    core_->AbandonOwedReplies();
    // No stop(): the pool runs what is queued and then ends, so no task is left to be
    // destroyed with it. Tasks that start now are refusals or, past the deadline, dropped
    // (ServerCore::abandoning); a handler still running is waited for.
    core_->handlers.join();
    // Replies owed by handlers that ran after the abandon above answer no one either.
    core_->AbandonOwedReplies();
    // Requests still waiting for room for their bodies are dropped with their connections,
    // while the io_context their sockets belong to is alive.
    core_->bodies.TakeWaiters().clear();
  }

  uint16_t port() const { return bound_.port(); }
  std::string address() const {
    return bound_.address().is_v6() ? fmt::format("[{}]:{}", bound_.address().to_string(), port())
                                    : fmt::format("{}:{}", bound_.address().to_string(), port());
  }
  const std::vector<HttpRoute>& routes() const { return core_->routes; }
  std::shared_ptr<const HttpStats> http_stats() const { return core_->http_stats; }

 private:
  void Accept() {
    acceptor_.async_accept(asio::make_strand(core_->ioc),
                           [this](boost::system::error_code ec, tcp::socket socket) {
                             OnAccept(ec, std::move(socket));
                           });
  }

  // Acceptor strand. A failure for want of resources (out of file descriptors) would fail
  // again at once while the connection waits in the backlog: back off, doubling the pause,
  // and log the episode once when it starts and once when it ends.
  void OnAccept(boost::system::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted) return;
    if (!acceptor_.is_open()) {  // Stop closed it after this connection was accepted: 503
      if (!ec) detail::StartHttpSession(*core_, std::move(socket));
      return;
    }
    if (ec && IsResourceError(ec)) {
      if (failed_accepts_++ == 0) {
        spdlog::warn(
            "server: cannot accept connections: {}; retrying with backoff (up to {} ms) "
            "until resources are free",
            ec.message(), core_->limits.accept_backoff_max.count());
        backoff_ = core_->limits.accept_backoff_initial;
      } else {
        backoff_ = std::min(backoff_ * 2, core_->limits.accept_backoff_max);
      }
      accept_timer_.expires_after(backoff_);
      accept_timer_.async_wait([this](boost::system::error_code wait_ec) {
        if (!wait_ec && acceptor_.is_open()) Accept();
      });
      return;
    }
    if (!ec) {
      if (failed_accepts_ > 0) {
        spdlog::info("server: accepting connections again after {} failed accept(s)",
                     failed_accepts_);
        failed_accepts_ = 0;
      }
      detail::StartHttpSession(*core_, std::move(socket));
    }
    Accept();
  }

  static bool IsResourceError(const boost::system::error_code& ec) {
    return ec == asio::error::no_descriptors || ec == asio::error::no_buffer_space ||
           ec == asio::error::no_memory || ec == boost::system::errc::too_many_files_open_in_system;
  }

  // After aborting the sockets of late connections, the longest wait for their sessions.
  static constexpr std::chrono::seconds kAbortWait{2};

  std::unique_ptr<ServerCore> core_;  // declared first: outlives the acceptor and threads
  tcp::acceptor acceptor_;
  asio::steady_timer accept_timer_;       // acceptor strand: the backoff after a failed accept
  std::chrono::milliseconds backoff_{0};  // acceptor strand
  uint64_t failed_accepts_ = 0;           // acceptor strand: in the current episode
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  tcp::endpoint bound_;
  std::vector<std::thread> io_threads_;
};

Status CheckListenPolicy(std::string_view listen, const std::optional<std::string>& auth_token) {
  REEF_ASSIGN_OR_RETURN(auto host_port, ParseListenAddress(listen));
  asio::ip::address ip = asio::ip::make_address(host_port.first);
  if (auth_token && auth_token->empty()) {
    return Status::InvalidArgument("auth token is set but empty");
  }
  if (!ip.is_loopback() && !auth_token) {
    return Status::FailedPrecondition(fmt::format(
        "refusing to listen on non-loopback address {} without an auth token (set one, or "
        "listen on 127.0.0.1 / [::1])",
        listen));
  }
  return Status::Ok();
}

Result<std::unique_ptr<Server>> Server::Start(ServerOptions options) {
  REEF_RETURN_IF_ERROR(CheckListenPolicy(options.listen, options.auth_token));
  REEF_ASSIGN_OR_RETURN(auto host_port, ParseListenAddress(options.listen));
  asio::ip::address ip = asio::ip::make_address(host_port.first);
  const ServerLimits& limits = options.limits;
  if (options.io_threads == 0 || options.handler_threads == 0 || limits.max_connections == 0 ||
      limits.max_websockets == 0 || limits.max_request_bytes == 0 || limits.max_header_bytes == 0 ||
      limits.max_outgoing_bytes == 0 || limits.max_inbound_bytes == 0) {
    return Status::InvalidArgument(
        "io_threads, handler_threads and the size and count limits (max_connections, "
        "max_websockets, max_request_bytes, max_header_bytes, max_outgoing_bytes, "
        "max_inbound_bytes) must all be at least 1");
  }
  using std::chrono::milliseconds;
  for (milliseconds timeout : {limits.header_timeout, limits.io_timeout, limits.close_timeout,
                               limits.websocket_idle_timeout, limits.accept_backoff_initial}) {
    if (timeout <= milliseconds(0)) {
      return Status::InvalidArgument(
          "header_timeout, io_timeout, close_timeout, websocket_idle_timeout and "
          "accept_backoff_initial must be positive");
    }
  }
  std::string listen = options.listen;
  std::vector<HttpRoute> extra = std::move(options.routes);
  uint32_t handler_threads = options.handler_threads;
  auto core = std::make_unique<ServerCore>(std::move(options), handler_threads);
  // Registered in place: the "ops" op refers to the dispatcher it was registered in.
  REEF_RETURN_IF_ERROR(RegisterBuiltinOps(core->options.dispatcher));
  core->routes.push_back({"GET", "/health",
                          [](const HttpRequest&) -> Result<nlohmann::json> {
                            return nlohmann::json{{"status", "ok"}};
                          },
                          "Liveness check: 200 {\"status\":\"ok\"}"});
  for (HttpRoute& route : extra) {
    for (const HttpRoute& existing : core->routes) {
      if (existing.method == route.method && existing.path == route.path) {
        return Status::AlreadyExists(
            fmt::format("HTTP route {} {} is registered twice", route.method, route.path));
      }
    }
    core->routes.push_back(std::move(route));
  }
  std::vector<std::string> route_labels;
  for (const HttpRoute& route : core->routes) {
    route_labels.push_back(route.method + " " + route.path);
  }
  core->http_stats = std::make_shared<HttpStats>(std::move(route_labels));
  core->largest_body_bytes = core->limits.max_request_bytes;
  for (const HttpRoute& route : core->routes) {
    core->largest_body_bytes = std::max(core->largest_body_bytes, route.max_body_bytes);
  }
  auto impl = std::make_unique<Impl>(std::move(core));
  REEF_RETURN_IF_ERROR(impl->Listen(tcp::endpoint(ip, host_port.second), listen));
  impl->Run();
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Server::~Server() {
  Stop();
}
void Server::Stop() {
  impl_->Stop();
}
uint16_t Server::port() const {
  return impl_->port();
}
std::string Server::address() const {
  return impl_->address();
}
const std::vector<HttpRoute>& Server::routes() const {
  return impl_->routes();
}
std::shared_ptr<const HttpStats> Server::http_stats() const {
  return impl_->http_stats();
}

}  // namespace reef::server
