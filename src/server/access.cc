// The auth token (bearer header or cookie) and the browser guards: server/access.h.
#include "server/access.h"

#include <fmt/format.h>

#include <boost/asio/ip/address.hpp>
#include <cctype>
#include <charconv>
#include <chrono>

#include "core/ids.h"
#include "core/utf8.h"
#include "server/detail/server_core.h"

namespace reef::server {

namespace {

bool EqualsIgnoringCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

// The host part of a Host field value ("127.0.0.1:7433" -> "127.0.0.1", "[::1]:80" -> "::1"),
// also of a bare IPv6 literal ("::1", as some clients send it).
std::string_view HostName(std::string_view host) {
  if (!host.empty() && host.front() == '[') {
    size_t close = host.find(']');
    return close == std::string_view::npos ? std::string_view() : host.substr(1, close - 1);
  }
  size_t colon = host.find(':');
  if (colon != std::string_view::npos && host.find(':', colon + 1) != std::string_view::npos) {
    return host;  // two colons and no brackets: an IPv6 address without a port
  }
  return host.substr(0, colon);
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool IsLoopbackName(std::string_view name) {
  if (EqualsIgnoringCase(name, "localhost")) return true;
  boost::system::error_code ec;
  auto address = boost::asio::ip::make_address(std::string(name), ec);
  return !ec && address.is_loopback();
}

}  // namespace

bool TokenEquals(std::string_view presented, std::string_view token) {
  if (presented.size() != token.size()) return false;
  unsigned char diff = 0;  // constant time in the token's length
  for (size_t i = 0; i < token.size(); ++i) {
    diff |= static_cast<unsigned char>(presented[i] ^ token[i]);
  }
  return diff == 0;
}

namespace {

// The port of a Host field value ("127.0.0.1:7433" -> "7433", "[::1]:80" -> "80"), "80" when
// it names none.
std::string_view HostPort(std::string_view host) {
  size_t bracket = host.rfind(']');
  size_t colon = host.rfind(':');
  if (colon == std::string_view::npos || (bracket != std::string_view::npos && colon < bracket) ||
      HostName(host) == host) {
    return "80";
  }
  std::string_view port = host.substr(colon + 1);
  for (char c : port) {
    if (c < '0' || c > '9') return "80";
  }
  return port.empty() || port.size() > 5 ? std::string_view("80") : port;
}

std::string SessionProof(int64_t expiry, std::string_view token) {
  std::string text = fmt::format("reef-session:{}:{}", expiry, token);
  return Sha256Hex({reinterpret_cast<const uint8_t*>(text.data()), text.size()});
}

}  // namespace

std::string SessionCookieName(std::string_view host) {
  return fmt::format("reef_session_{}", HostPort(host));
}

std::string SessionCookie(std::string_view token, std::string_view host, int64_t now_s) {
  int64_t expiry = now_s + kSessionSeconds;
  return fmt::format("{}={}.{}; Path=/; Max-Age={}; HttpOnly; SameSite=Strict",
                     SessionCookieName(host), expiry, SessionProof(expiry, token), kSessionSeconds);
}

std::string ExpiredSessionCookie(std::string_view host) {
  return fmt::format("{}=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict", SessionCookieName(host));
}

bool SessionCookieValid(std::string_view cookie_header, std::string_view host,
                        std::string_view token, int64_t now_s) {
  const std::string name = SessionCookieName(host);
  bool valid = false;
  while (!cookie_header.empty()) {
    size_t semicolon = cookie_header.find(';');
    std::string_view pair = cookie_header.substr(0, semicolon);
    cookie_header = semicolon == std::string_view::npos ? std::string_view()
                                                        : cookie_header.substr(semicolon + 1);
    while (!pair.empty() && pair.front() == ' ') pair.remove_prefix(1);
    size_t eq = pair.find('=');
    if (eq == std::string_view::npos || pair.substr(0, eq) != name) continue;
    std::string_view value = pair.substr(eq + 1);
    size_t dot = value.find('.');
    if (dot == std::string_view::npos || dot == 0 || dot > 19) continue;
    int64_t expiry = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + dot, expiry);
    if (ec != std::errc() || end != value.data() + dot || expiry <= now_s ||
        expiry > now_s + kSessionSeconds) {
      continue;
    }
    valid |= TokenEquals(value.substr(dot + 1), SessionProof(expiry, token));
  }
  return valid;
}

std::string BrowserGuardRefusal(std::string_view host, std::string_view origin, bool loopback_only,
                                std::string_view fetch_site, std::string_view fetch_mode) {
  // Fetch metadata (sent by current browsers): a subresource or script request from another
  // site (or another port of this one) is refused even where it carries no Origin; following
  // a link here (a navigation) is not.
  if ((fetch_site == "cross-site" || fetch_site == "same-site") && fetch_mode != "navigate") {
    return fmt::format(
        "cross-site request refused: Sec-Fetch-Site {:?} (a page of another site, or of "
        "another port) may not use this server",
        fetch_site);
  }
  if (loopback_only && !host.empty() && !IsLoopbackName(HostName(host))) {
    return fmt::format(
        "Host {:?} is not a loopback name: a server without an auth token answers only "
        "requests addressed to localhost, 127.0.0.1 or [::1] (give it a token to serve other "
        "names)",
        host);
  }
  if (origin.empty()) return {};  // not sent by a browser page (curl, the CLI), or same-origin
  std::string_view authority = origin;
  if (authority.substr(0, 7) == "http://") {
    authority.remove_prefix(7);
  } else if (authority.substr(0, 8) == "https://") {
    authority.remove_prefix(8);
  } else {
    authority = {};  // "null" (a sandboxed or file: page) or another scheme
  }
  if (!authority.empty() && EqualsIgnoringCase(authority, host)) return {};
  return fmt::format(
      "cross-origin request refused: Origin {:?} is not this server ({:?}); pages of other "
      "sites may not use it",
      origin, host);
}

namespace detail {

bool Authorized(const ServerCore& core, const HttpMessage& request) {
  if (!core.options.auth_token) return true;
  const std::string& token = *core.options.auth_token;
  std::string_view header = request[http::field::authorization];
  constexpr std::string_view kScheme = "bearer ";
  if (header.size() >= kScheme.size() && EqualsIgnoringCase(header.substr(0, 7), kScheme)) {
    return TokenEquals(header.substr(kScheme.size()), token);
  }
  if (!header.empty()) return false;
  int64_t now_s = std::chrono::duration_cast<std::chrono::seconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  return SessionCookieValid(request[http::field::cookie], request[http::field::host], token, now_s);
}

std::optional<HttpReply> RefusedByBrowserGuards(const ServerCore& core,
                                                const HttpMessage& request) {
  std::string refusal =
      BrowserGuardRefusal(request[http::field::host], request[http::field::origin],
                          /*loopback_only=*/!core.options.auth_token, request["sec-fetch-site"],
                          request["sec-fetch-mode"]);
  if (refusal.empty()) return std::nullopt;
  nlohmann::json body = {{"error", {{"code", "forbidden"}, {"message", refusal}}}};
  return JsonReply(request, http::status::forbidden, body);
}

std::optional<std::string> PercentDecode(std::string_view text, bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '%') {
      if (i + 2 >= text.size()) return std::nullopt;
      int hi = HexDigit(text[i + 1]);
      int lo = HexDigit(text[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  if (!IsValidUtf8(out)) return std::nullopt;
  return out;
}

}  // namespace detail
}  // namespace reef::server
