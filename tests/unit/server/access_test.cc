// Who may use the listener (server/access.h): the token as a bearer header or a cookie, the
// public routes, and the browser guards against other sites' pages and rebound DNS names;
// and the HTTP metrics (server/http_stats.h).
#include "server/access.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "server/http_stats.h"
#include "server/server.h"
#include "server_test_support.h"

namespace reef::server {
namespace {

using namespace test;  // NOLINT: the clients and helpers of server_test_support.h

using boost::beast::http::verb;
using testing::HttpCall;
using testing::HttpResult;

using Headers = std::vector<std::pair<std::string, std::string>>;

HttpResult Get(uint16_t port, const std::string& target, const Headers& headers) {
  return HttpCall(port, verb::get, target, "", "", kTimeout, "application/json", headers);
}

HttpRoute PublicPage() {
  HttpRoute route;
  route.method = "GET";
  route.path = "/";
  route.public_route = true;
  route.response_handler = [](const HttpRequest&) -> Result<HttpResponse> {
    HttpResponse response;
    response.content_type = "text/html";
    response.body = "<p>page</p>";
    return response;
  };
  return route;
}

// A server with the token "s3cret", the public page and `extra` routes.
std::unique_ptr<Server> StartWithToken(std::vector<HttpRoute> extra = {}) {
  ServerOptions options;
  options.auth_token = "s3cret";
  options.routes.push_back(PublicPage());
  for (HttpRoute& route : extra) options.routes.push_back(std::move(route));
  return StartServer(std::move(options));
}

TEST(ServerAccessTest, TokensCompareExactly) {
  EXPECT_TRUE(TokenEquals("s3cret", "s3cret"));
  EXPECT_FALSE(TokenEquals("s3cre", "s3cret"));
  EXPECT_FALSE(TokenEquals("s3creT", "s3cret"));
  EXPECT_FALSE(TokenEquals("", "s3cret"));
}

TEST(ServerAccessTest, TheSessionCookieProvesTheTokenWithoutCarryingIt) {
  const std::string token = "a b;c,d\"e\\f%g=h\xc3\xa9";
  const int64_t now = 1'800'000'000;
  std::string cookie = SessionCookie(token, "127.0.0.1:7433", now);
  EXPECT_NE(cookie.find("; Path=/; Max-Age=43200; HttpOnly; SameSite=Strict"), std::string::npos)
      << cookie;
  EXPECT_EQ(cookie.find(token), std::string::npos) << cookie;
  std::string pair = cookie.substr(0, cookie.find(';'));
  EXPECT_EQ(pair.rfind("reef_session_7433=", 0), 0u) << pair;
  EXPECT_TRUE(SessionCookieValid("other=1; " + pair + "; more=2", "127.0.0.1:7433", token, now));
  // Another token, another port's server, after its 12 hours: no.
  EXPECT_FALSE(SessionCookieValid(pair, "127.0.0.1:7433", "other", now));
  EXPECT_FALSE(SessionCookieValid(pair, "127.0.0.1:7434", token, now));
  EXPECT_FALSE(SessionCookieValid(pair, "127.0.0.1:7433", token, now + kSessionSeconds + 1));
  // A page elsewhere on the host may add junk of the same name: the right one still counts.
  EXPECT_TRUE(SessionCookieValid("reef_session_7433=junk; reef_session_7433=9.x; " + pair,
                                 "127.0.0.1:7433", token, now));
  // A forged expiry does not match its proof.
  std::string forged =
      "reef_session_7433=" + std::to_string(now + 100) + pair.substr(pair.find('.'));
  EXPECT_FALSE(SessionCookieValid(forged, "127.0.0.1:7433", token, now));
  EXPECT_EQ(SessionCookieName("[::1]:9000"), "reef_session_9000");
  EXPECT_EQ(SessionCookieName("localhost"), "reef_session_80");
  EXPECT_NE(ExpiredSessionCookie("127.0.0.1:7433").find("reef_session_7433=; Path=/; Max-Age=0"),
            std::string::npos);
}

TEST(ServerAccessTest, BrowserGuardsRefuseOtherSitesAndRebindingOnly) {
  // Same origin, no Origin (curl, the CLI), https through a proxy of the same name: pass.
  EXPECT_EQ(BrowserGuardRefusal("127.0.0.1:7433", "http://127.0.0.1:7433", true), "");
  EXPECT_EQ(BrowserGuardRefusal("127.0.0.1:7433", "", true), "");
  EXPECT_EQ(BrowserGuardRefusal("LocalHost:7433", "http://localhost:7433", true), "");
  EXPECT_EQ(BrowserGuardRefusal("[::1]:7433", "", true), "");
  EXPECT_EQ(BrowserGuardRefusal("127.0.0.2", "", true), "");
  EXPECT_EQ(BrowserGuardRefusal("::1", "", true), "");  // a bare IPv6 literal, as some send it
  // Fetch metadata: this page's own requests and navigations from elsewhere pass; another
  // site's (or another port's) subresources and fetches do not, Origin or not.
  EXPECT_EQ(BrowserGuardRefusal("127.0.0.1:7433", "", true, "same-origin", "cors"), "");
  EXPECT_EQ(BrowserGuardRefusal("127.0.0.1:7433", "", true, "cross-site", "navigate"), "");
  EXPECT_EQ(BrowserGuardRefusal("127.0.0.1:7433", "", true, "none", "navigate"), "");
  EXPECT_NE(BrowserGuardRefusal("127.0.0.1:7433", "", true, "cross-site", "no-cors"), "");
  EXPECT_NE(BrowserGuardRefusal("localhost:7433", "", true, "same-site", "no-cors"), "");
  EXPECT_EQ(BrowserGuardRefusal("reef.example:443", "https://reef.example:443", false), "");
  // Another site's page, a sandboxed one, another port.
  EXPECT_NE(BrowserGuardRefusal("127.0.0.1:7433", "http://evil.example", true), "");
  EXPECT_NE(BrowserGuardRefusal("127.0.0.1:7433", "null", true), "");
  EXPECT_NE(BrowserGuardRefusal("127.0.0.1:7433", "http://127.0.0.1:8080", true), "");
  // A name rebound to 127.0.0.1 reaches a server without a token with its own Host.
  std::string rebound = BrowserGuardRefusal("evil.example:7433", "http://evil.example:7433", true);
  EXPECT_NE(rebound.find("not a loopback name"), std::string::npos) << rebound;
  EXPECT_NE(BrowserGuardRefusal("10.0.0.1:7433", "", true), "");
  // With a token any name may be served (the token is the guard).
  EXPECT_EQ(BrowserGuardRefusal("reef.example:7433", "", false), "");
}

TEST(ServerAccessTest, PublicRoutesNeedNoTokenButEverythingElseDoes) {
  auto server = StartWithToken();
  ASSERT_NE(server, nullptr);

  EXPECT_EQ(Get(server->port(), "/", {}).status, 200u);
  EXPECT_EQ(Get(server->port(), "/health", {}).status, 401u);
  // The test client's Host is "127.0.0.1" (port 80 for cookies).
  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  std::string session = SessionCookie("s3cret", "127.0.0.1", now);
  session = session.substr(0, session.find(';'));
  std::string guessed = SessionCookie("guess", "127.0.0.1", now);
  guessed = guessed.substr(0, guessed.find(';'));
  EXPECT_EQ(Get(server->port(), "/health", {{"Cookie", guessed}}).status, 401u);
  EXPECT_EQ(Get(server->port(), "/health", {{"Cookie", "reef_token=s3cret"}}).status, 401u);
  EXPECT_EQ(Get(server->port(), "/health", {{"Cookie", "x=1; " + session}}).status, 200u);
  // A wrong bearer token is not rescued by a right cookie.
  EXPECT_EQ(Get(server->port(), "/health", {{"Authorization", "Bearer guess"}, {"Cookie", session}})
                .status,
            401u);
  // A WebSocket upgrade to the public page's path still needs the token; the cookie does.
  WsClient without(server->port());
  EXPECT_EQ(without.response.result_int(), 401u);
  WsClient with_cookie(server->port(), "reef.v1", "", kTimeout,
                       {{"Cookie", session}, {"Origin", "http://127.0.0.1"}});
  // The handshake's Host is "127.0.0.1" (no port), so that Origin is this server's own.
  ASSERT_FALSE(with_cookie.handshake_error) << with_cookie.handshake_error.message();
  ExpectPong(with_cookie.Call(Ping(7)), 7);
}

TEST(ServerAccessTest, AnUpgradeHiddenInAChunkedTrailerIsRefused) {
  auto server = StartWithToken();
  ASSERT_NE(server, nullptr);
  // The head is a plain GET of the public page; the upgrade fields come in the trailer.
  testing::RawHttpClient client(server->port());
  ASSERT_FALSE(client.Write(
      "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n"
      "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: reef.v1\r\n\r\n"));
  HttpResult answer = client.Read();
  EXPECT_EQ(answer.status, 400u) << answer.text;
  EXPECT_NE(answer.text.find("chunked trailer"), std::string::npos) << answer.text;
}

TEST(ServerAccessTest, UnauthenticatedRequestsToPublicRoutesCarryNoBody) {
  HttpRoute login = PublicPage();
  login.method = "POST";
  login.path = "/login";
  login.max_body_bytes = 16;
  auto server = StartWithToken({login});
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(HttpCall(server->port(), verb::get, "/", std::string(100, 'x')).status, 413u);
  EXPECT_EQ(HttpCall(server->port(), verb::get, "/", std::string(100, 'x'), "s3cret").status, 200u);
  EXPECT_EQ(HttpCall(server->port(), verb::post, "/login", "{}").status, 200u);
  EXPECT_EQ(HttpCall(server->port(), verb::post, "/login", std::string(17, 'x')).status, 413u);
}

TEST(ServerAccessTest, OtherSitesPagesAndRebindingAreRefusedWith403) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  // The test client sends Host: 127.0.0.1.
  EXPECT_EQ(Get(server->port(), "/health", {{"Origin", "http://127.0.0.1"}}).status, 200u);
  HttpResult cross = Get(server->port(), "/health", {{"Origin", "http://evil.example"}});
  EXPECT_EQ(cross.status, 403u);
  EXPECT_EQ(cross.body["error"]["code"], "forbidden") << cross.text;
  HttpResult rebound = Get(server->port(), "/health", {{"Host", "evil.example"}});
  EXPECT_EQ(rebound.status, 403u);
  WsClient ws(server->port(), "reef.v1", "", kTimeout, {{"Origin", "http://evil.example"}});
  EXPECT_EQ(ws.response.result_int(), 403u);
}

TEST(ServerAccessTest, AnswersAreCountedByRouteAndCode) {
  ServerOptions options;
  options.routes.push_back(PublicPage());
  auto server = StartServer(std::move(options));
  ASSERT_NE(server, nullptr);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(Get(server->port(), "/health", {}).status, 200u);
  ASSERT_EQ(Get(server->port(), "/nothing", {}).status, 404u);

  MetricFamilies families;
  server->http_stats()->Collect(families);
  auto text = RenderPrometheusText(families);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_NE(text->find("# TYPE reef_http_request_duration_seconds histogram"), std::string::npos);
  EXPECT_NE(text->find("reef_http_request_duration_seconds_count{route=\"GET /health\"} 3"),
            std::string::npos)
      << *text;
  EXPECT_NE(text->find("reef_http_request_duration_seconds_bucket{route=\"GET /health\","
                       "le=\"+Inf\"} 3"),
            std::string::npos);
  EXPECT_NE(text->find("reef_http_request_duration_seconds_count{route=\"none\"} 1"),
            std::string::npos);
  EXPECT_NE(text->find("reef_http_responses_total{code=\"200\"} 3"), std::string::npos);
  EXPECT_NE(text->find("reef_http_responses_total{code=\"404\"} 1"), std::string::npos);
  // Routes without requests have no series.
  EXPECT_EQ(text->find("route=\"GET /\""), std::string::npos);
}

}  // namespace
}  // namespace reef::server
