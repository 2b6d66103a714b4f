#include <fmt/format.h>

#include "actor/actor.h"
#include "core/ids.h"

namespace reef::actor {

std::string_view ActorStatusName(ActorStatus status) {
  switch (status) {
#define REEF_X(name, text) \
  case ActorStatus::name:  \
    return text;
    REEF_ACTOR_STATUSES(REEF_X)
#undef REEF_X
  }
  return "?";
}

std::string ModuleOrigin(const wasm::Module& module) {
  return "module " + module.id();
}

std::string ImplementationId(std::string_view origin, const wasm::HostRegistry& registry) {
  // Versioned domain, then every input of the identity, newline-separated.
  std::string input = fmt::format(
      "reef-implementation:v1\n{}\nengine wabt-interp 1.0.32\nabi {}\ntarget wasm32-interp\n",
      origin, registry.Fingerprint());
  return Sha256Hex(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(input.data()), input.size()));
}

Result<std::shared_ptr<const Implementation>> MakeImplementation(
    std::shared_ptr<const wasm::Module> module, std::string label,
    std::optional<std::string> origin, std::string_view handler) {
  REEF_RETURN_IF_ERROR(CheckActorExports(*module, handler));
  auto implementation = std::make_shared<Implementation>();
  implementation->origin = origin ? *origin : ModuleOrigin(*module);
  std::string from = implementation->origin;
  if (handler != kDefaultHandler) from += fmt::format("\nhandler {}", handler);
  implementation->id = ImplementationId(from, AbiV1Registry());
  implementation->handler = std::string(handler);
  implementation->module = std::move(module);
  implementation->label = std::move(label);
  return std::shared_ptr<const Implementation>(std::move(implementation));
}

}  // namespace reef::actor
