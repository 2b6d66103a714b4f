// Clients for tests of the server on real loopback sockets: a WebSocket client and a raw HTTP
// client. Every blocking step runs with a deadline, so a broken server fails a test instead of
// hanging it. The Beast code lives in ws_test_client.cc (the reef_test_support library),
// compiled once rather than in every test that uses a client.
//
// Thread ownership: each client belongs to the thread that made it.
#pragma once

#include <boost/beast/core/error.hpp>
#include <boost/beast/websocket/error.hpp>
#include <boost/beast/websocket/rfc6455.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "support/http_test_client.h"

namespace reef::testing {

inline constexpr auto kTimeout = std::chrono::seconds(10);

// A WebSocket client of one server. An operation that does not finish within the client's
// timeout closes the connection, fails with timed_out and adds a test failure.
class WsClient {
 public:
  // Connects to 127.0.0.1:port and upgrades, offering `subprotocol` and sending `token` as a
  // bearer token (each when non-empty) and `headers`; `handshake_error` and `response` tell
  // how it went.
  explicit WsClient(uint16_t port, std::string subprotocol = "reef.v1", std::string token = "",
                    std::chrono::milliseconds timeout = kTimeout,
                    std::vector<std::pair<std::string, std::string>> headers = {});
  ~WsClient();
  WsClient(const WsClient&) = delete;
  WsClient& operator=(const WsClient&) = delete;

  boost::beast::error_code Send(const std::string& text);

  // Sends `text`, giving up after `timeout` without failing the test (the server may have
  // stopped reading); timed_out then, and the connection is closed.
  boost::beast::error_code TrySend(const std::string& text, std::chrono::milliseconds timeout);

  // The next message as JSON (discarded JSON on a read error, with `last_error` set).
  nlohmann::json Receive();

  // Sends `request` and returns the next message.
  nlohmann::json Call(const nlohmann::json& request);

  // Keeps a read pending (which answers the server's pings) for `idle` while sending nothing,
  // then sends `request` and returns the next message.
  nlohmann::json IdleThenCall(std::chrono::milliseconds idle, const nlohmann::json& request);

  boost::beast::websocket::close_reason close_reason() const;
  // The reason text of the server's close frame ("" when none arrived).
  std::string close_text() const;

  boost::beast::error_code handshake_error;
  boost::beast::error_code last_error;
  boost::beast::websocket::response_type response;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// An HTTP client writing raw bytes, for requests a well-behaved client would not send (a head
// without its body, a pipelined second request).
class RawHttpClient {
 public:
  explicit RawHttpClient(uint16_t port);
  ~RawHttpClient();
  RawHttpClient(const RawHttpClient&) = delete;
  RawHttpClient& operator=(const RawHttpClient&) = delete;

  boost::beast::error_code Write(std::string_view bytes);

  // The next response (a body of at most 64 MiB); status 0 when none arrived within `timeout`
  // (no test failure then).
  HttpResult Read(std::chrono::milliseconds timeout = kTimeout);

  // True once the server's kernel acknowledged every byte written (none left in this side's
  // send queue), so the server can see them; false after kTimeout.
  bool WaitDelivered();

  // True when the server closed the connection (end of stream or reset) within `timeout`.
  bool ClosedWithin(std::chrono::milliseconds timeout);

  boost::beast::error_code connect_error;
  bool keep_alive = false;  // of the last response read

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace reef::testing
