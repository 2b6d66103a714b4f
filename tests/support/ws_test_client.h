// Clients for tests of the server on real loopback sockets (Beast): a WebSocket client and a
// raw HTTP client. Every blocking step runs with a deadline (kTimeout), so a broken server
// fails a test instead of hanging it.
//
// Thread ownership: each client belongs to the thread that made it.
#pragma once

#include <gtest/gtest.h>
#include <sys/ioctl.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "support/http_test_client.h"

namespace reef::testing {

inline constexpr auto kTimeout = std::chrono::seconds(10);

// Runs one asynchronous client operation to completion or to `timeout` (then the socket is
// closed and the operation fails with timed_out; a test failure unless `timeout_expected`).
class Driver {
 public:
  template <typename Start>
  boost::beast::error_code Await(boost::beast::tcp_stream& socket, Start&& start,
                                 std::chrono::milliseconds timeout = kTimeout,
                                 bool timeout_expected = false) {
    std::optional<boost::beast::error_code> done;
    start([&done](boost::beast::error_code ec, auto&&...) { done = ec; });
    ioc_.restart();
    ioc_.run_for(timeout);
    if (!done) {
      socket.close();
      ioc_.restart();
      ioc_.run();
      if (!timeout_expected) ADD_FAILURE() << "client operation timed out";
      return boost::asio::error::timed_out;
    }
    return *done;
  }
  boost::asio::io_context& ioc() { return ioc_; }

 private:
  boost::asio::io_context ioc_;
};

// A WebSocket client of one server.
class WsClient {
 public:
  // Connects and upgrades; `handshake_error` and `response` tell how the upgrade went.
  WsClient(uint16_t port, std::string subprotocol = "reef.v1", std::string token = "")
      : ws_(driver_.ioc()) {
    boost::asio::ip::tcp::endpoint endpoint(boost::asio::ip::make_address("127.0.0.1"), port);
    handshake_error = Await([&](auto handler) {
      boost::beast::get_lowest_layer(ws_).async_connect(endpoint, handler);
    });
    if (handshake_error) return;
    ws_.set_option(boost::beast::websocket::stream_base::decorator(
        [=](boost::beast::websocket::request_type& request) {
          if (!subprotocol.empty())
            request.set(boost::beast::http::field::sec_websocket_protocol, subprotocol);
          if (!token.empty())
            request.set(boost::beast::http::field::authorization, "Bearer " + token);
        }));
    handshake_error =
        Await([&](auto handler) { ws_.async_handshake(response, "127.0.0.1", "/", handler); });
  }

  boost::beast::error_code Send(const std::string& text) {
    ws_.text(true);
    return Await([&](auto handler) { ws_.async_write(boost::asio::buffer(text), handler); });
  }

  // Sends `text`, giving up after `timeout` without failing the test (the server may have
  // stopped reading); timed_out then, and the connection is closed.
  boost::beast::error_code TrySend(const std::string& text, std::chrono::milliseconds timeout) {
    ws_.text(true);
    return driver_.Await(
        boost::beast::get_lowest_layer(ws_),
        [&](auto handler) { ws_.async_write(boost::asio::buffer(text), handler); }, timeout, true);
  }

  // The next message as JSON (discarded JSON on a read error, with `last_error` set).
  nlohmann::json Receive() {
    boost::beast::flat_buffer buffer;
    last_error = Await([&](auto handler) { ws_.async_read(buffer, handler); });
    if (last_error) return nlohmann::json::value_t::discarded;
    return nlohmann::json::parse(boost::beast::buffers_to_string(buffer.data()), nullptr, false);
  }

  // Sends `request` and returns the next message.
  nlohmann::json Call(const nlohmann::json& request) {
    EXPECT_FALSE(Send(request.dump()));
    return Receive();
  }

