// Fuzzes the reef.v1 request path: any frame must get exactly one response, which is JSON
// with "v":1 and a boolean "ok", and nothing may throw or crash (ParseRequest and
// ProtocolDispatcher::HandleFrame, server/protocol.h).
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

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
    return d;
  }();
  return *dispatcher;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view frame(reinterpret_cast<const char*>(data), size);
  NullConnection connection;
  const std::string response = Dispatcher().HandleFrame(frame, connection);
  const nlohmann::json parsed = nlohmann::json::parse(response, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object()) __builtin_trap();
  if (parsed.value("v", 0) != 1 || !parsed.contains("ok") || !parsed["ok"].is_boolean()) {
    __builtin_trap();
  }
  return 0;
}
