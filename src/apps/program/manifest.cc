#include "apps/program/manifest.h"

#include <fmt/format.h>

#include "core/json.h"

namespace reef::apps::program {

namespace {

using json = nlohmann::json;

// Reads an optional whole-number field within [min, max]; `fallback` when absent.
Result<uint64_t> NumberField(const json& object, std::string_view where, std::string_view field,
                             uint64_t fallback, uint64_t min, uint64_t max) {
  auto it = object.find(field);
  if (it == object.end()) return fallback;
  if (!it->is_number_unsigned() && !(it->is_number_integer() && it->get<int64_t>() >= 0)) {
    return Status::InvalidArgument(
        fmt::format("{}.{} must be a whole number, not {}", where, field, it->dump()));
  }
  uint64_t value = it->get<uint64_t>();
  if (value < min || value > max) {
    return Status::InvalidArgument(
        fmt::format("{}.{} must be {}..{}, not {}", where, field, min, max, value));
  }
  return value;
}

Result<std::string> NameField(const json& object, std::string_view where, std::string_view field) {
  auto it = object.find(field);
  if (it == object.end() || !it->is_string()) {
    return Status::InvalidArgument(fmt::format("{} needs a string field \"{}\"", where, field));
  }
  std::string name = it->get<std::string>();
  if (!IsValidName(name)) {
    return Status::InvalidArgument(fmt::format(
        "{}.{} \"{}\" is not a valid name (1-64 of a-z 0-9 - _, starting with a letter or "
        "digit)",
        where, field, name));
  }
  return name;
}

Status OnlyFields(const json& object, std::string_view where,
                  std::initializer_list<std::string_view> allowed) {
  for (const auto& [key, value] : object.items()) {
    bool known = false;
    for (std::string_view name : allowed) known = known || key == name;
    if (!known) {
      std::string list;
      for (std::string_view name : allowed)
        list += fmt::format("{}{}", list.empty() ? "" : ", ", name);
      return Status::InvalidArgument(
          fmt::format("{} has an unknown field \"{}\" (known: {})", where, key, list));
    }
  }
  return Status::Ok();
}

Result<UnitSpec> ParseUnit(const std::string& name, const json& j, const Manifest& manifest,
                           const ManifestLimits& limits) {
  std::string where = "units." + name;
  if (!IsValidName(name)) {
    return Status::InvalidArgument(fmt::format(
        "unit name \"{}\" is not valid (1-64 of a-z 0-9 - _, starting with a letter or digit)",
        name));
  }
  if (!j.is_object()) return Status::InvalidArgument(where + " must be an object");
  REEF_RETURN_IF_ERROR(OnlyFields(j, where,
                                  {"module", "handler", "placement", "instance_limit",
                                   "inbox_capacity", "idle_eviction_ms", "initial_state"}));
  UnitSpec unit;
  unit.name = name;
  REEF_ASSIGN_OR_RETURN(unit.module, NameField(j, where, "module"));
  if (manifest.modules.count(unit.module) == 0) {
    return Status::InvalidArgument(
        fmt::format("unit {} names module {}, which the manifest's \"modules\" does not list", name,
                    unit.module));
  }
  if (auto it = j.find("handler"); it != j.end()) {
    if (!it->is_string() || it->get<std::string>().empty() || it->get<std::string>().size() > 128) {
      return Status::InvalidArgument(where + ".handler must be an export name (1-128 bytes)");
    }
    unit.handler = it->get<std::string>();
  }
  if (auto it = j.find("placement"); it != j.end()) {
    if (*it == "singleton") {
      unit.placement = Placement::kSingleton;
    } else if (*it == "replicated") {
      unit.placement = Placement::kReplicated;
    } else {
      return Status::InvalidArgument(fmt::format(
          "{}.placement must be \"singleton\" or \"replicated\", not {}", where, it->dump()));
    }
  }
  bool singleton = unit.placement == Placement::kSingleton;
  if (singleton && j.contains("idle_eviction_ms")) {
    return Status::InvalidArgument(where +
                                   ": a singleton unit is never evicted, so it takes no "
                                   "idle_eviction_ms");
  }
  REEF_ASSIGN_OR_RETURN(
      uint64_t instance_limit,
      NumberField(j, where, "instance_limit", singleton ? 1 : kDefaultInstanceLimit, 1,
                  singleton ? 1 : limits.max_instance_limit));
  REEF_ASSIGN_OR_RETURN(
      uint64_t inbox,
      NumberField(j, where, "inbox_capacity", kDefaultInboxCapacity, 1, limits.max_inbox_capacity));
  REEF_ASSIGN_OR_RETURN(uint64_t idle, NumberField(j, where, "idle_eviction_ms",
                                                   singleton ? 0 : kDefaultIdleEvictionMs, 0,
                                                   limits.max_idle_eviction_ms));
  unit.instance_limit = static_cast<uint32_t>(instance_limit);
  unit.inbox_capacity = static_cast<uint32_t>(inbox);
  unit.idle_eviction_ms = idle;
  unit.initial_state_json = j.value("initial_state", json(nullptr));
  auto state = ValueFromJson(unit.initial_state_json, limits.value_limits);
  if (!state.ok()) return state.status().WithContext(where + ".initial_state");
  unit.initial_state = std::move(*state);
  return unit;
}

}  // namespace

std::string_view PlacementName(Placement placement) {
  return placement == Placement::kSingleton ? "singleton" : "replicated";
}

bool IsValidName(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (!alnum && (i == 0 || (c != '-' && c != '_'))) return false;
  }
  return true;
}

