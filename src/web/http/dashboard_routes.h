// The dashboard's routes (docs/http-api.md "Dashboard"), all public (HttpRoute::public_route:
// a browser reaches them before it holds the token):
//
//   GET /                -> 200 the dashboard's page (text/html)
//   GET /assets/{file}   -> 200 one of its scripts, styles or the charting library;
//                           304 for a matching If-None-Match; 404 not_found for other names
//   POST /login          {"token": "..."} -> 200 {"token_required": bool} with Set-Cookie
//                           of a 12-hour session (server/access.h); 401 unauthenticated for a
//                           wrong token; 400 invalid_argument for a body that is not that
//   POST /logout         -> 200 {"logged_out": true} with a Set-Cookie deleting it
//
// Page and assets carry Cache-Control: no-cache with an ETag (a new build is seen at once),
// and a Content-Security-Policy that lets the page load and connect to this server only.
// Everything the dashboard shows or does goes through the routes and protocol ops that the
// CLI uses; these routes only deliver it.
//
// Thread ownership: the handlers run on the server's handler threads and read constants.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "server/server.h"

namespace reef::web::http {

// `auth_token`: the server's (ServerOptions::auth_token); POST /login compares against it.
std::vector<server::HttpRoute> DashboardRoutes(std::optional<std::string> auth_token);

}  // namespace reef::web::http
