// JSON forms of the event store's requests and answers, as the HTTP routes speak them
// (docs/http-api.md "Event store"). Field names are snake_case versions of the DCB terms.
//
//   event      {"type": str, "tags": [str], "data": any JSON | "data_base64": str,
//               "id": UUID str, "metadata": {"timestamp_ms": int, "correlation_id": str,
//               "causation_id": str, "idempotency_key": str}}
//   query      {"items": [{"types": [str], "tags": [str]}]}        (no items = all events)
//   condition  {"fail_if_events_match": query, "after": position}
//
// Every reader is strict: an unknown field, a wrong type or a number out of range is an
// InvalidArgument naming the field by its path ("events[2].tags[0]").
//
// Thread ownership: pure functions; any thread.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "core/base64.h"
#include "core/status.h"
#include "events/event.h"
#include "events/event_store.h"

namespace reef::events::http {

// The deepest nesting of arrays/objects accepted in event data given as JSON, and the deepest
// returned as JSON by reads in "auto" encoding (deeper data comes back as data_base64).
inline constexpr int kMaxDataDepth = 64;

// `data` given as JSON is stored as its compact UTF-8 text; `data_base64` (RFC 4648 section
// 4, padded) as the decoded bytes. Neither = empty data.
Result<Event> EventFromJson(const nlohmann::json& value, std::string_view path);
Result<Query> QueryFromJson(const nlohmann::json& value, std::string_view path);
Result<AppendCondition> ConditionFromJson(const nlohmann::json& value, std::string_view path);

// OK when `value` is a JSON object whose fields are all among `known`. Errors: InvalidArgument
// "<path> must be a JSON object" or "<path>.<field> is not a known field (known: ...)".
Status CheckObjectFields(const nlohmann::json& value, std::string_view path,
                         std::initializer_list<std::string_view> known);
// The field `name` of `object` as a non-negative integer; nullopt when absent or null.
// Errors: InvalidArgument "<path>.<name> must be a non-negative integer".
Result<std::optional<uint64_t>> OptionalUintField(const nlohmann::json& object,
                                                  std::string_view path, std::string_view name);

// How event data goes back out.
enum class DataEncoding {
  kAuto,    // "data" when the bytes are JSON text nested at most kMaxDataDepth deep, else
            // "data_base64"
  kBase64,  // always "data_base64"
};

nlohmann::json EventToJson(const EventView& event, DataEncoding encoding);

}  // namespace reef::events::http
