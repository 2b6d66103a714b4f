#include "client/detail/tcp_connect.h"

#include <fmt/format.h>

#include <boost/asio/ip/tcp.hpp>
#include <optional>
#include <string>

namespace reef::client::detail {

namespace beast = boost::beast;
using tcp = boost::asio::ip::tcp;

bool RunIoUntil(boost::asio::io_context& ioc, Clock::time_point deadline,
                const std::function<bool()>& done) {
  while (!done()) {
    if (Clock::now() >= deadline) return false;
    if (ioc.stopped()) ioc.restart();
    size_t ran = deadline == Clock::time_point::max() ? ioc.run_one() : ioc.run_one_until(deadline);
    // Nothing left to run: what we wait for cannot happen any more.
    if (ran == 0 && ioc.stopped()) return done();
  }
  return true;
}

Status ConnectTcp(boost::asio::io_context& ioc, beast::tcp_stream& stream,
                  std::string_view address, std::string_view host, uint16_t port,
                  Clock::time_point deadline) {
  auto cannot = [&](std::string_view why) {
    return Status::Unavailable(
        fmt::format("cannot connect to {}: {} — is `reef serve` running?", address, why));
  };
  tcp::resolver resolver(ioc);
  std::optional<beast::error_code> resolved;
  tcp::resolver::results_type endpoints;
  resolver.async_resolve(std::string(host), std::to_string(port),
                         [&](beast::error_code ec, tcp::resolver::results_type results) {
                           resolved = ec;
                           endpoints = std::move(results);
                         });
  if (!RunIoUntil(ioc, deadline, [&] { return resolved.has_value(); })) {
    resolver.cancel();
    RunIoUntil(ioc, Clock::now() + std::chrono::seconds(1), [&] { return resolved.has_value(); });
    return cannot("resolving the host timed out");
  }
  if (*resolved) return cannot(fmt::format("cannot resolve '{}': {}", host, resolved->message()));

  std::optional<beast::error_code> connected;
  stream.expires_at(deadline);
  stream.async_connect(endpoints,
                       [&](beast::error_code ec, const tcp::endpoint&) { connected = ec; });
  RunIoUntil(ioc, Clock::time_point::max(), [&] { return connected.has_value(); });
  if (*connected == beast::error::timeout) return cannot("timed out");
  if (*connected) return cannot(connected->message());
  return Status::Ok();
}

}  // namespace reef::client::detail
