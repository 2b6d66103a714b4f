// A one-request HTTP/1.1 client for tests (Boost.Beast on loopback). Every step runs with a
// deadline, so a broken server fails the test instead of hanging it. The Beast code lives in
// http_test_client.cc (the reef_test_support library), compiled once rather than in every test.
//
// Thread ownership: HttpCall may be called from any thread; each call has its own socket.
#pragma once

#include <boost/beast/core/error.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/verb.hpp>
#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace reef::testing {

struct HttpResult {
  boost::beast::error_code ec;  // set when connecting, writing or reading failed
  unsigned status = 0;          // 0 when no status line arrived
  std::string text;             // the body as received
  nlohmann::json body;          // the body parsed as JSON (discarded when it is not JSON)
  std::string allow;            // the Allow header
  std::string content_type;     // the Content-Type header
  std::string retry_after;      // the Retry-After header
  // Every header field as received (name as sent), in order.
  std::vector<std::pair<std::string, std::string>> headers;

  // The first field named `name` (case-insensitive), or "".
  std::string Header(std::string_view name) const {
    for (const auto& [field, value] : headers) {
      if (boost::beast::iequals(field, name)) return value;
    }
    return {};
  }
};

// Sends `method target` with `body` (as `content_type` when non-empty) to 127.0.0.1:port
// and reads the reply (a body of at most 256 MiB), each step within `timeout`.
HttpResult HttpCall(uint16_t port, boost::beast::http::verb method, const std::string& target,
                    const std::string& body = "", const std::string& token = "",
                    std::chrono::milliseconds timeout = std::chrono::seconds(10),
                    const std::string& content_type = "application/json",
                    const std::vector<std::pair<std::string, std::string>>& headers = {});

HttpResult HttpGet(uint16_t port, const std::string& target, const std::string& token = "");

}  // namespace reef::testing
