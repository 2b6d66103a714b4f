// WebSocket side of the listener: the reef.v1 session. Reads messages in chunks so a frame
// over max_request_bytes is discarded as it arrives (never buffered) and answered with an
// error; hands every message to the dispatcher on a per-connection handler strand (arrival
// order kept); writes responses and events from a bounded outbox.
#include <fmt/format.h>

#include <array>
#include <atomic>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/websocket/stream.hpp>
#include <deque>
#include <optional>
#include <string>
#include <utility>

#include "server/detail/server_core.h"

namespace reef::server::detail {
namespace {

namespace websocket = beast::websocket;

constexpr size_t kReadChunkBytes = 64 * 1024;

// True when the comma-separated Sec-WebSocket-Protocol list `offered` contains kSubprotocol.
bool OffersSubprotocol(std::string_view offered) {
  while (!offered.empty()) {
    size_t comma = offered.find(',');
    std::string_view token = offered.substr(0, comma);
    while (!token.empty() && (token.front() == ' ' || token.front() == '\t')) {
      token.remove_prefix(1);
    }
    while (!token.empty() && (token.back() == ' ' || token.back() == '\t')) token.remove_suffix(1);
    if (token == kSubprotocol) return true;
    if (comma == std::string_view::npos) break;
    offered.remove_prefix(comma + 1);
  }
  return false;
}

class WsSession : public Session,
                  public Connection,
                  public std::enable_shared_from_this<WsSession> {
 public:
  WsSession(ServerCore& core, uint64_t id, beast::tcp_stream stream)
      : core_(core),
        id_(id),
        ws_(std::move(stream)),
        close_timer_(ws_.get_executor()),
        handler_strand_(asio::make_strand(core.handlers)) {}
  ~WsSession() override {
    core_.Untrack(id_);
    // Normally reported from the handler strand when reading ended (ReportDisconnect); this
    // covers a server that stopped before that task ran.
    if (accepted_ && !disconnect_reported_.exchange(true) && core_.options.on_disconnect) {
      core_.options.on_disconnect(id_);
    }
  }

  uint64_t id() const override { return id_; }

  uint64_t OutgoingRoom() const override {
    uint64_t queued = queued_.load();
    uint64_t max = core_.options.max_outgoing_messages;
    return queued >= max ? 0 : max - queued;
  }

  std::weak_ptr<Connection> Handle() override {
    return std::static_pointer_cast<Connection>(shared_from_this());
  }

  bool closed() const override { return closed_; }

  Status Push(std::string_view kind, nlohmann::json data) override {
    return Enqueue(ToText(Event(kind, std::move(data))));
  }

  void Shutdown() override {
    asio::post(ws_.get_executor(), [self = shared_from_this()] {
      self->Close(websocket::close_code::going_away, "server shutting down");
    });
  }

  void Abort() override {
    asio::post(ws_.get_executor(), [self = shared_from_this()] {
      boost::system::error_code ignored;
      beast::get_lowest_layer(self->ws_).socket().shutdown(tcp::socket::shutdown_both, ignored);
      beast::get_lowest_layer(self->ws_).close();
    });
  }

  // Checks the subprotocol and completes the handshake, or answers the upgrade with an
  // HTTP error when `refusal` is not OK or the subprotocol is wrong.
  void Run(HttpMessage upgrade, Status refusal) {
    upgrade_ = std::move(upgrade);
    asio::dispatch(ws_.get_executor(),
                   [self = shared_from_this(), refusal] { self->Accept(refusal); });
  }

 private:
  // ---- Handshake ----------------------------------------------------------------------------

  void Accept(const Status& refusal) {
    if (!refusal.ok()) return Refuse(ErrorReply(upgrade_, refusal));
    std::string_view offered = upgrade_[http::field::sec_websocket_protocol];
    if (!OffersSubprotocol(offered)) {
      return Refuse(ErrorReply(
          upgrade_,
          Status::InvalidArgument(fmt::format(
              "WebSocket subprotocol \"{}\" is required (Sec-WebSocket-Protocol); the "
              "client offered {}",
              kSubprotocol, offered.empty() ? "none" : "\"" + std::string(offered) + "\""))));
    }
    ws_.set_option(websocket::stream_base::timeout{core_.options.io_timeout,
                                                   websocket::stream_base::none(), false});
    ws_.set_option(websocket::stream_base::decorator([](websocket::response_type& response) {
      response.set(http::field::sec_websocket_protocol, kSubprotocol);
      response.set(http::field::server, "reef");
    }));
    ws_.read_message_max(0);  // the limit is enforced chunk by chunk in OnRead
    ws_.async_accept(upgrade_, [self = shared_from_this()](beast::error_code ec) {
      if (ec) {
        self->closed_ = true;
        return;
      }
      self->accepted_ = true;
      self->ReadSome();
      if (self->deferred_close_) {
        auto [code, reason] = *std::exchange(self->deferred_close_, std::nullopt);
        self->Close(code, reason);
      }
    });
  }

  void Refuse(HttpReply reply) {
    closed_ = true;
    reply.keep_alive(false);
    reply.prepare_payload();
    refusal_ = std::make_unique<HttpReply>(std::move(reply));
    beast::get_lowest_layer(ws_).expires_after(core_.options.io_timeout);
    http::async_write(
        ws_.next_layer(), *refusal_, [self = shared_from_this()](beast::error_code, size_t) {
          beast::error_code ignored;
          beast::get_lowest_layer(self->ws_).socket().shutdown(tcp::socket::shutdown_both, ignored);
        });
  }

  // ---- Reading ------------------------------------------------------------------------------

  void ReadSome() {
    ws_.async_read_some(asio::buffer(chunk_),
                        [self = shared_from_this()](beast::error_code ec, size_t bytes) {
                          self->OnRead(ec, bytes);
                        });
  }

  void OnRead(beast::error_code ec, size_t bytes) {
    if (ec) {
      closed_ = true;  // the client closed, the connection broke, or Close() finished
      close_timer_.cancel();
      ReportDisconnect();
      return;
    }
    if (!oversized_) {
      if (message_.size() + bytes > core_.options.max_request_bytes) {
        oversized_ = true;
        std::string().swap(message_);
      } else {
        message_.append(chunk_.data(), bytes);
      }
    }
    if (ws_.is_message_done()) {
      if (oversized_) {
        Answer(Status::LimitExceeded(
            fmt::format("message exceeds max_request_bytes ({} bytes) and was discarded",
                        core_.options.max_request_bytes)));
      } else if (!ws_.got_text()) {
        Answer(Status::InvalidArgument("binary messages are not accepted; send JSON text"));
      } else {
        Dispatch(std::move(message_));
      }
      message_.clear();
      oversized_ = false;
    }
    ReadSome();
  }

  // Runs the request on this connection's handler strand and queues the response.
  void Dispatch(std::string frame) {
    asio::post(handler_strand_, [self = shared_from_this(), frame = std::move(frame)] {
      (void)self->Enqueue(self->core_.options.dispatcher.HandleFrame(frame, *self));
    });
  }

  // Calls ServerOptions::on_disconnect on the handler strand, after the requests already
  // queued for this connection.
  void ReportDisconnect() {
    if (!core_.options.on_disconnect) return;
    asio::post(handler_strand_, [self = shared_from_this()] {
      if (!self->disconnect_reported_.exchange(true)) self->core_.options.on_disconnect(self->id_);
    });
  }

  // Queues an uncorrelated error response, behind the responses to earlier messages.
  void Answer(Status status) {
    asio::post(handler_strand_, [self = shared_from_this(), status = std::move(status)] {
      (void)self->Enqueue(ToText(ErrorResponse(nullptr, status)));
    });
  }

  // ---- Writing (Enqueue: any thread; the rest: the connection's strand) ---------------------

  Status Enqueue(std::string text) {
    if (closed_) return Status::Unavailable(fmt::format("connection {} is closed", id_));
    if (queued_.fetch_add(1) >= core_.options.max_outgoing_messages) {
      queued_.fetch_sub(1);
      std::string reason = fmt::format("outgoing queue full (max_outgoing_messages = {})",
                                       core_.options.max_outgoing_messages);
      asio::post(ws_.get_executor(), [self = shared_from_this(), reason] {
        self->Close(websocket::close_code::policy_error, reason);
      });
      return Status::LimitExceeded(fmt::format(
          "connection {}: {}; the client is not reading and is being closed", id_, reason));
    }
    asio::post(ws_.get_executor(), [self = shared_from_this(), text = std::move(text)]() mutable {
      if (self->closing_) {
        self->queued_.fetch_sub(1);
        return;
      }
      self->outbox_.push_back(std::move(text));
      if (!self->writing_) self->WriteNext();
    });
    return Status::Ok();
  }

  void WriteNext() {
    writing_ = true;
    ws_.text(true);
    ws_.async_write(
        asio::buffer(outbox_.front()),
        [self = shared_from_this()](beast::error_code ec, size_t) { self->OnWrite(ec); });
  }

  void OnWrite(beast::error_code ec) {
    writing_ = false;
    outbox_.pop_front();
    queued_.fetch_sub(1);
    if (ec || closing_) {
      closed_ = true;
      queued_.fetch_sub(outbox_.size());
      outbox_.clear();
      return;
    }
    if (!outbox_.empty()) WriteNext();
  }

  // Starts the close handshake with `code` and `reason`; the socket is closed outright when
  // the handshake has not finished within io_timeout (a client that does not read).
  void Close(websocket::close_code code, const std::string& reason) {
    if (closing_ || closed_) return;
    if (!accepted_) {
      // The handshake is still being answered: a close frame cannot be sent before it.
      // The accept handler sends it, so a client that connected just before a shutdown
      // still learns why the server went away.
      deferred_close_ = std::make_pair(code, reason);
      return;
    }
    closing_ = true;
    closed_ = true;
    if (!writing_) {
      queued_.fetch_sub(outbox_.size());
      outbox_.clear();
    }
    ws_.async_close(
        websocket::close_reason(code, reason),
        [self = shared_from_this()](beast::error_code) { self->close_timer_.cancel(); });
    close_timer_.expires_after(core_.options.io_timeout);
    close_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (!ec) beast::get_lowest_layer(self->ws_).close();
    });
  }

