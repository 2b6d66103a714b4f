// Client: one WebSocket connection to a Reef server speaking the reef.v1 protocol
// (docs/protocol.md). It sends requests with correlation ids and waits for their responses,
// and keeps the events the server pushes in a bounded queue until NextEvent takes them.
//
// The client never retries: a failed connect or a lost connection is reported once, with the
// address and the reason, and the caller decides what to do.
//
// Thread ownership: caller synchronizes. A Client is used by one thread at a time; it has no
// threads of its own (network I/O runs inside Call, NextEvent and Close, on the caller's
// thread).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace reef::client {

// The address clients use when neither --connect nor REEF_CONNECT names one.
inline constexpr std::string_view kDefaultAddress = "127.0.0.1:7433";

struct ClientOptions {
  // "HOST:PORT": an IPv4 literal, "[IPv6 literal]" or a host name (e.g. "localhost").
  std::string address = std::string(kDefaultAddress);
  // Sent as `Authorization: Bearer <token>` when set and non-empty.
  std::optional<std::string> auth_token;
  // Longest wait for name resolution, TCP connect and the WebSocket handshake together.
  std::chrono::milliseconds connect_timeout{5'000};
  // Largest message accepted from the server, in bytes; a larger one ends the connection.
  std::size_t max_message_bytes = 64u << 20;
  // Largest request sent, in bytes (the server's limit, docs/protocol.md "Limits").
  std::size_t max_request_bytes = 1u << 20;
  // Events held until NextEvent takes them. When the queue is full the next event is not
  // queued and NextEvent reports LimitExceeded instead of skipping entries silently.
  std::size_t max_queued_events = 4096;
  // Calls that timed out whose responses may still arrive (they are dropped on arrival).
  // Past this many the connection is considered broken.
  std::size_t max_abandoned_calls = 1024;
};

// A message the server pushed without a request: {"v":1,"event":kind,"data":data}.
struct ClientEvent {
  std::string kind;  // "log", "changed", "subscription-failed", ...
  nlohmann::json data;
};

class Client {
 public:
  // Resolves, connects and upgrades to WebSocket offering subprotocol reef.v1, all within
  // options.connect_timeout.
  // Errors: InvalidArgument for an unparsable address; Unavailable when the server cannot be
  // reached or refuses the upgrade ("cannot connect to 127.0.0.1:7433: Connection refused —
  // is `reef serve` running?"); FailedPrecondition whose message starts with
  // kUnauthenticatedPrefix when the server wants a token that was not given or was wrong
  // (HTTP 401; IsUnauthenticated tells it apart).
  static Result<std::unique_ptr<Client>> Connect(ClientOptions options);

  // Closes the connection (as Close) if it is still open.
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Sends {"v":1,"id":<fresh id>,"op":op,"args":args} and waits at most `timeout` for the
  // response with that id. Events arriving meanwhile are queued for NextEvent.
  // Returns the response's "result".
  // Errors: the server's error (its code and message, e.g. NotFound "unknown actor ...");
  // InvalidArgument when `args` is not an object; LimitExceeded when the request is larger
  // than max_request_bytes (nothing is sent); Unavailable when the connection is closed or
  // breaks, or when no response came within `timeout` (a late response is dropped).
  Result<nlohmann::json> Call(std::string_view op, nlohmann::json args,
                              std::chrono::milliseconds timeout);

  // The oldest queued event, waiting at most `timeout` (0 = only what is already here) for
  // one to arrive. Returns nullopt when none arrived in time.
  // Errors: LimitExceeded when events were dropped because the queue was full (reported
  // once, after the queued ones were taken); Unavailable when the connection is closed.
  Result<std::optional<ClientEvent>> NextEvent(std::chrono::milliseconds timeout);

  // Sends a WebSocket close (code 1000) and waits at most `timeout` for the server's close.
  // Idempotent; the client cannot be used afterwards. Errors: Unavailable when the close
  // handshake did not finish (the socket is closed anyway).
  Status Close(std::chrono::milliseconds timeout = std::chrono::milliseconds(2'000));

  // True while the connection is open and has not broken (a false here stays false).
  bool connected() const;

  // Why the connection is unusable: Ok while connected; else the first reason, e.g.
  // Unavailable "127.0.0.1:7433 closed the connection (code 1001: server shutting down)".
  // Only what Call, NextEvent or Close have already seen (it does no I/O).
  Status failure() const;

  // The address given at Connect, "127.0.0.1:7433".
  const std::string& address() const;

  class Impl;

 private:
  explicit Client(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// How a refused token's message starts: "unauthenticated: " (the code of the server's HTTP 401
// body). reef::Code has no unauthenticated code, so the refusal is a FailedPrecondition.
inline constexpr std::string_view kUnauthenticatedPrefix = "unauthenticated: ";

// True for Connect's refusal of a missing or wrong token (see kUnauthenticatedPrefix).
bool IsUnauthenticated(const Status& status);

// Splits "HOST:PORT" into host and port. HOST may be "[::1]" (brackets are removed), an IPv4
// literal or a name. Errors: InvalidArgument naming what is wrong (no port, port not a
// number in 1..65535, empty host).
Result<std::pair<std::string, uint16_t>> SplitAddress(std::string_view address);

}  // namespace reef::client