  // Keeps a read pending (which answers the server's pings) for `idle` while sending nothing,
  // then sends `request` and returns the next message.
  nlohmann::json IdleThenCall(std::chrono::milliseconds idle, const nlohmann::json& request) {
    boost::beast::flat_buffer buffer;
    std::optional<boost::beast::error_code> read;
    ws_.async_read(buffer, [&read](boost::beast::error_code ec, size_t) { read = ec; });
    driver_.ioc().restart();
    driver_.ioc().run_for(idle);
    if (read) {
      last_error = *read;
      ADD_FAILURE() << "the connection ended while idle: " << read->message();
      return nlohmann::json::value_t::discarded;
    }
    std::string text = request.dump();
    ws_.text(true);
    ws_.async_write(boost::asio::buffer(text), [](boost::beast::error_code, size_t) {});
    driver_.ioc().restart();
    driver_.ioc().run_for(kTimeout);
    if (!read || *read) {
      last_error = read.value_or(boost::asio::error::timed_out);
      ADD_FAILURE() << "no response after the idle time: " << last_error.message();
      return nlohmann::json::value_t::discarded;
    }
    return nlohmann::json::parse(boost::beast::buffers_to_string(buffer.data()), nullptr, false);
  }

  boost::beast::websocket::close_reason close_reason() const { return ws_.reason(); }
  // The reason text of the server's close frame ("" when none arrived).
  std::string close_text() const {
    return std::string(ws_.reason().reason.data(), ws_.reason().reason.size());
  }

  boost::beast::error_code handshake_error;
  boost::beast::error_code last_error;
  boost::beast::websocket::response_type response;

 private:
  template <typename Start>
  boost::beast::error_code Await(Start&& start) {
    return driver_.Await(boost::beast::get_lowest_layer(ws_), std::forward<Start>(start));
  }

  Driver driver_;
  boost::beast::websocket::stream<boost::beast::tcp_stream> ws_;
};

// An HTTP client writing raw bytes, for requests a well-behaved client would not send (a head
// without its body, a pipelined second request).
class RawHttpClient {
 public:
  explicit RawHttpClient(uint16_t port) : stream_(driver_.ioc()) {
    boost::asio::ip::tcp::endpoint endpoint(boost::asio::ip::make_address("127.0.0.1"), port);
    connect_error = Await([&](auto handler) { stream_.async_connect(endpoint, handler); });
  }

  boost::beast::error_code Write(std::string_view bytes) {
    return Await([&](auto handler) {
      boost::asio::async_write(stream_, boost::asio::buffer(bytes), handler);
    });
  }

  // The next response; status 0 when none arrived within `timeout` (no test failure then).
  HttpResult Read(std::chrono::milliseconds timeout = kTimeout) {
    HttpResult out;
    boost::beast::http::response_parser<boost::beast::http::string_body> parser;
    parser.body_limit(64u << 20);
    out.ec = driver_.Await(
        stream_,
        [&](auto handler) { boost::beast::http::async_read(stream_, buffer_, parser, handler); },
        timeout, true);
    if (parser.is_header_done()) out.status = parser.get().result_int();
    out.text = parser.get().body();
    out.body = nlohmann::json::parse(out.text, nullptr, false);
    keep_alive = parser.get().keep_alive();
    return out;
  }

  // True once the server's kernel acknowledged every byte written (none left in this side's
  // send queue), so the server can see them; false after kTimeout.
  bool WaitDelivered() {
    auto deadline = std::chrono::steady_clock::now() + kTimeout;
    while (std::chrono::steady_clock::now() < deadline) {
      int queued = 0;
      if (::ioctl(stream_.socket().native_handle(), TIOCOUTQ, &queued) != 0) return false;
      if (queued == 0) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return false;
  }

  // True when the server closed the connection (end of stream or reset) within `timeout`.
  bool ClosedWithin(std::chrono::milliseconds timeout) {
    char byte = 0;
    boost::beast::error_code ec = driver_.Await(
        stream_,
        [&](auto handler) { stream_.async_read_some(boost::asio::buffer(&byte, 1), handler); },
        timeout, true);
    return ec && ec != boost::asio::error::timed_out;
  }

  boost::beast::error_code connect_error;
  bool keep_alive = false;  // of the last response read

 private:
  template <typename Start>
  boost::beast::error_code Await(Start&& start) {
    return driver_.Await(stream_, std::forward<Start>(start));
  }

  Driver driver_;
  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
};

}  // namespace reef::testing
