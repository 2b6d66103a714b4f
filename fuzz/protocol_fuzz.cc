// Fuzzes the reef.v1 request path: any frame must get exactly one response, which is JSON
// with "v":1 and a boolean "ok", and nothing may throw or crash (ParseRequest and
// ProtocolDispatcher::HandleFrame, server/protocol.h), for synchronous ops and for
// asynchronous ones that answer or drop their OpDone.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>

#include "server/protocol.h"

namespace {

class NullConnection : public reef::server::Connection {
 public:
  uint64_t id() const override { return 1; }
  reef::Status Push(std::string_view, nlohmann::json) override { return reef::Status::Ok(); }
};

const reef::server::ProtocolDispatcher& Dispatcher() {
  static const reef::server::ProtocolDispatcher* dispatcher = [] {
    auto* d = new reef::server::ProtocolDispatcher();
    if (!reef::server::RegisterBuiltinOps(*d).ok()) __builtin_trap();
    // An op that echoes its args, so parsed args travel back through ToText.
    if (!d->Register("echo", "echo args",
                     [](const nlohmann::json& args,
                        reef::server::Connection&) -> reef::Result<nlohmann::json> { return args; })
             .ok()) {
      __builtin_trap();
    }
    if (!d->RegisterAsync("echo-async", "echo args through OpDone",
                          [](const nlohmann::json& args, reef::server::Connection&,
                             reef::server::OpDone done) { done(args); })
             .ok() ||
        !d->RegisterAsync(
              "drop", "drops its OpDone unanswered",
              [](const nlohmann::json&, reef::server::Connection&, reef::server::OpDone) {})
             .ok()) {
      __builtin_trap();
    }
    return d;
  }();
  return *dispatcher;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view frame(reinterpret_cast<const char*>(data), size);
  NullConnection connection;
  std::string response;
  int responses = 0;
  Dispatcher().HandleFrame(frame, connection, [&](std::string text) {
    ++responses;
    response = std::move(text);
  });
  if (responses != 1) __builtin_trap();
  const nlohmann::json parsed = nlohmann::json::parse(response, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object()) __builtin_trap();
  if (parsed.value("v", 0) != 1 || !parsed.contains("ok") || !parsed["ok"].is_boolean()) {
    __builtin_trap();
  }
  return 0;
}
