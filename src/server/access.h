// Who may use the listener. With an auth token (ServerOptions::auth_token), a request carries
// it as `Authorization: Bearer <token>` (clients, curl) or as the dashboard's cookie, which
// the dashboard's login sets (HttpOnly, SameSite=Strict: page scripts cannot read it and
// other sites' pages do not send it). Every request, with or without a token, also passes
// the browser guards (BrowserGuardRefusal below): what another site's page sends is refused,
// and without a token the Host must name a loopback address, so neither a page elsewhere nor
// a DNS name rebound to 127.0.0.1 can drive a local server (docs/operations.md "Browsers").
//
// Thread ownership: pure functions, any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace reef::server {

// The name of the cookie that carries the auth token in a browser.
inline constexpr std::string_view kTokenCookieName = "reef_token";

// True when `presented` equals `token`, comparing in time that depends on their lengths only.
bool TokenEquals(std::string_view presented, std::string_view token);

// A Set-Cookie value that keeps `token` in the browser until it closes:
// `reef_token=<token, percent-encoded>; Path=/; HttpOnly; SameSite=Strict`.
std::string TokenCookie(std::string_view token);
// A Set-Cookie value that deletes the token cookie (logout).
std::string ExpiredTokenCookie();

// The value of the cookie `name` in a Cookie header ("a=1; reef_token=x"), percent-decoded;
// nullopt when it is absent or does not decode to valid UTF-8.
std::optional<std::string> CookieValue(std::string_view cookie_header, std::string_view name);

// The browser guards on one request's Host, Origin, Sec-Fetch-Site and Sec-Fetch-Mode header
// fields (each empty when absent). Returns an empty string when the request may pass, else why
// it may not: Sec-Fetch-Site "cross-site" or "same-site" on a request that is not a
// navigation (a script, image or fetch of another site's page, or of another port's); an
// Origin other than http(s)://<Host> (a page of another site, or "null"); or, when
// `loopback_only` (no token: the server listens on loopback), a Host that is not localhost,
// 127.0.0.0/8 or [::1].
std::string BrowserGuardRefusal(std::string_view host, std::string_view origin, bool loopback_only,
                                std::string_view fetch_site = {}, std::string_view fetch_mode = {});

}  // namespace reef::server
