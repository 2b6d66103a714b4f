#include "events/http/event_routes.h"

#include <fmt/format.h>

#include "events/http/event_json.h"

namespace reef::events::http {

using json = nlohmann::json;

namespace {

// Request bodies: at most kMaxDataDepth + 3 levels deep (the body object, "events" and the
// event hold `data`, so data nests at most kMaxDataDepth levels), and at
// most 2 million JSON values (the parsed tree takes 16-100 bytes a value: this bounds it near
// 200 MB whatever the body).
constexpr server::JsonDocumentLimits kBodyLimits{.max_depth = kMaxDataDepth + 3,
                                                 .max_values = 2'000'000};

Result<json> ParseBody(const server::HttpRequest& request) {
  auto parsed = server::ParseJsonDocument(request.body, kBodyLimits);
  if (!parsed.ok()) {
    return parsed.status().WithContext(
        fmt::format("{} {}: the body is not valid JSON", request.method, request.path));
  }
  json body = std::move(*parsed);
  if (!body.is_object()) {
    return Status::InvalidArgument(
        fmt::format("{} {}: the body must be a JSON object", request.method, request.path));
  }
  return body;
}

// When `event` (plaintext data, to be encrypted) carries an id the store already holds with
// encrypted data that opens to the same plaintext, that stored ciphertext: sending it makes the
// append an exact retry. Otherwise nullopt, and the data is encrypted afresh.
Result<std::optional<std::string>> StoredCiphertextOf(const EventStore& store,
                                                      const EventRouteOptions& options,
                                                      const Event& event) {
  if (!options.decrypt || event.id == EventId{}) return std::optional<std::string>();
  REEF_ASSIGN_OR_RETURN(auto found, store.ReadById(event.id));
  if (!found) return std::optional<std::string>();
  auto opened = options.decrypt(found->event.data);
  if (!opened.ok() || !*opened || **opened != event.data) return std::optional<std::string>();
  return std::optional<std::string>(std::move(found->event.data));
}

Result<json> Append(EventStore& store, const EventRouteOptions& options,
                    const server::HttpRequest& request) {
  REEF_ASSIGN_OR_RETURN(json body, ParseBody(request));
  REEF_RETURN_IF_ERROR(CheckObjectFields(body, "", {"events", "condition"}));
  auto events_json = body.find("events");
  if (events_json == body.end() || !events_json->is_array() || events_json->empty()) {
    return Status::InvalidArgument("events must be a non-empty array of events");
  }
  std::vector<Event> events;
  events.reserve(events_json->size());
  for (size_t i = 0; i < events_json->size(); ++i) {
    json& item = (*events_json)[i];
    std::string path = fmt::format("events[{}]", i);
    // "encryption_scope" is the routes' field, not the store's: taken off before parsing.
    std::optional<std::string> scope;
    if (item.is_object()) {
      if (auto it = item.find("encryption_scope"); it != item.end()) {
        if (!it->is_string() || it->get_ref<const std::string&>().empty()) {
          return Status::InvalidArgument(path + ".encryption_scope must be a non-empty string");
        }
        scope = it->get<std::string>();
        item.erase(it);
      }
    }
    REEF_ASSIGN_OR_RETURN(Event event, EventFromJson(item, path));
    if (!scope && options.reserved_data_prefix.size() > 0 &&
        event.data.starts_with(options.reserved_data_prefix)) {
      return Status::InvalidArgument(path +
                                     ": data starting with the bytes 00 52 43 31 (\"\\0RC1\") "
                                     "is reserved for encrypted data; use encryption_scope");
    }
    if (scope) {
      if (!options.encrypt) {
        return Status::FailedPrecondition(path + ".encryption_scope: this server has no keys");
      }
      REEF_ASSIGN_OR_RETURN(auto stored, StoredCiphertextOf(store, options, event));
      if (stored) {
        event.data = std::move(*stored);  // an exact retry: the store then sees the same event
      } else {
        auto encrypted = options.encrypt(*scope, event.data);
        if (!encrypted.ok()) return encrypted.status().WithContext(path + ".encryption_scope");
        event.data = std::move(*encrypted);
      }
    }
    events.push_back(std::move(event));
  }
  std::optional<AppendCondition> condition;
  if (auto it = body.find("condition"); it != body.end() && !it->is_null()) {
    REEF_ASSIGN_OR_RETURN(condition, ConditionFromJson(*it, "condition"));
  }
  REEF_ASSIGN_OR_RETURN(Position position, store.Append(std::move(events), std::move(condition)));
  return json{{"position", position}};
}

Result<json> Read(EventStore& store, const EventRouteOptions& options,
                  const server::HttpRequest& request) {
  REEF_ASSIGN_OR_RETURN(json body, ParseBody(request));
  REEF_RETURN_IF_ERROR(
      CheckObjectFields(body, "", {"query", "from", "backwards", "limit", "data_encoding"}));
  Query query;
  if (auto it = body.find("query"); it != body.end() && !it->is_null()) {
    REEF_ASSIGN_OR_RETURN(query, QueryFromJson(*it, "query"));
  }
  ReadOptions read;
  REEF_ASSIGN_OR_RETURN(read.from, OptionalUintField(body, "", "from"));
  REEF_ASSIGN_OR_RETURN(read.limit, OptionalUintField(body, "", "limit"));
  if (auto it = body.find("backwards"); it != body.end() && !it->is_null()) {
    if (!it->is_boolean()) return Status::InvalidArgument("backwards must be true or false");
    read.backwards = it->get<bool>();
  }
  DataEncoding encoding = DataEncoding::kAuto;
  if (auto it = body.find("data_encoding"); it != body.end() && !it->is_null()) {
    if (*it == "base64") {
      encoding = DataEncoding::kBase64;
    } else if (*it != "auto") {
      return Status::InvalidArgument("data_encoding must be \"auto\" or \"base64\"");
    }
  }
  uint64_t cap = std::min(read.limit.value_or(UINT64_MAX), options.max_read_events);
  bool capped_by_route = !read.limit || *read.limit > options.max_read_events;
  read.limit = cap;
  json events = json::array();
  uint64_t bytes = 0;
  bool cut = false;
  REEF_ASSIGN_OR_RETURN(Position head, store.ReadEach(query, read, [&](const EventView& event) {
    events.push_back(EventToJson(event, encoding));
    bytes += event.StoredBytes();
    if (bytes >= options.max_read_bytes) {
      cut = true;
      return false;
    }
    return true;
  }));
  // Cut by the route's own caps (not the caller's limit): say so when more events match.
  bool truncated = false;
  if ((cut || capped_by_route) && !events.empty() && (cut || events.size() == cap)) {
    Position last = events.back()["position"].get<Position>();
    ReadOptions probe;
    probe.backwards = read.backwards;
    probe.limit = 1;
    if (!read.backwards || last > 1) {
      probe.from = read.backwards ? last - 1 : last + 1;
      uint64_t more = 0;
      auto probed = store.ReadEach(query, probe, [&](const EventView&) {
        ++more;
        return false;
      });
      REEF_RETURN_IF_ERROR(probed.status());
      truncated = more > 0;
    }
  }
  return json{{"events", std::move(events)}, {"head", head}, {"truncated", truncated}};
}

}  // namespace

std::vector<server::HttpRoute> EventRoutes(EventStore& store, const EventRouteOptions& options) {
  std::vector<server::HttpRoute> routes;
  server::HttpRoute append{"POST", "/events/append",
                           [&store, options](const server::HttpRequest& request) {
                             return Append(store, options, request);
                           },
                           "Append events atomically, optionally with a DCB append condition"};
  append.max_body_bytes = 2 * store.limits().max_append_bytes + (1u << 20);
  routes.push_back(std::move(append));
  routes.push_back({"POST", "/events/read",
                    [&store, options](const server::HttpRequest& request) {
                      return Read(store, options, request);
                    },
                    "Read events matching a query (from inclusive, backwards, limit)"});
  routes.push_back({"GET", "/events/head",
                    [&store](const server::HttpRequest&) -> Result<json> {
                      return json{{"head", store.Head()}};
                    },
                    "The position of the last event (0 when empty)"});
  return routes;
}

}  // namespace reef::events::http
