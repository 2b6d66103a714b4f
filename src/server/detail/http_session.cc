// HTTP side of the listener: reads requests (bounded by max_request_bytes and io_timeout),
// checks the token, routes through the table on a handler thread, and hands WebSocket
// upgrades over to the WebSocket session.
#include <fmt/format.h>

#include <algorithm>
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

constexpr size_t kMaxHeaderBytes = 16 * 1024;

class HttpSession : public Session, public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(ServerCore& core, uint64_t id, tcp::socket socket)
      : core_(core), id_(id), stream_(std::move(socket)) {}
  ~HttpSession() override { core_.Untrack(id_); }

  void Run() {
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->Read(); });
  }

  // Answers `status` (503) without reading the request, then closes.
  void Refuse(const Status& status) {
    asio::dispatch(stream_.get_executor(), [self = shared_from_this(), status] {
      HttpMessage head;
      head.version(11);
      self->Write(ErrorReply(head, status), /*close=*/true);
    });
  }

  void Shutdown() override {
    asio::post(stream_.get_executor(), [self = shared_from_this()] {
      self->closing_ = true;
      beast::error_code ignored;
      self->stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
      self->stream_.close();
    });
  }

 private:
  void Read() {
    if (closing_) return;
    parser_.emplace();
    // Beast checks Content-Length against the limit while parsing the head, before the route
    // is known: start from the largest limit any route has and narrow it in OnHeader.
    body_limit_ = core_.largest_body_bytes;
    parser_->body_limit(body_limit_);
    parser_->header_limit(kMaxHeaderBytes);
    stream_.expires_after(core_.options.io_timeout);
    // The head first: its route decides how large a body may follow.
    http::async_read_header(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->OnHeader(ec); });
  }

  void OnHeader(beast::error_code ec) {
    if (ec) return OnRead(ec);
    const auto& head = parser_->get();
    std::string_view target = head.target();
    std::string_view path = target.substr(0, target.find('?'));
    body_limit_ = core_.options.max_request_bytes;
    for (const HttpRoute& route : core_.routes) {
      if (route.method == head.method_string() && MatchRoutePath(route.path, path, nullptr)) {
        if (route.max_body_bytes) body_limit_ = route.max_body_bytes;
        break;
      }
    }
    parser_->body_limit(body_limit_);  // applies to chunked bodies from here on
    if (parser_->content_length() && *parser_->content_length() > body_limit_) {
      return OnRead(http::error::body_limit);
    }
    http::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code read_ec, size_t) { self->OnRead(read_ec); });
  }

  void OnRead(beast::error_code ec) {
    if (ec == http::error::body_limit || ec == http::error::header_limit) {
      HttpMessage head;
      head.version(11);
      Write(ErrorReply(head, Status::LimitExceeded(fmt::format(
                                 "request exceeds the limit of {} body bytes / {} header bytes",
                                 body_limit_, kMaxHeaderBytes))),
            /*close=*/true);
      return;
    }
    if (ec) return Close();
    HttpMessage request = parser_->release();
    if (!Authorized(core_, request)) return Write(UnauthorizedReply(request), /*close=*/true);
    if (beast::websocket::is_upgrade(request)) {
      stream_.expires_never();
      StartWebSocketSession(core_, std::move(stream_), std::move(request));
      return;
    }
    // Route on a handler thread; the reply comes back to this connection's strand.
    asio::post(core_.handlers, [self = shared_from_this(), request = std::move(request)] {
      HttpReply reply = self->Route(request);
      bool close = !request.keep_alive();
      asio::post(self->stream_.get_executor(), [self, reply = std::move(reply), close]() mutable {
        self->Write(std::move(reply), close);
      });
    });
  }

  HttpReply Route(const HttpMessage& message) const {
    HttpRequest request;
    request.method = std::string(message.method_string());
    request.target = std::string(message.target());
    request.path = request.target.substr(0, request.target.find('?'));
    request.body = message.body();
    for (const auto& field : message) {
      std::string name(field.name_string());
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      request.headers[name] = std::string(field.value());
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

  void Write(HttpReply reply, bool close) {
    if (closing_) return;
    reply.keep_alive(!close);
    reply.prepare_payload();
    reply_ = std::make_unique<HttpReply>(std::move(reply));
    stream_.expires_after(core_.options.io_timeout);
    http::async_write(stream_, *reply_,
                      [self = shared_from_this(), close](beast::error_code ec, size_t) {
                        self->reply_.reset();
                        if (ec || close) return self->Close();
                        self->Read();
                      });
  }

  void Close() {
    closing_ = true;
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
  }

  ServerCore& core_;
  const uint64_t id_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::unique_ptr<HttpReply> reply_;  // kept alive while async_write runs
  bool closing_ = false;              // strand only
  uint64_t body_limit_ = 0;           // strand only: the body limit of the request being read
};

}  // namespace

void StartHttpSession(ServerCore& core, tcp::socket socket) {
  uint64_t id = core.NextId();
  auto session = std::make_shared<HttpSession>(core, id, std::move(socket));
  Status tracked = core.Track(id, session);
  if (!tracked.ok()) return session->Refuse(tracked);
  session->Run();
}

}  // namespace reef::server::detail