Result<Manifest> ParseManifest(const json& j, const ManifestLimits& limits) {
  if (!j.is_object()) return Status::InvalidArgument("the manifest must be a JSON object");
  REEF_RETURN_IF_ERROR(OnlyFields(j, "the manifest", {"program", "modules", "units"}));
  Manifest manifest;
  REEF_ASSIGN_OR_RETURN(manifest.program, NameField(j, "the manifest", "program"));
  auto modules = j.find("modules");
  if (modules == j.end() || !modules->is_object() || modules->empty()) {
    return Status::InvalidArgument(
        "the manifest needs \"modules\": an object of module name -> .wasm file");
  }
  if (modules->size() > limits.max_modules) {
    return Status::InvalidArgument(fmt::format("the manifest lists {} modules; the limit is {}",
                                               modules->size(), limits.max_modules));
  }
  for (const auto& [name, file] : modules->items()) {
    if (!IsValidName(name)) {
      return Status::InvalidArgument(fmt::format(
          "module name \"{}\" is not valid (1-64 of a-z 0-9 - _, starting with a letter or "
          "digit)",
          name));
    }
    if (!file.is_string() || file.get<std::string>().empty()) {
      return Status::InvalidArgument(
          fmt::format("modules.{} must be the module's file name (a non-empty string)", name));
    }
    manifest.modules.emplace(name, file.get<std::string>());
  }
  auto units = j.find("units");
  if (units == j.end() || !units->is_object() || units->empty()) {
    return Status::InvalidArgument(
        "the manifest needs \"units\": an object of unit name -> unit (at least one)");
  }
  if (units->size() > limits.max_units) {
    return Status::InvalidArgument(fmt::format("the manifest lists {} units; the limit is {}",
                                               units->size(), limits.max_units));
  }
  for (const auto& [name, unit] : units->items()) {
    REEF_ASSIGN_OR_RETURN(UnitSpec spec, ParseUnit(name, unit, manifest, limits));
    manifest.units.emplace(name, std::move(spec));
  }
  return manifest;
}

json UnitSpecJson(const UnitSpec& unit) {
  json j = {{"module", unit.module},
            {"handler", unit.handler},
            {"placement", PlacementName(unit.placement)},
            {"instance_limit", unit.instance_limit},
            {"inbox_capacity", unit.inbox_capacity},
            {"initial_state", unit.initial_state_json}};
  if (unit.placement == Placement::kReplicated) j["idle_eviction_ms"] = unit.idle_eviction_ms;
  return j;
}

}  // namespace reef::apps::program
