// Fuzzes the event store's JSON readers (events/http/event_json.h) as POST /events/append uses
// them: any text must give events and a condition or fail with an InvalidArgument naming the
// field's path, and nothing may throw or crash. Each event that parses and then passes
// NormalizeEvent keeps the store's rules (distinct valid tags, a type within its limit, an id,
// a timestamp), normalizes to itself again, and comes back unchanged through the read form
// (EventToJson, then EventFromJson). Base64: any bytes survive Base64Encode then Base64Decode,
// and text that decodes re-encodes to text that decodes to the same bytes.
#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/utf8.h"
#include "events/event.h"
#include "events/event_store.h"
#include "events/http/event_json.h"
#include "fuzz_check.h"

namespace {

using json = nlohmann::json;
namespace events = reef::events;
namespace http = reef::events::http;

// The store's clock in NormalizeEvent (fixed, so a failure reproduces).
constexpr int64_t kNowMs = 1764547200000;
constexpr events::Position kPosition = 7;

// A failed reader must say InvalidArgument and start its message with the path it was given.
template <typename T>
void CheckError(const reef::Result<T>& result, std::string_view path) {
  if (result.ok()) return;
  FUZZ_CHECK(result.status().code() == reef::Code::kInvalidArgument);
  FUZZ_CHECK(result.status().message().starts_with(path));
}

void CheckName(std::string_view name, uint32_t max_bytes) {
  FUZZ_CHECK(!name.empty() && name.size() <= max_bytes && reef::IsValidUtf8(name));
}

// The read form of `event` (a normalized event at kPosition) must read back as `event`. With
// DataEncoding::kAuto, data that is JSON text comes back re-serialized, so its bytes match
// only when they were compact JSON to begin with (`data_was_json`: it came in as "data").
void CheckReadForm(const events::Event& event, bool data_was_json) {
  events::EventView view;
  view.position = kPosition;
  view.type = event.type;
  view.tags.assign(event.tags.begin(), event.tags.end());
  view.data = event.data;
  view.id = event.id;
  view.timestamp_ms = event.metadata.timestamp_ms;
  view.correlation_id = event.metadata.correlation_id;
  view.causation_id = event.metadata.causation_id;
  view.idempotency_key = event.metadata.idempotency_key;
  view.user_metadata = event.metadata.user;
  for (auto encoding : {http::DataEncoding::kBase64, http::DataEncoding::kAuto}) {
    json out = http::EventToJson(view, encoding);
    // The route answers with out.dump(): it must not throw, and must parse back the same.
    FUZZ_CHECK(json::parse(out.dump(), nullptr, false) == out);
    FUZZ_CHECK(out.value("position", events::Position{0}) == kPosition);
    out.erase("position");
    auto back = http::EventFromJson(out, "event");
    FUZZ_CHECK(back.ok());
    if (encoding == http::DataEncoding::kBase64 || data_was_json || out.contains("data_base64")) {
      FUZZ_CHECK(*back == event);
    } else {
      events::Event same_but_data = *back;
      same_but_data.data = event.data;
      FUZZ_CHECK(same_but_data == event);
    }
  }
}

void CheckEvent(const events::Event& given, bool data_was_json) {
  const events::EventLimits limits;
  events::Event event = given;
  if (!events::NormalizeEvent(event, 0, limits, kNowMs).ok()) return;

  CheckName(event.type, limits.max_type_bytes);
  FUZZ_CHECK(event.type == given.type && event.data == given.data);
  // Tags: the given ones, each first occurrence in place, repeats dropped.
  std::vector<std::string> distinct;
  for (const std::string& tag : given.tags) {
    bool seen = false;
    for (const std::string& kept : distinct) seen = seen || kept == tag;
    if (!seen) distinct.push_back(tag);
  }
  FUZZ_CHECK(event.tags == distinct);
  FUZZ_CHECK(event.tags.size() <= limits.max_tags_per_event);
  for (const std::string& tag : event.tags) CheckName(tag, limits.max_tag_bytes);
  // An id and a timestamp: the given ones, else a fresh version 4 id and the store's clock.
  FUZZ_CHECK(event.id != events::EventId{});
  if (given.id != events::EventId{}) {
    FUZZ_CHECK(event.id == given.id);
  } else {
    FUZZ_CHECK((event.id[6] >> 4) == 4 && (event.id[8] & 0xc0) == 0x80);
  }
  FUZZ_CHECK(event.metadata.timestamp_ms ==
             (given.metadata.timestamp_ms == 0 ? kNowMs : given.metadata.timestamp_ms));
  FUZZ_CHECK(event.metadata.correlation_id == given.metadata.correlation_id);
  FUZZ_CHECK(event.metadata.causation_id == given.metadata.causation_id);
  FUZZ_CHECK(event.metadata.idempotency_key == given.metadata.idempotency_key);
  FUZZ_CHECK(event.metadata.user == given.metadata.user);
  FUZZ_CHECK(event.metadata.user.size() <= limits.max_user_metadata_bytes);
  FUZZ_CHECK(events::StoredBytes(event) <= limits.max_event_bytes);
  // Normalizing is idempotent.
  events::Event again = event;
  FUZZ_CHECK(events::NormalizeEvent(again, 0, limits, kNowMs + 1).ok() && again == event);
  // The id's text form parses back.
  auto id = events::ParseEventId(events::FormatEventId(event.id));
  FUZZ_CHECK(id.ok() && *id == event.id);

  CheckReadForm(event, data_was_json);
}

// Reads `value` as one event of a request, at `path`.
void ReadEvent(const json& value, const std::string& path) {
  auto event = http::EventFromJson(value, path);
  CheckError(event, path);
  if (!event.ok()) return;
  auto data = value.find("data");
  CheckEvent(*event, data != value.end() && !data->is_null());
}

void ReadQuery(const json& value, const std::string& path) {
  auto query = http::QueryFromJson(value, path);
  CheckError(query, path);
  if (!query.ok()) return;
  if (!events::ValidateQuery(*query, events::EventLimits{}).ok()) return;
  // Every item names a type or a tag: an event with none of them matches nothing.
  FUZZ_CHECK(query->MatchesAll() || !events::Matches(*query, "\xff", {}));
}

void ReadCondition(const json& value, const std::string& path) {
  auto condition = http::ConditionFromJson(value, path);
  CheckError(condition, path);
  if (!condition.ok()) return;
  (void)events::ValidateQuery(condition->fail_if_events_match, events::EventLimits{});
}

void CheckBase64(std::string_view bytes) {
  auto round = reef::Base64Decode(reef::Base64Encode(bytes));
  FUZZ_CHECK(round.ok() && *round == bytes);
  auto decoded = reef::Base64Decode(bytes);
  if (!decoded.ok()) {
    FUZZ_CHECK(decoded.status().code() == reef::Code::kInvalidArgument);
    return;
  }
  FUZZ_CHECK(decoded->size() <= bytes.size() / 4 * 3);
  auto again = reef::Base64Decode(reef::Base64Encode(*decoded));
  FUZZ_CHECK(again.ok() && *again == *decoded);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  CheckBase64(text);

  const json body = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) return 0;
  // Each reader on the whole text, as though it were the field it reads.
  ReadEvent(body, "event");
  ReadQuery(body, "query");
  ReadCondition(body, "condition");
  if (!body.is_object()) return 0;

  // The body of POST /events/append: {"events": [event, ...], "condition": condition}. Unlike
  // the route, every event is read even after one fails, to reach more of each.
  if (auto list = body.find("events"); list != body.end() && list->is_array()) {
    for (size_t i = 0; i < list->size(); ++i) ReadEvent((*list)[i], fmt::format("events[{}]", i));
  }
  if (auto condition = body.find("condition"); condition != body.end() && !condition->is_null()) {
    ReadCondition(*condition, "condition");
  }
  // The body of POST /events/read names its query "query".
  if (auto query = body.find("query"); query != body.end() && !query->is_null()) {
    ReadQuery(*query, "query");
  }
  return 0;
}
