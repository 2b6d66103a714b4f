// Client: Boost.Beast WebSocket client of the reef.v1 protocol. One asynchronous read is
// always outstanding; Call, NextEvent and Close run the io_context on the caller's thread
// until what they wait for has arrived or their deadline has passed.
#include "client/client.h"

#include <fmt/format.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <charconv>
#include <deque>
#include <functional>
#include <map>
#include <set>

#include "client/detail/tcp_connect.h"
#include "client/json_fields.h"

namespace reef::client {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::string_view kSubprotocol = "reef.v1";
constexpr int kProtocolVersion = 1;

// The text of the server's JSON error body ({"error":{"code","message"}}), or the raw body.
std::string DescribeHttpError(const websocket::response_type& response) {
  json body = json::parse(response.body(), nullptr, false);
  if (const json* error = FindField(body, "error"); error != nullptr && error->is_object()) {
    return fmt::format("{}: {}", StringField(*error, "code", "?"),
                       StringField(*error, "message", "?"));
  }
  std::string text = response.body().substr(0, 200);
  return text.empty() ? std::string(response.reason()) : text;
}

}  // namespace

Result<std::pair<std::string, uint16_t>> SplitAddress(std::string_view address) {
  size_t colon = address.rfind(':');
  if (colon == std::string_view::npos) {
    return Status::InvalidArgument(
        fmt::format("address '{}' has no port; expected HOST:PORT, e.g. 127.0.0.1:7433", address));
  }
  std::string_view host = address.substr(0, colon);
  std::string_view port_text = address.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    return Status::InvalidArgument(
        fmt::format("address '{}': an IPv6 host must be in brackets, e.g. [::1]:7433", address));
  }
  if (host.empty()) {
    return Status::InvalidArgument(fmt::format("address '{}' has an empty host", address));
  }
  unsigned port = 0;
  auto [ptr, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || ptr != port_text.data() + port_text.size() || port == 0 ||
      port > 65535) {
    return Status::InvalidArgument(
        fmt::format("address '{}': port '{}' is not a number from 1 to 65535", address, port_text));
  }
  return std::pair<std::string, uint16_t>(std::string(host), static_cast<uint16_t>(port));
}

class Client::Impl {
 public:
  explicit Impl(ClientOptions options) : options_(std::move(options)), ws_(ioc_) {}

  // ---------------------------------------------------------------- connect

