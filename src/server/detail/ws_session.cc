// WebSocket side of the listener: the reef.v1 session. Reads messages in chunks so a frame
// over max_request_bytes is discarded as it arrives (never buffered) and answered with an
// error; hands every message to the dispatcher on a per-connection handler strand, one at a
// time in arrival order (an asynchronous op frees the thread while it waits), reading no
// further while max_inbound_bytes of requests wait; writes
// responses and events from an outbox bounded by max_outgoing_bytes. Pings keep an idle
// connection checked (websocket_idle_timeout).
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
      : tracked_(core, id),
        core_(core),
        id_(id),
        ws_(std::move(stream)),
        strand_(ws_.get_executor()),
        close_timer_(strand_),
        handler_strand_(asio::make_strand(core.handlers)) {}
  ~WsSession() override {
    // Normally reported from the handler strand when reading ended (ReportDisconnect); this
    // covers a server that stopped before that task ran.
    if (accepted_ && !disconnect_reported_.exchange(true) && core_.options.on_disconnect) {
      core_.options.on_disconnect(id_);
    }
  }

  uint64_t id() const override { return id_; }

  uint64_t OutgoingRoomBytes() const override {
    uint64_t queued = queued_bytes_.load();
    uint64_t max = core_.limits.max_outgoing_bytes;
    return queued >= max ? 0 : max - queued;
  }

  std::weak_ptr<Connection> Handle() override {
    return std::static_pointer_cast<Connection>(shared_from_this());
  }

  bool closed() const override { return closed_ || draining_; }

  Status Push(std::string_view kind, nlohmann::json data) override {
    if (draining_) {
      return Status::Unavailable(
          fmt::format("connection {} is closing: server shutting down", id_));
    }
    return Enqueue(ToText(Event(kind, std::move(data))));
  }

  // Reads no more requests, lets those read be answered, then closes with 1001.
  void Shutdown() override {
    draining_ = true;
    asio::post(strand_, [self = shared_from_this()] {
      self->shutting_down_ = true;
      self->FinishShutdown();
    });
  }

  void Abort() override {
    asio::post(strand_, [self = shared_from_this()] {
      boost::system::error_code ignored;
      beast::get_lowest_layer(self->ws_).socket().shutdown(tcp::socket::shutdown_both, ignored);
      beast::get_lowest_layer(self->ws_).close();
    });
  }

  // Checks the subprotocol and completes the handshake, or answers the upgrade with an
  // HTTP error when `refusal` is not OK or the subprotocol is wrong.
  void Run(HttpMessage upgrade, Status refusal) {
    upgrade_ = std::move(upgrade);
    asio::dispatch(strand_, [self = shared_from_this(), refusal] { self->Accept(refusal); });
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
    // The handshake within io_timeout (the close handshake is cut at close_timeout by Close);
    // a silent peer is pinged at half of websocket_idle_timeout and dropped at the whole
    // (Beast's stream timeout).
    ws_.set_option(websocket::stream_base::timeout{
        core_.limits.io_timeout, core_.limits.websocket_idle_timeout, /*keep_alive_pings=*/true});
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
      self->MaybeRead();
      if (self->deferred_close_) {
        auto [code, reason] = *std::exchange(self->deferred_close_, std::nullopt);
        self->Close(code, reason);
      } else if (self->shutting_down_) {
        self->FinishShutdown();
      }
    });
  }

  void Refuse(HttpReply reply) {
    closed_ = true;
    reply.keep_alive(false);
    reply.prepare_payload();
    refusal_ = std::make_unique<HttpReply>(std::move(reply));
    beast::get_lowest_layer(ws_).expires_after(core_.limits.io_timeout);
    http::async_write(
        ws_.next_layer(), *refusal_, [self = shared_from_this()](beast::error_code, size_t) {
          beast::error_code ignored;
          beast::get_lowest_layer(self->ws_).socket().shutdown(tcp::socket::shutdown_both, ignored);
        });
  }

  // ---- Reading ------------------------------------------------------------------------------

  // Starts the next read unless one is pending, the connection is closing, or requests worth
  // max_inbound_bytes wait for the handler (then Done starts it).
  void MaybeRead() {
    if (reading_ || closing_ || closed_ || shutting_down_) return;
    if (inbound_bytes_ >= core_.limits.max_inbound_bytes) return;
    reading_ = true;
    ws_.async_read_some(asio::buffer(chunk_),
                        [self = shared_from_this()](beast::error_code ec, size_t bytes) {
                          self->OnRead(ec, bytes);
                        });
  }

  void OnRead(beast::error_code ec, size_t bytes) {
    reading_ = false;
    if (ec) {
      closed_ = true;  // the client closed, the connection broke, timed out, or Close() finished
      close_timer_.cancel();
      ReportDisconnect();
      return;
    }
    if (!oversized_) {
      if (message_.size() + bytes > core_.limits.max_request_bytes) {
        oversized_ = true;
        std::string().swap(message_);
      } else {
        message_.append(chunk_.data(), bytes);
      }
    }
    if (ws_.is_message_done()) {
      if (oversized_) {
        Submit("", Status::LimitExceeded(
                       fmt::format("message exceeds max_request_bytes ({} bytes) and was discarded",
                                   core_.limits.max_request_bytes)));
      } else if (!ws_.got_text()) {
        Submit("", Status::InvalidArgument("binary messages are not accepted; send JSON text"));
      } else {
        Submit(std::exchange(message_, std::string()), Status::Ok());
      }
      message_.clear();
      oversized_ = false;
    }
    MaybeRead();
  }

  // A request read and not yet answered: its text, or the refusal to answer instead.
  struct Pending {
    std::string frame;
    Status refusal;
    uint64_t cost = 0;  // charged to max_inbound_bytes until answered
  };

  // Strand. Queues the request `frame` (or, when `refusal` is an error, an uncorrelated error
  // response) behind the earlier ones. One request of a connection runs at a time, in arrival
  // order; the next starts once it is answered. An asynchronous op answers later, from any
  // thread, and holds no handler thread meanwhile.
  void Submit(std::string frame, Status refusal) {
    uint64_t cost = frame.size() + ServerLimits::kInboundMessageOverhead;
    inbound_bytes_ += cost;
    ++in_flight_;
    bool start = false;
    {
      MutexLock lock(requests_mu_);
      pending_.push_back(Pending{std::move(frame), std::move(refusal), cost});
      start = !running_;
      running_ = true;
    }
    if (start) asio::post(handler_strand_, [self = shared_from_this()] { self->Drain(); });
  }

  // Requests one Drain runs before it gives its handler thread back to other connections.
  static constexpr int kDrainBatch = 16;

  // Handler strand. Runs the pending requests one after the other on this thread while they
  // answer at once (a burst is served by one thread's heap, as a strand would), up to
  // kDrainBatch before it lets other connections have the thread; stops at one that waits,
  // whose answer drains on. With none left, reports a disconnect that is due.
  void Drain() {
    for (int ran = 0;; ++ran) {
      if (ran == kDrainBatch) {
        asio::post(handler_strand_, [self = shared_from_this()] { self->Drain(); });
        return;
      }
      std::optional<Pending> request;
      bool report = false;
      {
        MutexLock lock(requests_mu_);
        if (pending_.empty()) {
          running_ = false;
          report = std::exchange(disconnect_due_, false);
        } else {
          request = std::move(pending_.front());
          pending_.pop_front();
        }
      }
      if (!request) {
        if (report) ReportDisconnectNow();
        return;
      }
      if (!Respond(std::move(*request))) return;
    }
  }

  // Handler strand: runs one request. True when it is answered already; false when an
  // asynchronous op answers later. The answer goes through the OwedReply, which Stop
  // abandons, so an answer after the server stopped goes nowhere.
  bool Respond(Pending request) {
    // Past the shutdown deadline the connection is closed: nothing is run or answered.
    if (core_.abandoning()) {
      Finish(request.cost, std::nullopt);
      return true;
    }
    if (!request.refusal.ok()) {
      Finish(request.cost, ToText(ErrorResponse(nullptr, request.refusal)));
      return true;
    }
    if (core_.stopping()) {
      // Read, but not started before the server began stopping: refused, never run.
      nlohmann::json id;
      (void)ParseRequest(request.frame, &id);
      Finish(request.cost,
             ToText(ErrorResponse(id, Status::Unavailable("server is shutting down; the request "
                                                          "was not run"))));
      return true;
    }
    // kRunning -> kAnswered (answered during HandleFrame) or kWaiting (HandleFrame returned
    // first; the answer then drains on).
    enum Progress : int { kRunning, kAnswered, kWaiting };
    auto progress = std::make_shared<std::atomic<int>>(kRunning);
    auto owed = std::make_shared<OwedReply>(core_.NextId(), &core_, shared_from_this());
    core_.Owe(owed);
    core_.options.dispatcher.HandleFrame(
        request.frame, *this, [owed, progress, cost = request.cost](std::string text) {
          TakenReply taken(*owed);
          if (!taken) return;  // the server stopped meanwhile: nobody to answer
          auto self = std::static_pointer_cast<WsSession>(taken.session());
          self->Finish(cost, std::move(text));
          if (progress->exchange(kAnswered) == kWaiting) {
            asio::post(self->handler_strand_, [self] { self->Drain(); });
          }
        });
    return progress->exchange(kWaiting) == kAnswered;
  }

  // Any thread: queues the response (if any); the request's inbound bytes are released on the
  // connection's strand.
  void Finish(uint64_t cost, std::optional<std::string> response) {
    if (response) (void)Enqueue(std::move(*response));
    asio::post(strand_, [self = shared_from_this(), cost] { self->Done(cost); });
  }

  // Strand. A request submitted earlier was answered: read on if that makes room.
  void Done(uint64_t cost) {
    inbound_bytes_ -= cost;
    --in_flight_;
    MaybeRead();
    FinishShutdown();
  }

  // Strand. Reading ended: ServerOptions::on_disconnect is due once every request read has
  // been answered (Drain reports it then).
  void ReportDisconnect() {
    {
      MutexLock lock(requests_mu_);
      if (running_) {
        disconnect_due_ = true;
        return;
      }
    }
    asio::post(handler_strand_, [self = shared_from_this()] { self->ReportDisconnectNow(); });
  }

  // Handler strand: calls on_disconnect once.
  void ReportDisconnectNow() {
    if (core_.options.on_disconnect && !disconnect_reported_.exchange(true)) {
      core_.options.on_disconnect(id_);
    }
  }

  // While shutting down: once every request read is answered and written, close with 1001.
  void FinishShutdown() {
    if (!shutting_down_ || in_flight_ > 0 || writing_ || !outbox_.empty()) return;
    Close(websocket::close_code::going_away, "server shutting down");
  }

  // ---- Writing (Enqueue: any thread; the rest: the connection's strand) ---------------------

  Status Enqueue(std::string text) {
    if (closed_) return Status::Unavailable(fmt::format("connection {} is closed", id_));
    uint64_t cost = Cost(text);
    uint64_t max = core_.limits.max_outgoing_bytes;
    uint64_t before = queued_bytes_.fetch_add(cost);
    if (before != 0 && before + cost > max) {
      queued_bytes_.fetch_sub(cost);
      std::string reason = fmt::format("outgoing queue full (max_outgoing_bytes = {})", max);
      asio::post(strand_, [self = shared_from_this(), reason] {
        self->Close(websocket::close_code::policy_error, reason);
      });
      return Status::LimitExceeded(fmt::format(
          "connection {}: {}; the client is not reading and is being closed", id_, reason));
    }
    asio::post(strand_, [self = shared_from_this(), text = std::move(text), cost]() mutable {
      if (self->closing_) {
        self->queued_bytes_.fetch_sub(cost);
        return;
      }
      self->outbox_.push_back(std::move(text));
      if (!self->writing_) self->WriteNext();
    });
    return Status::Ok();
  }

  static uint64_t Cost(const std::string& text) {
    return text.size() + ServerLimits::kOutgoingMessageOverhead;
  }

  void DropOutbox() {
    for (const std::string& text : outbox_) queued_bytes_.fetch_sub(Cost(text));
    outbox_.clear();
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
    queued_bytes_.fetch_sub(Cost(outbox_.front()));
    outbox_.pop_front();
    if (ec || closing_) {
      closed_ = true;
      DropOutbox();
      return;
    }
    if (!outbox_.empty()) return WriteNext();
    FinishShutdown();
  }

  // Starts the close handshake with `code` and `reason`; the socket is closed outright when
  // the handshake has not finished within close_timeout (a client that does not read).
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
    if (!writing_) DropOutbox();
    ws_.async_close(
        websocket::close_reason(code, reason),
        [self = shared_from_this()](beast::error_code) { self->close_timer_.cancel(); });
    close_timer_.expires_after(core_.limits.close_timeout);
    close_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (!ec) beast::get_lowest_layer(self->ws_).close();
    });
  }

  TrackedSlot tracked_;  // first: untracked after everything else is gone
  ServerCore& core_;
  const uint64_t id_;

  // ---- Owned by the connection's strand -----------------------------------------------------
  websocket::stream<beast::tcp_stream> ws_;
  const websocket::stream<beast::tcp_stream>::executor_type strand_;  // constant
  asio::steady_timer close_timer_;
  HttpMessage upgrade_;
  std::unique_ptr<HttpReply> refusal_;
  std::array<char, kReadChunkBytes> chunk_;
  std::string message_;         // the message being read (empty while oversized_)
  bool oversized_ = false;      // the message being read passed max_request_bytes
  bool reading_ = false;        // an async_read_some is pending
  uint64_t inbound_bytes_ = 0;  // submitted requests not yet done (max_inbound_bytes)
  uint32_t in_flight_ = 0;      // submitted requests not yet done
  std::deque<std::string> outbox_;
  bool writing_ = false;
  // Close() called before the handshake finished: sent once it does.
  std::optional<std::pair<websocket::close_code, std::string>> deferred_close_;
  bool closing_ = false;
  bool shutting_down_ = false;  // Shutdown: read no more, close once in-flight ones are answered

  // ---- Any thread ---------------------------------------------------------------------------
  std::atomic<bool> closed_{false};
  std::atomic<bool> draining_{false};  // Shutdown was called: Push refuses new events
  // Bytes accepted by Enqueue (text + kOutgoingMessageOverhead each), not yet written or dropped.
  std::atomic<uint64_t> queued_bytes_{0};
  std::atomic<bool> accepted_{false};             // the handshake completed: ops may have run
  std::atomic<bool> disconnect_reported_{false};  // on_disconnect was called
  // Requests between Submit (strand) and Drain (handler strand).
  Mutex requests_mu_;
  std::deque<Pending> pending_ GUARDED_BY(requests_mu_);  // submitted, not yet started
  bool running_ GUARDED_BY(requests_mu_) = false;         // Drain runs, or a started one waits
  bool disconnect_due_ GUARDED_BY(requests_mu_) = false;  // reading ended while running_
  asio::strand<asio::thread_pool::executor_type> handler_strand_;
};

}  // namespace

void StartWebSocketSession(ServerCore& core, uint64_t http_id, beast::tcp_stream stream,
                           HttpMessage upgrade) {
  uint64_t id = core.NextId();
  auto session = std::make_shared<WsSession>(core, id, std::move(stream));
  Status tracked = core.TrackUpgrade(http_id, id, session);
  session->Run(std::move(upgrade), tracked);
}

}  // namespace reef::server::detail
