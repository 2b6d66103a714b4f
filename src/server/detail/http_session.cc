// HTTP side of the listener: reads a request head (within header_timeout), checks the token
// and the route's body limit from the head alone, then reads the body (within io_timeout),
// routes it on a handler thread, and hands WebSocket upgrades over to the WebSocket session.
// A request refused from its head (401, 413, 503) is answered at once and the connection
// closed after a short lingering drain, so the body is never buffered and the client still
// reads the answer.
#include <fmt/format.h>
#include <malloc.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/websocket/rfc6455.hpp>
#include <optional>

#include "server/detail/server_core.h"

namespace reef::server::detail {
namespace {

// A connection closed after refusing a request from its head reads (and discards) what the
// client still sends for at most this long and this many bytes before the socket closes, so
// the client reads the answer instead of a reset.
constexpr std::chrono::milliseconds kLingerTime{1'000};
constexpr size_t kLingerBytes = 1 << 20;
// While the server stops, how long a connection that has not sent its first request yet may
// still send it (and get 503) before it is closed.
constexpr std::chrono::milliseconds kFreshGrace{500};

// True for the parser's errors that mean the request breaks HTTP/1.1's syntax or framing (a
// bad Content-Length, Content-Length together with chunked, a bad chunk), as opposed to the
// connection ending or a limit: those get 400 before the connection closes.
bool IsMalformedRequest(const beast::error_code& ec) {
  static const auto& kCategory = http::make_error_code(http::error::bad_method).category();
  return ec.category() == kCategory &&
         ec.value() >= static_cast<int>(http::error::bad_line_ending) &&
         ec.value() <= static_cast<int>(http::error::multiple_content_length);
}

// Header fields that carry one value: sent twice, the request is refused (400).
bool IsSingletonField(std::string_view lowercase_name) {
  return lowercase_name == "authorization" || lowercase_name == "content-type" ||
         lowercase_name == "idempotency-key" || lowercase_name == "x-correlation-id";
}

class HttpSession : public Session, public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(ServerCore& core, uint64_t id, tcp::socket socket)
      : tracked_(core, id), core_(core), id_(id), stream_(std::move(socket)) {}
  ~HttpSession() override { ReleaseBody(); }

  void Run() {
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->Read(); });
  }

  // Answers `status` (503) without reading the request, then closes: at once when the server is
  // at its connection cap (a refused connection holds no slot, so it must not stay open), after
  // a lingering drain while it stops (so the client reads the 503 instead of a reset).
  void Refuse(const Status& status) {
    asio::dispatch(stream_.get_executor(), [self = shared_from_this(), status] {
      self->Reject(ErrorReply(Head(), status), /*linger=*/self->core_.stopping());
    });
  }

  void Shutdown() override {
    asio::post(stream_.get_executor(), [self = shared_from_this()] {
      self->shutting_down_ = true;
      if (self->phase_ == Phase::kLingering) return self->CloseNow();
      if (self->phase_ != Phase::kAwaitingHead) return;  // answered, then closed
      // Waiting for a request head: OnHeader closes unless part of one arrived (it gets 503).
      beast::error_code ignored;
      self->stream_.socket().cancel(ignored);
    });
  }

  void Abort() override {
    asio::post(stream_.get_executor(), [self = shared_from_this()] { self->CloseNow(); });
  }

 private:
  enum class Phase {
    kAwaitingHead,
    kReadingBody,
    kAwaitingRoom,  // for its body in max_concurrent_body_bytes
    kHandling,
    kWriting,
    kLingering,
    kClosed
  };

  static HttpMessage Head() {
    HttpMessage head;
    head.version(11);
    return head;
  }

