#include "support/http_test_client.h"

#include <boost/asio/io_context.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <optional>

namespace reef::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

HttpResult HttpCall(uint16_t port, http::verb method, const std::string& target,
                    const std::string& body, const std::string& token,
                    std::chrono::milliseconds timeout, const std::string& content_type,
                    const std::vector<std::pair<std::string, std::string>>& headers) {
  asio::io_context ioc;
  beast::tcp_stream stream(ioc);
  HttpResult out;
  auto await = [&](auto start) {
    std::optional<beast::error_code> done;
    stream.expires_after(timeout);
    start([&done](beast::error_code ec, auto&&...) { done = ec; });
    ioc.restart();
    ioc.run();
    return done.value_or(asio::error::timed_out);
  };
  asio::ip::tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), port);
  out.ec = await([&](auto handler) { stream.async_connect(endpoint, handler); });
  if (out.ec) return out;
  http::request<http::string_body> request(method, target, 11);
  request.set(http::field::host, "127.0.0.1");
  if (!token.empty()) request.set(http::field::authorization, "Bearer " + token);
  if (!body.empty()) request.set(http::field::content_type, content_type);
  for (const auto& [name, value] : headers) request.set(name, value);
  request.body() = body;
  request.prepare_payload();
  out.ec = await([&](auto handler) { http::async_write(stream, request, handler); });
  if (out.ec) return out;
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(256u << 20);
  out.ec = await([&](auto handler) { http::async_read(stream, buffer, parser, handler); });
  // A read that failed before the status line leaves status 0 (not the parser's default 200).
  if (parser.is_header_done()) out.status = parser.get().result_int();
  out.text = parser.get().body();
  out.allow = std::string(parser.get()[http::field::allow]);
  out.content_type = std::string(parser.get()[http::field::content_type]);
  out.retry_after = std::string(parser.get()[http::field::retry_after]);
  for (const auto& field : parser.get()) {
    out.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  }
  out.body = nlohmann::json::parse(out.text, nullptr, false);
  return out;
}

HttpResult HttpGet(uint16_t port, const std::string& target, const std::string& token) {
  return HttpCall(port, http::verb::get, target, "", token);
}

}  // namespace reef::testing
