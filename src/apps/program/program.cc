#include "apps/program/program.h"

#include <fmt/format.h>

#include "actor/guest_abi.h"
#include "core/base64.h"
#include "core/cbor.h"
#include "core/ids.h"

namespace reef::apps::program {

namespace {

using json = nlohmann::json;

Result<ProgramModule> LoadModule(const std::string& name, const json& encoded,
                                 const ProgramLimits& limits, const TrialInstantiate& trial) {
  if (!encoded.is_string()) {
    return Status::InvalidArgument(
        fmt::format("modules.{} must be the module's .wasm bytes in base64", name));
  }
  const std::string& text = encoded.get_ref<const std::string&>();
  if (text.size() / 4 * 3 > limits.max_module_bytes + 3) {
    return Status::LimitExceeded(
        fmt::format("module {} is over the limit of {} bytes", name, limits.max_module_bytes));
  }
  auto bytes = Base64Decode(text);
  if (!bytes.ok()) return bytes.status().WithContext(fmt::format("modules.{}", name));
  if (bytes->size() > limits.max_module_bytes) {
    return Status::LimitExceeded(fmt::format("module {} has {} bytes; the limit is {}", name,
                                             bytes->size(), limits.max_module_bytes));
  }
  std::span<const uint8_t> view(reinterpret_cast<const uint8_t*>(bytes->data()), bytes->size());
  auto module = wasm::Module::FromBinary(view, name + ".wasm");
  if (!module.ok()) return module.status().WithContext(fmt::format("module {}", name));
  // A trial instantiation finds unknown imports, over-limit memories and trapping start
  // functions now, not at the first invocation after the deploy.
  if (Status instantiated = trial(*module); !instantiated.ok()) {
    return instantiated.WithContext(fmt::format("module {} cannot be instantiated", name));
  }
  return ProgramModule{name, Sha256Hex(view), bytes->size(), std::move(*module)};
}

std::string CodeFingerprint(const ProgramModule& module, const UnitSpec& unit) {
  auto state = EncodeCbor(unit.initial_state, ValueLimits{});
  std::string state_hex =
      state.ok() ? Sha256Hex(std::span<const uint8_t>(state->data(), state->size())) : "?";
  return fmt::format("{}\n{}\n{}\n{}", module.sha256, unit.handler, PlacementName(unit.placement),
                     state_hex);
}

}  // namespace

Result<std::shared_ptr<const Program>> BuildProgram(const json& body, uint64_t generation,
                                                    int64_t deployed_at_ms,
                                                    const ProgramLimits& limits,
                                                    const TrialInstantiate& trial) {
  if (!body.is_object() || !body.contains("manifest") || !body.contains("modules")) {
    return Status::InvalidArgument(
        "a deploy needs {\"manifest\": <program.json>, \"modules\": {\"<name>\": \"<base64 "
        "of the .wasm>\"}}");
  }
  for (const auto& [key, value] : body.items()) {
    if (key != "manifest" && key != "modules") {
      return Status::InvalidArgument(fmt::format(
          "the deploy body has an unknown field \"{}\" (known: manifest, modules)", key));
    }
  }
  auto program = std::make_shared<Program>();
  program->generation = generation;
  program->deployed_at_ms = deployed_at_ms;
  REEF_ASSIGN_OR_RETURN(program->manifest, ParseManifest(body["manifest"], limits.manifest));
  const json& modules = body["modules"];
  if (!modules.is_object()) {
    return Status::InvalidArgument("\"modules\" must be an object of module name -> base64");
  }
  for (const auto& [name, encoded] : modules.items()) {
    if (program->manifest.modules.count(name) == 0) {
      return Status::InvalidArgument(fmt::format(
          "modules.{} has bytes, but the manifest's \"modules\" does not list it", name));
    }
  }
  TrialInstantiate here = [&limits](const std::shared_ptr<const wasm::Module>& module) {
    wasm::Engine engine(actor::AbiV1Registry(), limits.engine);
    return engine.Instantiate(module).status();
  };
  for (const auto& [name, file] : program->manifest.modules) {
    auto it = modules.find(name);
    if (it == modules.end()) {
      return Status::InvalidArgument(
          fmt::format("module {} ({}) is in the manifest but its bytes are missing", name, file));
    }
    REEF_ASSIGN_OR_RETURN(ProgramModule module,
                          LoadModule(name, *it, limits, trial ? trial : here));
    program->modules.emplace(name, std::move(module));
  }
  for (const auto& [name, spec] : program->manifest.units) {
    const ProgramModule& module = program->modules.at(spec.module);
    auto implementation = actor::MakeImplementation(
        module.module, fmt::format("{}/{}", program->manifest.program, name), std::nullopt,
        spec.handler);
    if (!implementation.ok()) {
      return implementation.status().WithContext(
          fmt::format("unit {} (module {}, handler {})", name, spec.module, spec.handler));
    }
    program->units.emplace(
        name, ProgramUnit{spec, std::move(*implementation), CodeFingerprint(module, spec)});
  }
  return std::shared_ptr<const Program>(std::move(program));
}

}  // namespace reef::apps::program
