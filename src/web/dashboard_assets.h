// The dashboard's files (web/ and the charting library npm put in web/node_modules), built
// into the binary by src/web/embed_assets.cmake so that `reef serve` needs nothing beside it
// and a browser loads nothing from elsewhere.
//
// Thread ownership: a constant table, any thread.
#pragma once

#include <string_view>
#include <vector>

namespace reef::web {

struct DashboardAsset {
  std::string_view name;          // as served under /assets/ ("app.js"); "index.html" is "/"
  std::string_view content_type;  // "text/javascript; charset=utf-8"
  std::string_view etag;          // a quoted strong validator: the file's SHA-256, shortened
  std::string_view bytes;
};

// Every file, in the order src/web/CMakeLists.txt lists them.
const std::vector<DashboardAsset>& DashboardAssets();

}  // namespace reef::web
