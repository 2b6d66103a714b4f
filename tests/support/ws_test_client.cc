#include "support/ws_test_client.h"

#include <gtest/gtest.h>
#include <sys/ioctl.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <optional>
#include <thread>
#include <utility>

namespace reef::testing {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;

// Runs one asynchronous client operation to completion or to `timeout` (then the socket is
// closed and the operation fails with timed_out; a test failure unless `timeout_expected`).
class Driver {
 public:
  template <typename Start>
  beast::error_code Await(beast::tcp_stream& socket, Start&& start,
                          std::chrono::milliseconds timeout, bool timeout_expected = false) {
    std::optional<beast::error_code> done;
    start([&done](beast::error_code ec, auto&&...) { done = ec; });
    ioc_.restart();
    ioc_.run_for(timeout);
    if (!done) {
      socket.close();
      ioc_.restart();
      ioc_.run();
      if (!timeout_expected) ADD_FAILURE() << "client operation timed out";
      return asio::error::timed_out;
    }
    return *done;
  }
  asio::io_context& ioc() { return ioc_; }

 private:
  asio::io_context ioc_;
};

}  // namespace

struct WsClient::Impl {
  explicit Impl(std::chrono::milliseconds t) : ws(driver.ioc()), timeout(t) {}

  template <typename Start>
  beast::error_code Await(Start&& start) {
    return driver.Await(beast::get_lowest_layer(ws), std::forward<Start>(start), timeout);
  }

  Driver driver;
  websocket::stream<beast::tcp_stream> ws;
  std::chrono::milliseconds timeout;
};

WsClient::WsClient(uint16_t port, std::string subprotocol, std::string token,
                   std::chrono::milliseconds timeout,
                   std::vector<std::pair<std::string, std::string>> headers)
    : impl_(std::make_unique<Impl>(timeout)) {
  auto& ws = impl_->ws;
  asio::ip::tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), port);
  handshake_error = impl_->Await(
      [&](auto handler) { beast::get_lowest_layer(ws).async_connect(endpoint, handler); });
  if (handshake_error) return;
  ws.set_option(websocket::stream_base::decorator([=](websocket::request_type& request) {
    if (!subprotocol.empty()) request.set(beast::http::field::sec_websocket_protocol, subprotocol);
    if (!token.empty()) request.set(beast::http::field::authorization, "Bearer " + token);
    for (const auto& [name, value] : headers) request.set(name, value);
  }));
  handshake_error =
      impl_->Await([&](auto handler) { ws.async_handshake(response, "127.0.0.1", "/", handler); });
}

WsClient::~WsClient() = default;

beast::error_code WsClient::Send(const std::string& text) {
  impl_->ws.text(true);
  return impl_->Await([&](auto handler) { impl_->ws.async_write(asio::buffer(text), handler); });
}

beast::error_code WsClient::TrySend(const std::string& text, std::chrono::milliseconds timeout) {
  impl_->ws.text(true);
  return impl_->driver.Await(
      beast::get_lowest_layer(impl_->ws),
      [&](auto handler) { impl_->ws.async_write(asio::buffer(text), handler); }, timeout, true);
}

nlohmann::json WsClient::Receive() {
  beast::flat_buffer buffer;
  last_error = impl_->Await([&](auto handler) { impl_->ws.async_read(buffer, handler); });
  if (last_error) return nlohmann::json::value_t::discarded;
  return nlohmann::json::parse(beast::buffers_to_string(buffer.data()), nullptr, false);
}

nlohmann::json WsClient::Call(const nlohmann::json& request) {
  EXPECT_FALSE(Send(request.dump()));
  return Receive();
}

nlohmann::json WsClient::IdleThenCall(std::chrono::milliseconds idle,
                                      const nlohmann::json& request) {
  auto& ws = impl_->ws;
  auto& ioc = impl_->driver.ioc();
  beast::flat_buffer buffer;
  std::optional<beast::error_code> read;
  ws.async_read(buffer, [&read](beast::error_code ec, size_t) { read = ec; });
  ioc.restart();
  ioc.run_for(idle);
  if (read) {
    last_error = *read;
    ADD_FAILURE() << "the connection ended while idle: " << read->message();
    return nlohmann::json::value_t::discarded;
  }
  std::string text = request.dump();
  ws.text(true);
  ws.async_write(asio::buffer(text), [](beast::error_code, size_t) {});
  ioc.restart();
  ioc.run_for(impl_->timeout);
  if (!read || *read) {
    last_error = read.value_or(asio::error::timed_out);
    ADD_FAILURE() << "no response after the idle time: " << last_error.message();
    return nlohmann::json::value_t::discarded;
  }
  return nlohmann::json::parse(beast::buffers_to_string(buffer.data()), nullptr, false);
}

websocket::close_reason WsClient::close_reason() const {
  return impl_->ws.reason();
}

std::string WsClient::close_text() const {
  const auto& reason = impl_->ws.reason().reason;
  return std::string(reason.data(), reason.size());
}

struct RawHttpClient::Impl {
  Impl() : stream(driver.ioc()) {}

  template <typename Start>
  beast::error_code Await(Start&& start) {
    return driver.Await(stream, std::forward<Start>(start), kTimeout);
  }

  Driver driver;
  beast::tcp_stream stream;
  beast::flat_buffer buffer;
};

RawHttpClient::RawHttpClient(uint16_t port) : impl_(std::make_unique<Impl>()) {
  asio::ip::tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), port);
  connect_error =
      impl_->Await([&](auto handler) { impl_->stream.async_connect(endpoint, handler); });
}

RawHttpClient::~RawHttpClient() = default;

beast::error_code RawHttpClient::Write(std::string_view bytes) {
  return impl_->Await(
      [&](auto handler) { asio::async_write(impl_->stream, asio::buffer(bytes), handler); });
}

HttpResult RawHttpClient::Read(std::chrono::milliseconds timeout) {
  namespace http = beast::http;
  HttpResult out;
  http::response_parser<http::string_body> parser;
  parser.body_limit(64u << 20);
  out.ec = impl_->driver.Await(
      impl_->stream,
      [&](auto handler) { http::async_read(impl_->stream, impl_->buffer, parser, handler); },
      timeout, true);
  if (parser.is_header_done()) out.status = parser.get().result_int();
  out.text = parser.get().body();
  out.body = nlohmann::json::parse(out.text, nullptr, false);
  keep_alive = parser.get().keep_alive();
  return out;
}

bool RawHttpClient::WaitDelivered() {
  auto deadline = std::chrono::steady_clock::now() + kTimeout;
  while (std::chrono::steady_clock::now() < deadline) {
    int queued = 0;
    if (::ioctl(impl_->stream.socket().native_handle(), TIOCOUTQ, &queued) != 0) return false;
    if (queued == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

bool RawHttpClient::ClosedWithin(std::chrono::milliseconds timeout) {
  char byte = 0;
  beast::error_code ec = impl_->driver.Await(
      impl_->stream,
      [&](auto handler) { impl_->stream.async_read_some(asio::buffer(&byte, 1), handler); },
      timeout, true);
  return ec && ec != asio::error::timed_out;
}

}  // namespace reef::testing