  void Read() {
    if (phase_ == Phase::kClosed) return;
    if (shutting_down_ && buffer_.size() == 0) return CloseNow();
    if (!MarkEvictable()) return CloseNow();
    phase_ = Phase::kAwaitingHead;
    parser_.emplace();
    // Beast checks Content-Length against the limit while parsing the head, before the route
    // is known: start from the largest limit any route has and narrow it in OnHeader.
    body_limit_ = core_.largest_body_bytes;
    parser_->body_limit(body_limit_);
    parser_->header_limit(
        static_cast<uint32_t>(std::min<size_t>(core_.limits.max_header_bytes, UINT32_MAX)));
    stream_.expires_after(core_.limits.header_timeout);
    // The head first: the token and the route's body limit are checked before any body.
    http::async_read_header(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->OnHeader(ec); });
  }

  void OnHeader(beast::error_code ec) {
    if (!Claim()) return;  // evicted to make room for a new connection (Abort closes it)
    if (ec == asio::error::operation_aborted && shutting_down_ && phase_ == Phase::kAwaitingHead) {
      // Shutdown cancelled the wait for a head. An idle keep-alive connection closes (its
      // client retries elsewhere); one that is sending a request, or was just opened to send
      // one, waits a little longer for it and answers 503.
      beast::error_code available_ec;
      size_t pending = stream_.socket().available(available_ec);
      bool arriving = parser_->got_some() || buffer_.size() > 0 || (!available_ec && pending > 0);
      if (!arriving && requests_ > 0) return CloseNow();
      stream_.expires_after(arriving ? core_.limits.header_timeout
                                     : std::min(core_.limits.header_timeout, kFreshGrace));
      return http::async_read_header(
          stream_, buffer_, *parser_,
          [self = shared_from_this()](beast::error_code again, size_t) { self->OnHeader(again); });
    }
    if (ec == http::error::body_limit) {  // Content-Length over every route's limit
      return RejectTooLarge(
          fmt::format("request body exceeds the largest limit of any route ({} bytes)",
                      core_.largest_body_bytes));
    }
    if (ec == http::error::header_limit) {
      return RejectTooLarge(fmt::format("request head exceeds max_header_bytes ({} bytes)",
                                        core_.limits.max_header_bytes));
    }
    if (IsMalformedRequest(ec)) return RejectMalformed(ec);
    if (ec) return CloseNow();  // header_timeout, the client went away
    const auto& head = parser_->get();
    std::string_view target = head.target();
    std::string_view path = target.substr(0, target.find('?'));
    const HttpRoute* route = nullptr;
    for (const HttpRoute& candidate : core_.routes) {
      if (candidate.method == head.method_string() &&
          MatchRoutePath(candidate.path, path, nullptr)) {
        route = &candidate;
        break;
      }
    }
    timed_ = RequestTiming{route == nullptr ? -1 : static_cast<int>(route - core_.routes.data()),
                           std::chrono::steady_clock::now()};
    if (auto refused = RefusedByBrowserGuards(core_, head)) return Reject(std::move(*refused));
    // A WebSocket upgrade to a public path ("/") still needs the token: it is not the page.
    // The head decides: OnRead refuses a message that turns into an upgrade in its trailer.
    upgrade_ = beast::websocket::is_upgrade(head);
    bool authorized = Authorized(core_, head);
    bool open_route = route != nullptr && route->public_route && !upgrade_;
    if (!open_route && !authorized) return Reject(UnauthorizedReply(head));
    if (shutting_down_) {
      return Reject(ErrorReply(head, Status::Unavailable("server is shutting down")));
    }
    body_limit_ = core_.limits.max_request_bytes;
    hand_off_on_io_ = false;
    if (route != nullptr) {
      if (route->max_body_bytes) body_limit_ = route->max_body_bytes;
      hand_off_on_io_ = route->async_handler && route->hand_off_on_io;
      // Without the token a public route takes no body beyond its own limit (none for a
      // page): an unauthenticated client costs the server its head and little more.
      if (!authorized) body_limit_ = route->max_body_bytes;
    }
    parser_->body_limit(body_limit_);  // applies to chunked bodies from here on
    if (parser_->content_length() && *parser_->content_length() > body_limit_) {
      return RejectTooLarge(fmt::format(
          "request body of {} bytes (Content-Length) exceeds the limit of {} bytes for {} {}",
          *parser_->content_length(), body_limit_, head.method_string(), path));
    }
    phase_ = Phase::kReadingBody;
    stream_.expires_after(core_.limits.io_timeout);
    http::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code read_ec, size_t) { self->OnRead(read_ec); });
  }

  // Gives the body's room in max_concurrent_body_bytes back: once it is handled, or when it
  // will not be. The strand, or the handler thread while the request is being handled.
  void ReleaseBody() {
    uint64_t charge = body_charge_.exchange(0, std::memory_order_acq_rel);
    if (charge == 0) return;
    core_.bodies.Release(charge);
    if (charge >= ServerLimits::kTrimAfterBodyBytes) ::malloc_trim(0);
  }

  void OnRead(beast::error_code ec) {
    if (ec == http::error::body_limit) {
      return RejectTooLarge(
          fmt::format("request body exceeds the limit of {} bytes for this route", body_limit_));
    }
    if (IsMalformedRequest(ec)) return RejectMalformed(ec);
    if (ec) return CloseNow();
    HttpMessage request = parser_->release();
    ++requests_;
    if (shutting_down_) {
      return Write(ErrorReply(request, Status::Unavailable("server is shutting down")),
                   /*close=*/true);
    }
    if (beast::websocket::is_upgrade(request) != upgrade_) {
      // Upgrade fields in a chunked body's trailer: the head was checked as a plain request.
      return Write(ErrorReply(request, Status::InvalidArgument(
                                           "a request must ask for a WebSocket upgrade in its "
                                           "head, not in a chunked trailer")),
                   /*close=*/true);
    }
    if (upgrade_) {
      phase_ = Phase::kClosed;  // the stream moves to the WebSocket session
      stream_.expires_never();
      StartWebSocketSession(core_, id_, std::move(stream_), std::move(request));
      return;
    }
    // A large body waits for room in the server-wide budget before it is parsed and handled
    // (handling takes many times the body's size), so that work is bounded whatever the
    // number of clients. The charge is the body that arrived: a client that announces a
    // large body and stalls holds nothing.
    uint64_t charge = request.body().size();
    if (charge < ServerLimits::kUnchargedBodyBytes && hand_off_on_io_) {
      return HandleHere(std::move(request));
    }
    if (charge < ServerLimits::kUnchargedBodyBytes) return Handle(std::move(request));
    phase_ = Phase::kAwaitingRoom;
    stream_.expires_never();  // the wait ends as requests in flight are handled
    auto waiting = std::make_shared<HttpMessage>(std::move(request));
    core_.bodies.Acquire(charge, [self = shared_from_this(), charge, waiting] {
      asio::post(self->stream_.get_executor(), [self, charge, waiting] {
        self->body_charge_.store(charge, std::memory_order_release);
        if (self->phase_ != Phase::kAwaitingRoom) return self->ReleaseBody();  // closed
        self->Handle(std::move(*waiting));
      });
    });
  }

  // Routes `request` on a handler thread; the reply comes back to this connection's strand
  // (from an asynchronous route: whenever its responder sends it).
  void Handle(HttpMessage request) {
    phase_ = Phase::kHandling;
    asio::post(core_.handlers, [self = shared_from_this(), request = std::move(request)]() mutable {
      self->RouteAndAnswer(request);
    });
  }

  // Handle on this strand, for a small request to a route that hands off on the I/O thread
  // (HttpRoute::hand_off_on_io).
  void HandleHere(HttpMessage request) {
    phase_ = Phase::kHandling;
    RouteAndAnswer(request);
  }

  // A handler thread, or the strand (HandleHere).
  void RouteAndAnswer(HttpMessage& request) {
    // Past the shutdown deadline the connection is closed: the request is not run.
    if (core_.abandoning()) return;
    bool close = !request.keep_alive();
    std::shared_ptr<OwedReply> owed;
    std::optional<HttpReply> reply = Route(request, close, &owed);
    if (reply) return Answer(std::move(*reply), close);
    // An asynchronous route took the request: its body has been parsed or moved out, and
    // the wait must not hold room in max_concurrent_body_bytes that other requests need.
    ReleaseBody();
    asio::post(stream_.get_executor(), [self = shared_from_this(), owed = std::move(owed)] {
      self->Watch(std::move(owed));
    });
  }

  // Hands `reply` to the connection's strand. Any thread.
  void Answer(HttpReply reply, bool close) {
    asio::post(stream_.get_executor(),
               [self = shared_from_this(), reply = std::move(reply), close]() mutable {
                 self->ReleaseBody();
                 self->StopWatching();
                 self->Write(std::move(reply), close);
               });
  }

  // Strand. While an asynchronous route owes the reply, waits for the socket to turn readable
  // without reading: a client that closes or resets its connection meanwhile is gone, so the
  // reply is abandoned and the connection (and its slot in max_connections) goes at once
  // rather than when the route answers. Bytes that arrive (a pipelined request) stay for the
  // next read; the watch ends there.
  void Watch(std::shared_ptr<OwedReply> owed) {
    if (phase_ != Phase::kHandling || !owed) return;  // answered already, or closed
    watching_ = std::move(owed);
    stream_.socket().async_wait(
        tcp::socket::wait_read,
        [self = shared_from_this()](beast::error_code ec) { self->OnReadable(ec); });
  }

  void OnReadable(beast::error_code ec) {
    std::shared_ptr<OwedReply> owed = std::move(watching_);
    if (!owed || ec == asio::error::operation_aborted) return;  // answered (StopWatching)
    beast::error_code available_ec;
    size_t pending = stream_.socket().available(available_ec);
    if (!ec && !available_ec && pending > 0) return;  // a pipelined request
    {
      MutexLock lock(owed->mu);
      if (!owed->session) return;  // answered at the same moment: Answer writes it
      owed->session.reset();
    }
    core_.ForgetOwed(owed->id);
    CloseNow();
  }

  // Strand. Ends the watch: the reply is about to be written.
  void StopWatching() {
    if (!watching_) return;
    watching_.reset();
    beast::error_code ignored;
    stream_.socket().cancel(ignored);
  }

  // The responder of one request of an asynchronous route.
  class Responder final : public HttpResponder {
   public:
    Responder(std::shared_ptr<OwedReply> owed, const HttpMessage& request, bool close)
        : owed_(std::move(owed)), close_(close) {
      head_.version(request.version());
    }
    ~Responder() override {
      Send(Status::Internal("the route ended without answering the request"));
    }

    void Send(Result<HttpResponse> response) override {
      TakenReply taken(*owed_);
      if (!taken) return;  // answered already, or the server stopped
      static_cast<HttpSession&>(*taken.session())
          .Answer(response.ok() ? ResponseReply(head_, *response)
                                : ErrorReply(head_, response.status()),
                  close_);
    }

   private:
    std::shared_ptr<OwedReply> owed_;
    HttpMessage head_;  // the request's version, for the reply
    const bool close_;
  };

  // Handler thread (or the strand: HandleHere). Moves the body out of `message` into the route's
  // request. Returns the reply, or nullopt when an asynchronous route took the request (it answers
  // later; then *owed_out is the reply it owes).
  std::optional<HttpReply> Route(HttpMessage& message, bool close,
                                 std::shared_ptr<OwedReply>* owed_out) {
    HttpRequest request;
    request.method = std::string(message.method_string());
    request.target = std::string(message.target());
    request.path = request.target.substr(0, request.target.find('?'));
    request.body = std::move(message.body());
    for (const auto& field : message) {
      std::string name(field.name_string());
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      auto [it, first] = request.headers.try_emplace(name, field.value());
      if (first) continue;
      if (IsSingletonField(name)) {
        // Two values of a field that has one: which one the client meant is unknowable.
        return ErrorReply(message, Status::InvalidArgument(
                                       fmt::format("header {} is sent more than once; send it once",
                                                   std::string(field.name_string()))));
      }
      it->second = std::string(field.value());
    }
    std::string allowed;
    for (const HttpRoute& route : core_.routes) {
      std::map<std::string, std::string, std::less<>> params;
      if (!MatchRoutePath(route.path, request.path, &params)) continue;
      if (route.method != request.method) {
        if (allowed.find(route.method) == std::string::npos) {
          allowed += allowed.empty() ? route.method : ", " + route.method;
        }
        continue;
      }
      request.params = std::move(params);
      try {
        if (route.async_handler) {
          auto owed = std::make_shared<OwedReply>(core_.NextId(), &core_, shared_from_this());
          core_.Owe(owed);
          *owed_out = owed;
          auto responder = std::make_shared<Responder>(owed, message, close);
          try {
            route.async_handler(request, responder);
          } catch (const std::exception& e) {
            responder->Send(Status::Internal(
                fmt::format("route {} {} failed: {}", route.method, route.path, e.what())));
          }
          return std::nullopt;
        }
        if (route.response_handler) {
          Result<HttpResponse> response = route.response_handler(request);
          if (!response.ok()) return ErrorReply(message, response.status());
          return ResponseReply(message, *response);
        }
        Result<nlohmann::json> result = route.handler(request);
        if (!result.ok()) return ErrorReply(message, result.status());
        return JsonReply(message, http::status::ok, *result);
      } catch (const std::exception& e) {
        return ErrorReply(message,
                          Status::Internal(fmt::format("route {} {} failed: {}", route.method,
                                                       route.path, e.what())));
      }
    }
    if (!allowed.empty()) {
      HttpReply reply = ErrorReply(message, Status::InvalidArgument(fmt::format(
                                                "method {} is not allowed on {}; allowed: {}",
                                                request.method, request.path, allowed)));
      reply.result(http::status::method_not_allowed);
      reply.set(http::field::allow, allowed);
      return reply;
    }
    return ErrorReply(
        message, Status::NotFound(fmt::format("no route for {} {}", request.method, request.path)));
  }

  // Writes `reply`; then reads the next request, or closes when `close` is set or the server
  // is shutting down (a request in flight is answered before its connection closes).
  void Write(HttpReply reply, bool close) {
    if (phase_ == Phase::kClosed) return;
    phase_ = Phase::kWriting;
    RecordAnswer(reply);
    reply.keep_alive(!close && !shutting_down_);
    reply.prepare_payload();
    reply_ = std::make_unique<HttpReply>(std::move(reply));
    stream_.expires_after(core_.limits.io_timeout);
    http::async_write(stream_, *reply_,
                      [self = shared_from_this(), close](beast::error_code ec, size_t) {
                        self->reply_.reset();
                        if (ec) return self->CloseNow();
                        if (close || self->shutting_down_) return self->CloseSend();
                        self->Read();
                      });
  }

  // Counts the answer to the request whose head was read last (HttpStats); an answer to a
  // connection that sent no head (refused at the connection cap) is not a request's.
  void RecordAnswer(const HttpReply& reply) {
    if (!timed_) return;
    core_.http_stats->Record(timed_->route, reply.result_int(),
                             std::chrono::steady_clock::now() - timed_->started);
    timed_.reset();
  }

  void RejectTooLarge(const std::string& message) {
    Reject(ErrorReply(Head(), Status::LimitExceeded(message)));
  }

  void RejectMalformed(const beast::error_code& ec) {
    Reject(ErrorReply(Head(),
                      Status::InvalidArgument(fmt::format(
                          "malformed HTTP request: {}; the connection closes", ec.message()))));
  }

  // Answers a request refused before its body was read, then closes (after a lingering drain
  // when `linger` is set).
  void Reject(HttpReply reply, bool linger = true) {
    if (phase_ == Phase::kClosed) return;
    phase_ = Phase::kWriting;
    RecordAnswer(reply);
    reply.keep_alive(false);
    reply.prepare_payload();
    reply_ = std::make_unique<HttpReply>(std::move(reply));
    stream_.expires_after(core_.limits.io_timeout);
    http::async_write(
        stream_, *reply_, [self = shared_from_this(), linger](beast::error_code ec, size_t) {
          self->reply_.reset();
          if (ec) return self->CloseNow();
          self->CloseSend();
          if (!linger) return;
          self->phase_ = Phase::kLingering;
          (void)self->MarkEvictable();  // nothing in flight: may make room for a new connection
          self->stream_.expires_after(kLingerTime);
          self->Linger();
        });
  }

  // Discards what the client still sends until it closes, kLingerBytes or kLingerTime.
  void Linger() {
    stream_.async_read_some(asio::buffer(drain_),
                            [self = shared_from_this()](beast::error_code ec, size_t bytes) {
                              self->lingered_ += bytes;
                              if (ec || self->lingered_ >= kLingerBytes) return self->CloseNow();
                              self->Linger();
                            });
  }

  // Ends the sending side: the client reads the reply, then sees the end of the stream.
  void CloseSend() {
    phase_ = Phase::kClosed;
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
  }

  void CloseNow() {
    phase_ = Phase::kClosed;
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
  }

  TrackedSlot tracked_;  // first: untracked after everything else is gone
  ServerCore& core_;
  const uint64_t id_;

  // ---- Owned by the connection's strand ---------------------------------------------------
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::unique_ptr<HttpReply> reply_;  // kept alive while async_write runs
  Phase phase_ = Phase::kAwaitingHead;
  bool shutting_down_ = false;         // Shutdown was called: answer what is in flight, then close
  uint64_t body_limit_ = 0;            // the body limit of the request being read
  bool hand_off_on_io_ = false;        // its route is HttpRoute::hand_off_on_io
  bool upgrade_ = false;               // its head asks for a WebSocket upgrade
  std::array<char, 16 * 1024> drain_;  // lingering close: discarded input
  size_t lingered_ = 0;                // bytes discarded so far
  uint64_t requests_ = 0;              // requests read on this connection
  // The request being answered: its route (index in the table, -1 for none) and when its head
  // was read. Set in OnHeader, taken by the answer (RecordAnswer).
  struct RequestTiming {
    int route;
    std::chrono::steady_clock::time_point started;
  };
  std::optional<RequestTiming> timed_;
  // Bytes this request holds in max_concurrent_body_bytes (0: none). The strand, or the
  // handler thread while the request is being handled (ReleaseBody).
  // Atomic: an async route that answers at once releases it on the strand (Answer) while the
  // handler thread that ran the route releases it too (RouteAndAnswer); one of them gets it.
  std::atomic<uint64_t> body_charge_{0};
  // The reply an asynchronous route owes while Watch waits on the socket (null otherwise).
  std::shared_ptr<OwedReply> watching_;
};

}  // namespace

void StartHttpSession(ServerCore& core, tcp::socket socket) {
  uint64_t id = core.NextId();
  auto session = std::make_shared<HttpSession>(core, id, std::move(socket));
  Status tracked = core.Track(id, session);
  if (!tracked.ok()) return session->Refuse(tracked);  // untracked: closes once answered
  session->Run();
}

}  // namespace reef::server::detail