  ServerCore& core_;
  const uint64_t id_;

  // ---- Owned by the connection's strand -----------------------------------------------------
  websocket::stream<beast::tcp_stream> ws_;
  asio::steady_timer close_timer_;
  HttpMessage upgrade_;
  std::unique_ptr<HttpReply> refusal_;
  std::array<char, kReadChunkBytes> chunk_;
  std::string message_;     // the message being read (empty while oversized_)
  bool oversized_ = false;  // the message being read passed max_request_bytes
  std::deque<std::string> outbox_;
  bool writing_ = false;
  // Close() called before the handshake finished: sent once it does.
  std::optional<std::pair<websocket::close_code, std::string>> deferred_close_;
  bool closing_ = false;

  // ---- Any thread ---------------------------------------------------------------------------
  std::atomic<bool> closed_{false};
  std::atomic<uint64_t> queued_{0};    // messages accepted by Enqueue, not yet written or dropped
  std::atomic<bool> accepted_{false};  // the handshake completed: ops may have run
  std::atomic<bool> disconnect_reported_{false};  // on_disconnect was called
  asio::strand<asio::thread_pool::executor_type> handler_strand_;
};

}  // namespace

void StartWebSocketSession(ServerCore& core, beast::tcp_stream stream, HttpMessage upgrade) {
  uint64_t id = core.NextId();
  auto session = std::make_shared<WsSession>(core, id, std::move(stream));
  Status tracked = core.Track(id, session);
  session->Run(std::move(upgrade), tracked);
}

}  // namespace reef::server::detail
