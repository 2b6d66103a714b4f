// HttpCall: one synchronous HTTP/1.1 request to a Reef server's HTTP API (docs/http-api.md),
// for CLI commands that have no reef.v1 operation (`reef deploy`, `reef invoke`, `reef units`).
//
// Each call opens its own connection, sends one request, reads one response and closes; the
// whole exchange (resolve, connect, write, read) has one deadline. It never retries. Any HTTP
// status is a result, not an error: the caller reads the status and, for an error answer,
// DescribeHttpError.
//
// Thread ownership: any thread; calls share nothing.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace reef::client {

enum class HttpMethod { kGet, kPost };

struct HttpRequest {
  HttpMethod method = HttpMethod::kGet;
  // Origin-form target: path and query, e.g. "/units/counter/invoke?mode=wait". The caller
  // percent-encodes what needs it.
  std::string target;
  // Sent with Content-Type: application/json when the method is kPost (may be empty).
  std::string body;
};

struct HttpOptions {
  // "HOST:PORT", as ClientOptions::address (SplitAddress).
  std::string address;
  // Sent as `Authorization: Bearer <token>` when set and non-empty.
  std::optional<std::string> auth_token;
  // Deadline for the whole exchange, from name resolution to the last byte of the response.
  std::chrono::milliseconds timeout{60'000};
  // Largest response body accepted, in bytes; a larger one is an error.
  std::size_t max_body_bytes = 64u << 20;
};

struct HttpResponse {
  int status = 0;  // e.g. 200, 429
  std::string body;
  // The Retry-After header (seconds, as the server sent it), when present.
  std::optional<std::string> retry_after;
};

// Sends `request` to options.address and returns the server's response, whatever its status.
// Errors: InvalidArgument for an unparsable address; Unavailable when the server cannot be
// reached ("cannot connect to 127.0.0.1:7433: Connection refused — is `reef serve` running?"),
// when the exchange did not finish within options.timeout, or when the connection broke;
// LimitExceeded when the response body is larger than options.max_body_bytes.
Result<HttpResponse> HttpCall(const HttpOptions& options, const HttpRequest& request);

// The server's error answer {"error": {"code", "message"}}: code and message as the server
// wrote them ("inbox_full", "unit 'x' is not deployed"). For a body of another shape: code
// "http_<status>" and the body's first 200 bytes (or the status's reason phrase) as message.
struct HttpError {
  std::string code;
  std::string message;
};
HttpError DescribeHttpError(const HttpResponse& response);

// "GET" or "POST".
std::string_view HttpMethodName(HttpMethod method);

}  // namespace reef::client
