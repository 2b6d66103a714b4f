#include "events/http/event_json.h"

#include <fmt/format.h>

#include <initializer_list>
#include <optional>

#include "server/protocol.h"

namespace reef::events::http {

using json = nlohmann::json;

namespace {

std::string Join(std::string_view path, std::string_view name) {
  return path.empty() ? std::string(name) : fmt::format("{}.{}", path, name);
}

Status Invalid(std::string_view path, std::string_view what) {
  return Status::InvalidArgument(fmt::format("{} {}", path, what));
}

}  // namespace

Status CheckObjectFields(const json& value, std::string_view path,
                         std::initializer_list<std::string_view> known) {
  if (!value.is_object()) return Invalid(path, "must be a JSON object");
  for (const auto& [key, field] : value.items()) {
    bool ok = false;
    for (std::string_view name : known) ok = ok || key == name;
    if (ok) continue;
    std::string list;
    for (std::string_view name : known) list += (list.empty() ? "" : ", ") + std::string(name);
    return Invalid(Join(path, key), fmt::format("is not a known field (known: {})", list));
  }
  return Status::Ok();
}

namespace {

const json* Field(const json& object, std::string_view name) {
  auto it = object.find(name);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

Result<std::string> StringField(const json& object, std::string_view path, std::string_view name) {
  const json* value = Field(object, name);
  if (value == nullptr) return std::string();
  if (!value->is_string()) return Invalid(Join(path, name), "must be a string");
  return value->get<std::string>();
}

Result<std::vector<std::string>> StringList(const json& object, std::string_view path,
                                            std::string_view name) {
  std::vector<std::string> out;
  const json* value = Field(object, name);
  if (value == nullptr) return out;
  std::string at = Join(path, name);
  if (!value->is_array()) return Invalid(at, "must be an array of strings");
  for (size_t i = 0; i < value->size(); ++i) {
    if (!(*value)[i].is_string()) return Invalid(fmt::format("{}[{}]", at, i), "must be a string");
    out.push_back((*value)[i].get<std::string>());
  }
  return out;
}

}  // namespace

Result<std::optional<uint64_t>> OptionalUintField(const json& object, std::string_view path,
                                                  std::string_view name) {
  const json* value = Field(object, name);
  if (value == nullptr) return std::optional<uint64_t>();
  bool non_negative =
      value->is_number_unsigned() || (value->is_number_integer() && value->get<int64_t>() >= 0);
  if (!non_negative) return Invalid(Join(path, name), "must be a non-negative integer");
  return std::optional<uint64_t>(value->get<uint64_t>());
}

Result<Event> EventFromJson(const json& value, std::string_view path) {
  REEF_RETURN_IF_ERROR(
      CheckObjectFields(value, path, {"type", "tags", "data", "data_base64", "id", "metadata"}));
  Event event;
  const json* type = Field(value, "type");
  if (type == nullptr || !type->is_string()) return Invalid(Join(path, "type"), "must be a string");
  event.type = type->get<std::string>();
  REEF_ASSIGN_OR_RETURN(event.tags, StringList(value, path, "tags"));
  const json* data = Field(value, "data");
  const json* base64 = Field(value, "data_base64");
  if (data != nullptr && base64 != nullptr) {
    return Invalid(path, "has both data and data_base64; give one");
  }
  if (data != nullptr) event.data = data->dump(-1, ' ', false, json::error_handler_t::strict);
  if (base64 != nullptr) {
    if (!base64->is_string()) return Invalid(Join(path, "data_base64"), "must be a string");
    auto decoded = Base64Decode(base64->get<std::string>());
    if (!decoded.ok()) return Invalid(Join(path, "data_base64"), decoded.status().message());
    event.data = std::move(*decoded);
  }
  if (const json* id = Field(value, "id")) {
    if (!id->is_string()) return Invalid(Join(path, "id"), "must be a UUID string");
    auto parsed = ParseEventId(id->get<std::string>());
    if (!parsed.ok()) return Invalid(Join(path, "id"), parsed.status().message());
    event.id = *parsed;
  }
  if (const json* metadata = Field(value, "metadata")) {
    std::string at = Join(path, "metadata");
    if (!metadata->is_object()) return Invalid(at, "must be an object");
    // Keys other than Reef's own are the application's metadata, kept as one JSON object.
    json user = json::object();
    for (const auto& [key, item] : metadata->items()) {
      if (key != "timestamp_ms" && key != "correlation_id" && key != "causation_id" &&
          key != "idempotency_key") {
        user[key] = item;
      }
    }
    if (!user.empty())
      event.metadata.user = user.dump(-1, ' ', false, json::error_handler_t::strict);
    REEF_ASSIGN_OR_RETURN(auto timestamp, OptionalUintField(*metadata, at, "timestamp_ms"));
    if (timestamp && *timestamp > static_cast<uint64_t>(INT64_MAX)) {
      return Invalid(Join(at, "timestamp_ms"), "is out of range");
    }
    event.metadata.timestamp_ms = static_cast<int64_t>(timestamp.value_or(0));
    REEF_ASSIGN_OR_RETURN(event.metadata.correlation_id,
                          StringField(*metadata, at, "correlation_id"));
    REEF_ASSIGN_OR_RETURN(event.metadata.causation_id, StringField(*metadata, at, "causation_id"));
    REEF_ASSIGN_OR_RETURN(event.metadata.idempotency_key,
                          StringField(*metadata, at, "idempotency_key"));
  }
  return event;
}

Result<Query> QueryFromJson(const json& value, std::string_view path) {
  REEF_RETURN_IF_ERROR(CheckObjectFields(value, path, {"items"}));
  Query query;
  const json* items = Field(value, "items");
  if (items == nullptr) return query;
  std::string at = Join(path, "items");
  if (!items->is_array()) return Invalid(at, "must be an array of query items");
  for (size_t i = 0; i < items->size(); ++i) {
    std::string item_path = fmt::format("{}[{}]", at, i);
    REEF_RETURN_IF_ERROR(CheckObjectFields((*items)[i], item_path, {"types", "tags"}));
    QueryItem item;
    REEF_ASSIGN_OR_RETURN(item.types, StringList((*items)[i], item_path, "types"));
    REEF_ASSIGN_OR_RETURN(item.tags, StringList((*items)[i], item_path, "tags"));
    query.items.push_back(std::move(item));
  }
  return query;
}

Result<AppendCondition> ConditionFromJson(const json& value, std::string_view path) {
  REEF_RETURN_IF_ERROR(CheckObjectFields(value, path, {"fail_if_events_match", "after"}));
  AppendCondition condition;
  const json* query = Field(value, "fail_if_events_match");
  if (query == nullptr) return Invalid(Join(path, "fail_if_events_match"), "is required");
  REEF_ASSIGN_OR_RETURN(condition.fail_if_events_match,
                        QueryFromJson(*query, Join(path, "fail_if_events_match")));
  REEF_ASSIGN_OR_RETURN(condition.after, OptionalUintField(value, path, "after"));
  return condition;
}

json EventToJson(const EventView& event, DataEncoding encoding) {
  json out = {{"position", event.position},
              {"id", FormatEventId(event.id)},
              {"type", event.type},
              {"tags", event.tags}};
  std::optional<json> parsed;
  if (encoding == DataEncoding::kAuto && !event.data.empty()) {
    // Bounded like a request, so stored bytes can never build a tree too deep to serialize.
    auto document = server::ParseJsonDocument(event.data, {.max_depth = kMaxDataDepth});
    if (document.ok()) parsed = std::move(*document);
  }
  if (parsed) {
    out["data"] = std::move(*parsed);
  } else {
    out["data_base64"] = Base64Encode(event.data);
  }
  json metadata = {{"timestamp_ms", event.timestamp_ms}};
  if (!event.correlation_id.empty()) metadata["correlation_id"] = event.correlation_id;
  if (!event.causation_id.empty()) metadata["causation_id"] = event.causation_id;
  if (!event.idempotency_key.empty()) metadata["idempotency_key"] = event.idempotency_key;
  if (!event.user_metadata.empty()) {
    auto user = server::ParseJsonDocument(event.user_metadata, {.max_depth = kMaxDataDepth});
    if (user.ok() && user->is_object()) {
      for (auto& [key, item] : user->items()) metadata.emplace(key, std::move(item));
    }
  }
  out["metadata"] = std::move(metadata);
  return out;
}

}  // namespace reef::events::http
