#include "spec/wast_script.h"

#include <fmt/format.h>

#include <array>
#include <bit>
#include <charconv>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

namespace reef::spec {

using nlohmann::json;

namespace {

constexpr std::array<std::pair<CommandKind, std::string_view>, 10> kCommandNames = {{
#define REEF_X(name, text) {CommandKind::name, text},
    REEF_SPEC_COMMANDS(REEF_X)
#undef REEF_X
}};

// The string member `key` of `object`, or "" when it is absent or not a string.
std::string StringField(const json& object, std::string_view key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

Result<ScriptValue> ParseValue(const json& j) {
  ScriptValue value;
  value.type = StringField(j, "type");
  if (value.type.empty()) return Status::InvalidArgument("value without a type");
  if (!j.contains("value")) {
    value.pattern = ScriptValue::Pattern::kAny;
    return value;
  }
  if (!j["value"].is_string()) {
    // v128 values are lists of lanes; the suite here has none, and no tier passes them.
    value.text = j["value"].dump();
    return value;
  }
  value.text = j["value"].get<std::string>();
  if (value.text == "nan:canonical") {
    value.pattern = ScriptValue::Pattern::kCanonicalNan;
  } else if (value.text == "nan:arithmetic") {
    value.pattern = ScriptValue::Pattern::kArithmeticNan;
  } else if (value.is_number()) {
    const char* end = value.text.data() + value.text.size();
    auto [ptr, ec] = std::from_chars(value.text.data(), end, value.bits);
    if (ec != std::errc() || ptr != end) {
      return Status::InvalidArgument(
          fmt::format("{} value `{}` is not a number", value.type, value.text));
    }
  }
  return value;
}

Result<std::vector<ScriptValue>> ParseValues(const json& object, std::string_view key) {
  std::vector<ScriptValue> values;
  auto it = object.find(key);
  if (it == object.end()) return values;
  for (const json& j : *it) {
    REEF_ASSIGN_OR_RETURN(ScriptValue value, ParseValue(j));
    values.push_back(std::move(value));
  }
  return values;
}

Result<Action> ParseAction(const json& j) {
  Action action;
  const std::string type = StringField(j, "type");
  if (type != "invoke" && type != "get") {
    return Status::InvalidArgument(fmt::format("unknown action type `{}`", type));
  }
  action.type = type == "invoke" ? Action::Type::kInvoke : Action::Type::kGet;
  action.module = StringField(j, "module");
  action.field = StringField(j, "field");
  REEF_ASSIGN_OR_RETURN(action.args, ParseValues(j, "args"));
  return action;
}

Result<CommandKind> ParseKind(std::string_view type) {
  for (const auto& [kind, name] : kCommandNames) {
    if (name == type) return kind;
  }
  return Status::InvalidArgument(fmt::format("unknown command type `{}`", type));
}

Result<Command> ParseCommand(const json& j) {
  Command command;
  REEF_ASSIGN_OR_RETURN(command.kind, ParseKind(StringField(j, "type")));
  command.line = j.value("line", 0u);
  command.filename = StringField(j, "filename");
  command.text_module = StringField(j, "module_type") == "text";
  command.name = StringField(j, "name");
  command.as = StringField(j, "as");
  command.text = StringField(j, "text");
  if (j.contains("action")) {
    REEF_ASSIGN_OR_RETURN(command.action, ParseAction(j["action"]));
  }
  REEF_ASSIGN_OR_RETURN(command.expected, ParseValues(j, "expected"));
  return command;
}

// Load's work; nlohmann's accessors throw on a value of the wrong JSON type.
Result<WastScript> ParseScript(const json& doc, const std::filesystem::path& json_path) {
  WastScript script;
  script.source_name =
      std::filesystem::path(StringField(doc, "source_filename")).filename().string();
  if (script.source_name.empty()) script.source_name = json_path.filename().string();
  script.dir = json_path.parent_path();
  if (!doc.contains("commands") || !doc["commands"].is_array()) {
    return Status::InvalidArgument(fmt::format("{}: no \"commands\" array", json_path.string()));
  }
  for (const json& j : doc["commands"]) {
    Result<Command> command = ParseCommand(j);
    if (!command.ok()) {
      return command.status().WithContext(
          fmt::format("{}: command at line {}", json_path.string(), j.value("line", 0u)));
    }
    script.commands.push_back(std::move(command).value());
  }
  return script;
}

}  // namespace

std::string_view CommandKindName(CommandKind kind) {
  for (const auto& [k, name] : kCommandNames) {
    if (k == kind) return name;
  }
  return "?";
}

bool ScriptValue::is_number() const {
  return type == "i32" || type == "i64" || type == "f32" || type == "f64";
}

std::optional<wasm::WasmValue> ScriptValue::ToWasmValue() const {
  if (pattern != Pattern::kExact) return std::nullopt;
  if (type == "i32") return static_cast<int32_t>(static_cast<uint32_t>(bits));
  if (type == "i64") return static_cast<int64_t>(bits);
  if (type == "f32") return std::bit_cast<float>(static_cast<uint32_t>(bits));
  if (type == "f64") return std::bit_cast<double>(bits);
  return std::nullopt;
}

std::string ScriptValue::ToString() const {
  switch (pattern) {
    case Pattern::kCanonicalNan:
    case Pattern::kArithmeticNan:
      return type + ":" + text;
    case Pattern::kAny:
      return type;
    case Pattern::kExact:
      break;
  }
  if (!is_number()) return type + ":" + text;
  const bool wide = type == "i64" || type == "f64";
  return fmt::format("{}:0x{:0{}x}", type, bits, wide ? 16 : 8);
}

Result<WastScript> WastScript::Load(const std::filesystem::path& json_path) {
  std::ifstream in(json_path, std::ios::binary);
  if (!in) return Status::NotFound(fmt::format("cannot read {}", json_path.string()));
  std::stringstream text;
  text << in.rdbuf();
  json doc = json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    return Status::InvalidArgument(fmt::format("{}: not valid JSON", json_path.string()));
  }
  try {
    return ParseScript(doc, json_path);
  } catch (const json::exception& e) {
    return Status::InvalidArgument(
        fmt::format("{}: unexpected JSON shape: {}", json_path.string(), e.what()));
  }
}

}  // namespace reef::spec
