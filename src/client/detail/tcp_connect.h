// The TCP part shared by the WebSocket client (client.cc) and the HTTP client
// (http_client.cc): driving a private io_context on the caller's thread, and resolving and
// connecting a stream before a deadline. Not a public header.
//
// Thread ownership: the caller's thread owns the io_context and the stream.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string_view>

#include "core/status.h"

namespace reef::client::detail {

using Clock = std::chrono::steady_clock;

// Runs `ioc` on this thread until done() holds or `deadline` passes (Clock::time_point::max()
// = no deadline). Returns done(); false as well when `ioc` ran out of work first.
bool RunIoUntil(boost::asio::io_context& ioc, Clock::time_point deadline,
                const std::function<bool()>& done);

// Resolves `host` and connects `stream` (on `ioc`) to it before `deadline`; the stream's
// expiry is left at `deadline`. `address` ("HOST:PORT") names the server in messages.
// Errors: Unavailable "cannot connect to ADDRESS: WHY — is `reef serve` running?" (WHY: the
// name did not resolve, resolving or connecting timed out, the connection was refused).
Status ConnectTcp(boost::asio::io_context& ioc, boost::beast::tcp_stream& stream,
                  std::string_view address, std::string_view host, uint16_t port,
                  Clock::time_point deadline);

}  // namespace reef::client::detail
