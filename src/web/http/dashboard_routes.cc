#include "web/http/dashboard_routes.h"

#include <chrono>
#include <nlohmann/json.hpp>
#include <string_view>
#include <utility>

#include "server/access.h"
#include "web/dashboard_assets.h"

namespace reef::web::http {

namespace {

// A login body holds one token; more than this is not a login.
constexpr uint64_t kMaxLoginBodyBytes = 4096;

const DashboardAsset* FindAsset(std::string_view name) {
  for (const DashboardAsset& asset : DashboardAssets()) {
    if (asset.name == name) return &asset;
  }
  return nullptr;
}

server::HttpResponse Serve(const DashboardAsset& asset, const server::HttpRequest& request) {
  server::HttpResponse response;
  response.content_type = std::string(asset.content_type);
  response.headers = {
      {"Cache-Control", "no-cache"},
      {"ETag", std::string(asset.etag)},
      {"X-Content-Type-Options", "nosniff"},
      {"Referrer-Policy", "no-referrer"},
      // Scripts, styles, images and connections (fetch, WebSocket) to this server only; no
      // framing by other pages.
      {"Content-Security-Policy",
       "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"},
  };
  if (request.Header("if-none-match") == asset.etag) {
    response.status = 304;
    return response;
  }
  response.body = std::string(asset.bytes);
  return response;
}

server::HttpRoute PublicRoute(std::string method, std::string path, std::string summary,
                              server::HttpResponseHandler handler) {
  server::HttpRoute route;
  route.method = std::move(method);
  route.path = std::move(path);
  route.summary = std::move(summary);
  route.response_handler = std::move(handler);
  route.public_route = true;
  return route;
}

}  // namespace

std::vector<server::HttpRoute> DashboardRoutes(std::optional<std::string> auth_token) {
  std::vector<server::HttpRoute> routes;
  routes.push_back(
      PublicRoute("GET", "/", "the dashboard (open it in a browser)",
                  [](const server::HttpRequest& request) -> Result<server::HttpResponse> {
                    return Serve(*FindAsset("index.html"), request);
                  }));
  routes.push_back(PublicRoute(
      "GET", "/assets/{file}", "the dashboard's scripts and styles",
      [](const server::HttpRequest& request) -> Result<server::HttpResponse> {
        const std::string& name = request.PathParam("file");
        const DashboardAsset* asset = name == "index.html" ? nullptr : FindAsset(name);
        if (asset == nullptr) {
          return Status::NotFound("the dashboard has no asset " + nlohmann::json(name).dump());
        }
        return Serve(*asset, request);
      }));
  server::HttpRoute login = PublicRoute(
      "POST", "/login",
      "trade the auth token for a cookie that keeps it in the browser: {\"token\": \"...\"}",
      [token = std::move(auth_token)](
          const server::HttpRequest& request) -> Result<server::HttpResponse> {
        auto body = nlohmann::json::parse(request.body, nullptr, /*allow_exceptions=*/false);
        if (!body.is_object() || !body.contains("token") || !body["token"].is_string()) {
          return Status::InvalidArgument("POST /login takes {\"token\": \"<the auth token>\"}");
        }
        const std::string& presented = body["token"].get_ref<const std::string&>();
        if (!token) {
          return server::HttpResponse::Json(200, {{"token_required", false}});
        }
        if (!server::TokenEquals(presented, *token)) {
          return server::HttpResponse::Error(
              401, "unauthenticated",
              "that is not this server's auth token (the token `reef serve` was given)");
        }
        server::HttpResponse response = server::HttpResponse::Json(200, {{"token_required", true}});
        int64_t now_s = std::chrono::duration_cast<std::chrono::seconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
        response.headers.emplace_back(
            "Set-Cookie",
            server::SessionCookie(presented, request.Header("host").value_or(""), now_s));
        response.headers.emplace_back("Cache-Control", "no-store");
        return response;
      });
  login.max_body_bytes = kMaxLoginBodyBytes;
  routes.push_back(std::move(login));
  routes.push_back(PublicRoute(
      "POST", "/logout", "forget the browser's token cookie",
      [](const server::HttpRequest& request) -> Result<server::HttpResponse> {
        server::HttpResponse response = server::HttpResponse::Json(200, {{"logged_out", true}});
        response.headers.emplace_back(
            "Set-Cookie", server::ExpiredSessionCookie(request.Header("host").value_or("")));
        return response;
      }));
  return routes;
}

}  // namespace reef::web::http
