// ServerLimits: every size, count and timeout the listener enforces, in one struct of named
// constants with their defaults (docs/protocol.md "Limits" and docs/operations.md list them for
// users). What happens when each is reached is stated next to it.
//
// Thread ownership: a plain value; the server copies it at Start and never changes it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace reef::server {

struct ServerLimits {
  // ---- Sizes ----------------------------------------------------------------------------------
  // Largest HTTP request body (unless its route sets HttpRoute::max_body_bytes) and largest
  // WebSocket message, in bytes. HTTP: 413 from the Content-Length header, before the body is
  // read. WebSocket: the message is discarded as it streams in and answered with an error.
  size_t max_request_bytes = 1 << 20;
  // Largest HTTP request head (request line and header fields), in bytes: 413.
  size_t max_header_bytes = 16 << 10;
  // HTTP request bodies of kUnchargedBodyBytes or more being parsed and handled at once,
  // server-wide, in bytes. A request whose body does not fit waits, read but not handled,
  // until requests in flight are answered (no thread waits; arrival order is kept). Handling
  // a JSON append takes 20-30x its body (measured: 4.2 MB of 40,000 events peaks at 85 MB,
  // 4.3 MB of 166,000 tiny events at 125 MB), so this bounds the memory of many large
  // requests at once (docs/operations.md). One body larger than the whole budget runs when
  // nothing else holds any. Bodies are charged once they have arrived, so a client that
  // announces a large body and stalls holds none of it.
  uint64_t max_concurrent_body_bytes = 8 << 20;

  // ---- Connections ----------------------------------------------------------------------------
  // Open TCP connections of every kind. A new connection at the cap evicts the oldest
  // connection that is waiting for a request head (idle or not yet authenticated: it has
  // nothing in flight); when none is, the new connection gets 503.
  uint32_t max_connections = 256;
  // WebSocket sessions among max_connections: an upgrade past it gets 503. The slots above it
  // stay for HTTP, so idle WebSockets can never lock out a fresh `GET /health`.
  uint32_t max_websockets = 192;

  // ---- WebSocket queues (per connection) ------------------------------------------------------
  // Responses and events queued for one client and not yet written, in bytes (each message
  // counts its size plus kOutgoingMessageOverhead). Past it the client is closed with close code
  // 1008 and a reason naming this limit: a client that stops reading is disconnected, not
  // buffered without bound. One message larger than the bound is accepted when nothing else is
  // queued.
  uint64_t max_outgoing_bytes = 16 << 20;
  // Requests read from one client and not yet handled, in bytes (each counts its size plus
  // kInboundMessageOverhead). While it is reached the server reads nothing more from that client
  // (TCP backpressure); reading resumes as requests are handled.
  uint64_t max_inbound_bytes = 4 << 20;

  // ---- Timeouts -------------------------------------------------------------------------------
  // A connection must deliver a complete HTTP request head (or WebSocket upgrade) within this
  // time: from accept, and on a keep-alive connection from its previous reply (so it is also the
  // idle timeout of HTTP keep-alive). Then the connection is closed.
  std::chrono::milliseconds header_timeout{10'000};
  // Longest wait for the rest of a transfer once it started: an HTTP request body, writing a
  // reply, the WebSocket handshake answer. Then the connection is closed.
  std::chrono::milliseconds io_timeout{10'000};
  // A WebSocket client from which nothing arrives (no message, no pong) for this long is
  // closed. The server sends a ping when half of it has passed, which every WebSocket client
  // answers, so only dead or stuck peers time out.
  std::chrono::milliseconds websocket_idle_timeout{60'000};
  // Longest wait for a WebSocket client to answer the server's close frame (on shutdown, or
  // after closing it for a limit); then its socket is closed.
  std::chrono::milliseconds close_timeout{2'000};
  // Longest wait in Server::Stop for requests in flight to be answered (HTTP and WebSocket)
  // and for WebSocket close handshakes; then every connection still open is closed.
  std::chrono::milliseconds shutdown_timeout{5'000};
  // First pause of the accept loop after accept() fails for want of resources (file
  // descriptors, memory); it doubles per failure up to accept_backoff_max.
  std::chrono::milliseconds accept_backoff_initial{10};
  std::chrono::milliseconds accept_backoff_max{1'000};

  // Bytes charged per queued message on top of its text (its allocations and queue entry).
  static constexpr uint64_t kOutgoingMessageOverhead = 256;
  static constexpr uint64_t kInboundMessageOverhead = 256;
  // Bodies smaller than this are not charged to max_concurrent_body_bytes (so small requests
  // never wait behind large ones).
  static constexpr uint64_t kUnchargedBodyBytes = 64 << 10;
  // After handling a body at least this large, freed memory goes back to the system
  // (malloc_trim): its parse leaves tens of MB free in the handler thread's malloc arena.
  static constexpr uint64_t kTrimAfterBodyBytes = 1 << 20;
};

}  // namespace reef::server
