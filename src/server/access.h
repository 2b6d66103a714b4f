// Who may use the listener. With an auth token (ServerOptions::auth_token), a request carries
// it as `Authorization: Bearer <token>` (clients, curl), or a browser carries the session
// cookie the dashboard's login sets (below: HttpOnly, SameSite=Strict, 12 hours; page scripts
// cannot read it and other sites' pages do not send it). Every request, with or without a token,
// also passes the browser guards (BrowserGuardRefusal below): what another site's page sends is
// refused, and without a token the Host must name a loopback address, so neither a page elsewhere
// nor a DNS name rebound to 127.0.0.1 can drive a local server (docs/operations.md "Browsers").
//
// Thread ownership: pure functions, any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace reef::server {

// A browser does not hold the token itself: the login gives it a session cookie,
// `reef_session_<port>=<expiry>.<proof>`, where <expiry> is a Unix time in seconds 12 hours
// ahead and <proof> the hex SHA-256 of "reef-session:<expiry>:<token>". Cookies are shared by
// every port of a host (RFC 6265), so the name carries the port of the request's Host (two
// Reefs on one host keep apart) and the value never reveals the token to the other ports'
// servers, only a proof that stops working at its expiry.
inline constexpr int64_t kSessionSeconds = 12 * 3600;

// The session cookie's name for a request whose Host is `host` ("127.0.0.1:7433" ->
// "reef_session_7433"; no port: "reef_session_80").
std::string SessionCookieName(std::string_view host);

// The Set-Cookie value of a login at `now_s` (Unix seconds) to the server at `host`:
// `reef_session_<port>=<value>; Path=/; Max-Age=43200; HttpOnly; SameSite=Strict`.
std::string SessionCookie(std::string_view token, std::string_view host, int64_t now_s);
// A Set-Cookie value that deletes it (logout).
std::string ExpiredSessionCookie(std::string_view host);

// True when a Cookie header (`cookie_header`, "a=1; reef_session_7433=...") holds a session
// cookie for `host` that `token` made and that has not expired at `now_s`. Every cookie of
// that name counts (a page elsewhere on the host may set more of them).
bool SessionCookieValid(std::string_view cookie_header, std::string_view host,
                        std::string_view token, int64_t now_s);

// True when `presented` equals `token`, comparing in time that depends on their lengths only.
bool TokenEquals(std::string_view presented, std::string_view token);

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
