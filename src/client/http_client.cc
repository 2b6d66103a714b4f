// HttpCall: Boost.Beast HTTP/1.1 over one TCP connection per call. Every step runs
// asynchronously on a private io_context, driven on the caller's thread until it finishes or
// the call's deadline passes (tcp_stream's expiry ends a step at the deadline).
#include "client/http_client.h"

#include <fmt/format.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include "client/client.h"
#include "client/detail/tcp_connect.h"
#include "client/json_fields.h"

namespace reef::client {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

// Longest error body text quoted when it is not the server's JSON error shape, in bytes.
constexpr size_t kMaxQuotedBody = 200;

}  // namespace

std::string_view HttpMethodName(HttpMethod method) {
  return method == HttpMethod::kPost ? "POST" : "GET";
}

Result<HttpResponse> HttpCall(const HttpOptions& options, const HttpRequest& request) {
  REEF_ASSIGN_OR_RETURN(auto host_port, SplitAddress(options.address));
  auto [host, port] = host_port;
  Clock::time_point deadline = Clock::now() + options.timeout;
  std::string what = fmt::format("{} {}", HttpMethodName(request.method), request.target);
  auto timed_out = [&] {
    return Status::Unavailable(fmt::format("{} did not answer {} within {} ms", options.address,
                                           what, options.timeout.count()));
  };

  asio::io_context ioc;
  beast::tcp_stream stream(ioc);
  REEF_RETURN_IF_ERROR(detail::ConnectTcp(ioc, stream, options.address, host, port, deadline));

  http::request<http::string_body> message(
      request.method == HttpMethod::kPost ? http::verb::post : http::verb::get, request.target, 11);
  message.set(http::field::host, options.address);
  message.set(http::field::user_agent, "reef-cli");
  message.set(http::field::accept, "application/json");
  if (options.auth_token && !options.auth_token->empty()) {
    message.set(http::field::authorization, "Bearer " + *options.auth_token);
  }
  if (request.method == HttpMethod::kPost) {
    message.set(http::field::content_type, "application/json");
    message.body() = request.body;
  }
  message.keep_alive(false);
  message.prepare_payload();

  std::optional<beast::error_code> written;
  http::async_write(stream, message, [&](beast::error_code ec, size_t) { written = ec; });
  detail::RunIoUntil(ioc, Clock::time_point::max(), [&] { return written.has_value(); });
  if (*written == beast::error::timeout) return timed_out();
  if (*written) {
    return Status::Unavailable(
        fmt::format("sending {} to {} failed: {}", what, options.address, written->message()));
  }

  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(options.max_body_bytes);
  std::optional<beast::error_code> read;
  http::async_read(stream, buffer, parser, [&](beast::error_code ec, size_t) { read = ec; });
  detail::RunIoUntil(ioc, Clock::time_point::max(), [&] { return read.has_value(); });
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  if (*read == beast::error::timeout) return timed_out();
  if (*read == http::error::body_limit) {
    return Status::LimitExceeded(
        fmt::format("the response to {} from {} is larger than {} bytes (max_body_bytes)", what,
                    options.address, options.max_body_bytes));
  }
  if (*read) {
    return Status::Unavailable(fmt::format("reading the response to {} from {} failed: {}", what,
                                           options.address, read->message()));
  }

  http::response<http::string_body> response = parser.release();
  HttpResponse out;
  out.status = static_cast<int>(response.result_int());
  out.body = std::move(response.body());
  if (auto it = response.find(http::field::retry_after); it != response.end()) {
    out.retry_after = std::string(it->value());
  }
  return out;
}

HttpError DescribeHttpError(const HttpResponse& response) {
  nlohmann::json body = nlohmann::json::parse(response.body, nullptr, false);
  if (const nlohmann::json* error = FindField(body, "error");
      error != nullptr && error->is_object()) {
    return {StringField(*error, "code", fmt::format("http_{}", response.status)),
            StringField(*error, "message", "?")};
  }
  std::string text = response.body.substr(0, kMaxQuotedBody);
  if (text.empty()) {
    text = std::string(http::obsolete_reason(static_cast<http::status>(response.status)));
  }
  return {fmt::format("http_{}", response.status), std::move(text)};
}

}  // namespace reef::client
