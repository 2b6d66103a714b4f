// Route patterns ({name} path segments), query parameters and header lookup of HttpRequest.
#include <gtest/gtest.h>

#include "server/server.h"

namespace reef::server {
namespace {

using Params = std::map<std::string, std::string, std::less<>>;

TEST(RoutePatternTest, LiteralSegmentsMatchExactly) {
  EXPECT_TRUE(MatchRoutePath("/health", "/health", nullptr));
  EXPECT_FALSE(MatchRoutePath("/health", "/health/", nullptr));
  EXPECT_FALSE(MatchRoutePath("/health", "/healthz", nullptr));
  EXPECT_FALSE(MatchRoutePath("/events/read", "/events", nullptr));
  EXPECT_FALSE(MatchRoutePath("/events", "/events/read", nullptr));
  EXPECT_FALSE(MatchRoutePath("/a", "", nullptr));
  EXPECT_FALSE(MatchRoutePath("/a", "a", nullptr));
}

TEST(RoutePatternTest, ParametersTakeOneNonEmptyDecodedSegment) {
  Params params;
  ASSERT_TRUE(MatchRoutePath("/commands/{name}/versions/{version}",
                             "/commands/open-account/versions/1.2.0-rc.1%2Bb", &params));
  EXPECT_EQ(params["name"], "open-account");
  EXPECT_EQ(params["version"], "1.2.0-rc.1+b");
  EXPECT_FALSE(MatchRoutePath("/commands/{name}", "/commands/", nullptr));
  EXPECT_FALSE(MatchRoutePath("/commands/{name}", "/commands//x", nullptr));
  EXPECT_FALSE(MatchRoutePath("/commands/{name}", "/commands/a/b", nullptr));
  Params scope;
  ASSERT_TRUE(MatchRoutePath("/crypto-keys/{scope}", "/crypto-keys/user%3A1", &scope));
  EXPECT_EQ(scope["scope"], "user:1");
  // Malformed escapes and escapes that decode to invalid UTF-8 never match.
  EXPECT_FALSE(MatchRoutePath("/x/{p}", "/x/%zz", nullptr));
  EXPECT_FALSE(MatchRoutePath("/x/{p}", "/x/%4", nullptr));
  EXPECT_FALSE(MatchRoutePath("/x/{p}", "/x/%ff", nullptr));
}

TEST(RoutePatternTest, QueryParamsAndHeaders) {
  HttpRequest request;
  request.target = "/commands/x/versions/1.0.0?activate=true&note=a%20b+c&flag";
  EXPECT_EQ(request.QueryParam("activate"), "true");
  EXPECT_EQ(request.QueryParam("note"), "a b c");
  EXPECT_EQ(request.QueryParam("flag"), "");
  EXPECT_EQ(request.QueryParam("missing"), std::nullopt);
  request.target = "/no-query";
  EXPECT_EQ(request.QueryParam("activate"), std::nullopt);
  request.headers["idempotency-key"] = "k1";
  EXPECT_EQ(request.Header("idempotency-key"), "k1");
  EXPECT_EQ(request.Header("x-correlation-id"), std::nullopt);
}

}  // namespace
}  // namespace reef::server