  Status Connect() {
    REEF_ASSIGN_OR_RETURN(auto host_port, SplitAddress(options_.address));
    auto [host, port] = host_port;
    Clock::time_point deadline = Clock::now() + options_.connect_timeout;
    auto cannot = [&](std::string_view why) {
      return Status::Unavailable(fmt::format("cannot connect to {}: {} — is `reef serve` running?",
                                             options_.address, why));
    };
    auto& stream = beast::get_lowest_layer(ws_);
    REEF_RETURN_IF_ERROR(detail::ConnectTcp(ioc_, stream, options_.address, host, port, deadline));

    stream.expires_never();
    websocket::stream_base::timeout timeouts =
        websocket::stream_base::timeout::suggested(beast::role_type::client);
    timeouts.handshake_timeout = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::max(deadline - Clock::now(), Clock::duration(std::chrono::milliseconds(1))));
    ws_.set_option(timeouts);
    ws_.read_message_max(options_.max_message_bytes);
    std::optional<std::string> token = options_.auth_token;
    ws_.set_option(websocket::stream_base::decorator([token](websocket::request_type& request) {
      request.set(http::field::sec_websocket_protocol, kSubprotocol);
      request.set(http::field::user_agent, "reef-client");
      if (token && !token->empty()) request.set(http::field::authorization, "Bearer " + *token);
    }));
    websocket::response_type response;
    std::optional<beast::error_code> shook;
    ws_.async_handshake(response, host, "/", [&](beast::error_code ec) { shook = ec; });
    RunUntil(Clock::time_point::max(), [&] { return shook.has_value(); });
    if (*shook) {
      if (response.result() == http::status::unauthorized) {
        json body = json::parse(response.body(), nullptr, false);
        const json* error = FindField(body, "error");
        std::string why = error != nullptr ? StringField(*error, "message") : "";
        if (why.empty()) why = "the server wants a bearer token";
        return Status::FailedPrecondition(fmt::format(
            "{}{} ({} refused the connection; set REEF_AUTH_TOKEN to the server's token)",
            kUnauthenticatedPrefix, why, options_.address));
      }
      if (response.result_int() != 0 && response.result() != http::status::switching_protocols) {
        return Status::Unavailable(fmt::format("{} refused the WebSocket upgrade (HTTP {}): {}",
                                               options_.address, response.result_int(),
                                               DescribeHttpError(response)));
      }
      return cannot(fmt::format("WebSocket handshake failed: {}", shook->message()));
    }
    if (response[http::field::sec_websocket_protocol] != kSubprotocol) {
      CloseSocket();
      return Status::Unavailable(fmt::format(
          "{} accepted the WebSocket upgrade without subprotocol {}; it is not a Reef server",
          options_.address, kSubprotocol));
    }
    open_ = true;
    StartRead();
    return Status::Ok();
  }

  // ---------------------------------------------------------------- requests

  Result<json> Call(std::string_view op, json args, std::chrono::milliseconds timeout) {
    if (!args.is_object()) {
      return Status::InvalidArgument(fmt::format("args of '{}' must be a JSON object", op));
    }
    PollArrived();
    REEF_RETURN_IF_ERROR(Usable());
    if (!ws_.is_open()) {
      // The server's close frame arrived and the stream is answering it: starting a write
      // now would race that answer (Beast allows one write at a time). Let the read finish,
      // which records why the server closed.
      RunUntil(Clock::now() + std::chrono::seconds(1), [&] { return !reading_; });
      Break(Status::Unavailable(fmt::format("{} closed the connection", options_.address)));
      return broken_;
    }
    std::string id = fmt::format("c-{}", ++last_id_);
    json request = {{"v", kProtocolVersion}, {"id", id}, {"op", op}, {"args", std::move(args)}};
    std::string frame = request.dump(-1, ' ', false, json::error_handler_t::replace);
    if (frame.size() > options_.max_request_bytes) {
      return Status::LimitExceeded(fmt::format(
          "request '{}' is {} bytes; the server accepts at most {} bytes (max_request_bytes)", op,
          frame.size(), options_.max_request_bytes));
    }
    Clock::time_point deadline = Clock::now() + timeout;
    waiting_id_ = id;
    anonymous_error_.reset();
    write_buffer_ = std::move(frame);
    std::optional<beast::error_code> written;
    ws_.text(true);
    ws_.async_write(asio::buffer(write_buffer_),
                    [&written](beast::error_code ec, size_t) { written = ec; });
    bool done = RunUntil(deadline, [&] {
      return (written.has_value() && (responses_.contains(id) || anonymous_error_)) ||
             !broken_.ok();
    });
    waiting_id_.clear();
    if (!written.has_value()) {
      // A write that cannot finish leaves the stream unusable.
      Break(Status::Unavailable(fmt::format("sending '{}' to {} timed out after {} ms", op,
                                            options_.address, timeout.count())));
      CloseSocket();
      RunUntil(Clock::now() + std::chrono::seconds(1), [&] { return written.has_value(); });
      return broken_;
    }
    if (*written && broken_.ok()) {
      Break(Status::Unavailable(
          fmt::format("connection to {} lost: {}", options_.address, written->message())));
    }
    auto it = responses_.find(id);
    if (it == responses_.end()) {
      if (anonymous_error_) return *std::exchange(anonymous_error_, std::nullopt);
      if (!broken_.ok()) return broken_;
      if (!done) {
        if (abandoned_.size() >= options_.max_abandoned_calls) {
          Break(Status::Unavailable(fmt::format(
              "{} calls timed out without a response (max_abandoned_calls); giving up on {}",
              abandoned_.size(), options_.address)));
        }
        abandoned_.insert(id);
        return Status::Unavailable(fmt::format("no response to '{}' from {} within {} ms", op,
                                               options_.address, timeout.count()));
      }
    }
    json response = std::move(it->second);
    responses_.erase(it);
    return ResultOf(response);
  }

  Result<std::optional<ClientEvent>> NextEvent(std::chrono::milliseconds timeout) {
    PollArrived();
    if (events_.empty() && !events_dropped_ && broken_.ok() && open_) {
      RunUntil(Clock::now() + timeout,
               [&] { return !events_.empty() || events_dropped_ || !broken_.ok(); });
    }
    if (!events_.empty()) {
      ClientEvent event = std::move(events_.front());
      events_.pop_front();
      return std::optional<ClientEvent>(std::move(event));
    }
    if (events_dropped_) {
      events_dropped_ = 0;
      return Status::LimitExceeded(
          fmt::format("events arrived faster than they were taken; dropped some after {} queued "
                      "(max_queued_events)",
                      options_.max_queued_events));
    }
    REEF_RETURN_IF_ERROR(Usable());
    return std::optional<ClientEvent>();
  }

  Status Close(std::chrono::milliseconds timeout) {
    if (!open_) return Status::Ok();
    open_ = false;
    Status result;
    if (broken_.ok()) {
      std::optional<beast::error_code> closed;
      ws_.async_close(websocket::close_code::normal,
                      [&closed](beast::error_code ec) { closed = ec; });
      // The outstanding read completes once the server's close frame arrives.
      bool done = RunUntil(Clock::now() + timeout, [&] { return closed.has_value() && !reading_; });
      if (!done || (closed && *closed)) {
        result = Status::Unavailable(
            fmt::format("closing the connection to {} did not finish cleanly", options_.address));
      }
      Break(Status::Unavailable(fmt::format("the connection to {} is closed", options_.address)));
    }
    CloseSocket();
    RunUntil(Clock::now() + std::chrono::seconds(1), [&] { return !reading_; });
    return result;
  }

  const std::string& address() const { return options_.address; }
  bool connected() const { return open_ && broken_.ok(); }
  Status failure() const { return Usable(); }

 private:
  // Handles what has already arrived (without waiting), so a close frame the server sent
  // while the caller was busy elsewhere is seen before anything is written.
  void PollArrived() {
    if (!open_ || !broken_.ok()) return;
    if (ioc_.stopped()) ioc_.restart();
    // The close frame is answered (a write) before the read completes: a few rounds.
    for (int round = 0; round < 8 && ioc_.poll() > 0; ++round) {
      if (ioc_.stopped()) ioc_.restart();
    }
  }

  // Runs handlers until `done()` or `deadline`; returns done().
  bool RunUntil(Clock::time_point deadline, const std::function<bool()>& done) {
    return detail::RunIoUntil(ioc_, deadline, done);
  }

  void StartRead() {
    reading_ = true;
    read_buffer_.clear();
    ws_.async_read(read_buffer_, [this](beast::error_code ec, size_t) {
      reading_ = false;
      if (ec) {
        websocket::close_reason reason = ws_.reason();
        // A close frame names why the server went away even when answering it then failed
        // (the read ends with the write's error, e.g. Broken pipe, instead of `closed`).
        if (ec == websocket::error::closed || reason.code != websocket::close_code::none) {
          Break(Status::Unavailable(
              fmt::format("{} closed the connection (code {}{}{})", options_.address,
                          static_cast<int>(reason.code), reason.reason.empty() ? "" : ": ",
                          std::string(reason.reason.data(), reason.reason.size()))));
        } else if (ec == websocket::error::message_too_big) {
          Break(Status::LimitExceeded(
              fmt::format("{} sent a message larger than {} bytes (max_message_bytes)",
                          options_.address, options_.max_message_bytes)));
        } else {
          Break(Status::Unavailable(
              fmt::format("connection to {} lost: {}", options_.address, ec.message())));
        }
        return;
      }
      OnMessage(beast::buffers_to_string(read_buffer_.data()));
      if (broken_.ok()) StartRead();
    });
  }

  void OnMessage(const std::string& text) {
    json message = json::parse(text, nullptr, false);
    if (!message.is_object()) {
      Break(Status::Internal(fmt::format("{} sent a message that is not a JSON object: {}",
                                         options_.address, text.substr(0, 120))));
      return;
    }
    if (message.contains("event")) {
      if (events_.size() >= options_.max_queued_events) {
        ++events_dropped_;
        return;
      }
      ClientEvent event;
      event.kind = message["event"].is_string() ? message["event"].get<std::string>() : "";
      event.data = message.contains("data") ? message["data"] : json();
      events_.push_back(std::move(event));
      return;
    }
    const json& id = message.contains("id") ? message["id"] : json();
    if (id.is_string()) {
      std::string key = id.get<std::string>();
      if (abandoned_.erase(key) > 0) return;  // its caller gave up waiting
      if (key == waiting_id_) {
        responses_[key] = std::move(message);
        return;
      }
    }
    if (id.is_null() && !waiting_id_.empty()) {
      // The server could not read our request far enough to echo its id (e.g. oversized).
      Result<json> result = ResultOf(message);
      anonymous_error_ =
          result.ok() ? Status::Internal("the server answered with id null") : result.status();
      return;
    }
    // A response nobody waits for: ignore it rather than fail the session.
  }

  // The "result" of a response, or its error as a Status. A malformed response (fields of
  // the wrong type) is an error too, never an exception.
  static Result<json> ResultOf(const json& response) {
    if (BoolField(response, "ok")) {
      const json* result = FindField(response, "result");
      return result != nullptr ? *result : json();
    }
    const json* found = FindField(response, "error");
    const json error = found != nullptr ? *found : json();
    std::string code = StringField(error, "code", "internal");
    std::string text = StringField(error, "message");
    if (text.empty()) text = "the server answered with an error but no message";
    if (auto c = CodeFromName(code); c && *c != Code::kOk) return Status(*c, text);
    return Status::Internal(fmt::format("{} (server error code '{}')", text, code));
  }

  Status Usable() const {
    if (!broken_.ok()) return broken_;
    if (!open_) {
      return Status::Unavailable(fmt::format("the connection to {} is closed", options_.address));
    }
    return Status::Ok();
  }

  void Break(Status status) {
    if (broken_.ok()) broken_ = std::move(status);
  }

  void CloseSocket() {
    beast::error_code ignored;
    beast::get_lowest_layer(ws_).socket().close(ignored);
  }

  ClientOptions options_;
  asio::io_context ioc_;
  websocket::stream<beast::tcp_stream> ws_;
  beast::flat_buffer read_buffer_;
  std::string write_buffer_;  // the frame being written; lives until the write completes
  bool open_ = false;
  bool reading_ = false;
  Status broken_;  // first reason the connection became unusable
  uint64_t last_id_ = 0;
  std::string waiting_id_;  // id of the Call in progress, "" when none
  std::map<std::string, json> responses_;
  std::optional<Status> anonymous_error_;  // an id-null error while a Call waits
  std::set<std::string> abandoned_;        // ids of timed-out calls
  std::deque<ClientEvent> events_;
  size_t events_dropped_ = 0;
};

// ------------------------------------------------------------------ Client

Result<std::unique_ptr<Client>> Client::Connect(ClientOptions options) {
  auto impl = std::make_unique<Impl>(std::move(options));
  REEF_RETURN_IF_ERROR(impl->Connect());
  return std::unique_ptr<Client>(new Client(std::move(impl)));
}

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Client::~Client() {
  if (impl_) (void)impl_->Close(std::chrono::milliseconds(2'000));
}

Result<json> Client::Call(std::string_view op, json args, std::chrono::milliseconds timeout) {
  return impl_->Call(op, std::move(args), timeout);
}

Result<std::optional<ClientEvent>> Client::NextEvent(std::chrono::milliseconds timeout) {
  return impl_->NextEvent(timeout);
}

Status Client::Close(std::chrono::milliseconds timeout) {
  return impl_->Close(timeout);
}

bool Client::connected() const {
  return impl_->connected();
}

Status Client::failure() const {
  return impl_->failure();
}

bool IsUnauthenticated(const Status& status) {
  return status.code() == Code::kFailedPrecondition &&
         status.message().starts_with(kUnauthenticatedPrefix);
}

const std::string& Client::address() const {
  return impl_->address();
}

}  // namespace reef::client
