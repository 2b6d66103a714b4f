// Events, queries and append conditions of Reef's event store, after the Dynamic Consistency
// Boundary specification (dcb.events: "Query", "Append Condition", "Sequence Position") and
// spec 000 (commands read by a query and append with a condition built from that read).
//
// Plain values: any thread; a value is not synchronized (caller synchronizes).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace reef::events {

// A position in the store's global order, ascending, > 0. The embedded store numbers events
// 1, 2, 3, ... with no gap; the PostgreSQL store's positions may have gaps. 0 means "before
// every event" (the head of an empty store). Opaque outside src/events: callers compare and
// pass positions back, never compute with them.
using Position = uint64_t;

// An event id: a UUID (RFC 9562) as its 16 bytes in network order. All zero (the nil UUID)
// in an event given to Append means "assign a fresh random (version 4) id".
using EventId = std::array<uint8_t, 16>;

// "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", lowercase hex (RFC 9562 section 4).
std::string FormatEventId(const EventId& id);
// Parses the 36-character hyphenated form, either case. Errors: InvalidArgument naming the
// offending character or the length, or saying the id is the nil UUID (which means "no id").
Result<EventId> ParseEventId(std::string_view text);
// A fresh version 4 UUID from OpenSSL's CSPRNG (through the same per-thread pool).
// Errors: Unavailable when RAND_bytes fails.
Result<EventId> NewEventId();

// Facts about an event that are not its payload. Strings are UTF-8, empty = absent.
struct EventMetadata {
  int64_t timestamp_ms = 0;     // Unix time in milliseconds; 0 in Append = "now" (store clock)
  std::string correlation_id;   // the request or conversation the event belongs to
  std::string causation_id;     // the command or event that caused it
  std::string idempotency_key;  // the client key of the request that appended it
  // The application's own metadata: the compact text of a JSON object ("" = none), e.g.
  // {"minutesAgo":5}. The store keeps it as given; the JSON edges build and check it.
  std::string user;
  bool operator==(const EventMetadata&) const = default;
};

// One event. `type` and every tag are non-empty UTF-8; Append drops repeated tags (the first
// occurrence keeps its place), so a stored event's tags are distinct. `data` holds opaque
// bytes (often UTF-8 JSON; the store never looks inside).
struct Event {
  std::string type;
  std::vector<std::string> tags;
  std::string data;
  EventId id{};
  EventMetadata metadata;
  bool operator==(const Event&) const = default;
};

// Gives every event in `events` whose id is nil a fresh version 4 UUID. The randomness comes
// from OpenSSL's CSPRNG through a per-thread pool (OpenSSL 3.0 takes a global lock per call).
// Errors: Unavailable when RAND_bytes fails.
Status FillNilEventIds(std::span<Event> events);

// An event as stored, with its position.
struct SequencedEvent {
  Position position = 0;
  Event event;
  bool operator==(const SequencedEvent&) const = default;
};

// One alternative of a query: it matches an event whose type is one of `types` (any type when
// empty) and which carries every tag in `tags` (no tag needed when empty). An item with
// neither types nor tags is rejected: to match everything, use a query with no items.
struct QueryItem {
  std::vector<std::string> types;
  std::vector<std::string> tags;
  bool operator==(const QueryItem&) const = default;
};

// Items combined with OR. No items = every event (DCB's `Query.all()`).
struct Query {
  std::vector<QueryItem> items;
  bool MatchesAll() const { return items.empty(); }
  bool operator==(const Query&) const = default;
};

// True when the event with `type` and `tags` matches `query` (the rule above). Does not
// validate the query.
bool Matches(const Query& query, std::string_view type, const std::vector<std::string_view>& tags);

// The DCB append condition: the append fails with Conflict when any event at a position
// greater than `after` (exclusive; all events when absent) matches `fail_if_events_match`.
struct AppendCondition {
  Query fail_if_events_match;
  std::optional<Position> after;
};

// How to read. `from` is inclusive: the first position returned going forwards, the highest
// one going backwards (absent = the start, or the head when backwards). `limit` caps the
// number of events returned (absent = no cap).
struct ReadOptions {
  std::optional<Position> from;
  bool backwards = false;
  std::optional<uint64_t> limit;
};

// What a read gives back: the matching events in the order read, and `head`, the position to
// use as AppendCondition::after for a decision built from exactly these events: every event
// matching the query at or below `head` (and at or after `from`) was returned.
//   forwards, read to the end:   the store's head when the read ran
//   forwards, stopped by limit:  the last returned position
//   backwards:                   min(from, head of the store)
struct ReadResult {
  std::vector<SequencedEvent> events;
  Position head = 0;
};

// Size limits of the store, every one checked with an error naming it (LimitExceeded) or
// saying which rule a value breaks (InvalidArgument). Bytes are counted as stored: type, tags,
// data, metadata strings and a fixed per-event overhead (kEventOverheadBytes).
struct EventLimits {
  uint64_t max_event_bytes = 1u << 20;      // one event (1 MiB)
  uint64_t max_append_bytes = 16u << 20;    // all events of one append (16 MiB)
  uint32_t max_type_bytes = 256;            // one event type
  uint32_t max_tag_bytes = 1024;            // one tag
  uint32_t max_tags_per_event = 256;        // distinct tags on one event
  uint32_t max_metadata_bytes = 1024;       // each metadata string
  uint32_t max_user_metadata_bytes = 4096;  // the application's metadata (its JSON text)
  uint32_t max_query_items = 256;           // items in one query
  uint32_t max_item_terms = 256;            // types, and tags, in one item
};

// Fixed bytes each stored event takes besides its strings (lengths, id, timestamp); each tag
// adds 2 bytes of length besides its own.
inline constexpr uint64_t kEventOverheadBytes = 44;

// Stored size in bytes of an event with these parts (its tags: strings or string views).
template <typename Tags>
uint64_t StoredBytes(std::string_view type, const Tags& tags, std::string_view data,
                     const std::array<std::string_view, 4>& metadata_strings) {
  uint64_t bytes = kEventOverheadBytes + type.size() + data.size();
  for (std::string_view text : metadata_strings) bytes += text.size();
  for (const auto& tag : tags) bytes += 2 + std::string_view(tag).size();
  return bytes;
}

// Stored size of `event` in bytes, as counted against the limits above.
uint64_t StoredBytes(const Event& event);

// OK when `query` is well formed under `limits`: no empty item, no empty or oversized type or
// tag, valid UTF-8, not too many items or terms. Errors: InvalidArgument / LimitExceeded
// naming the item (0-based) and the rule.
Status ValidateQuery(const Query& query, const EventLimits& limits);

// Checks one event for Append and normalizes it in place: drops repeated tags, fills a nil id
// and a zero timestamp (`now_ms`). `index` (0-based) names the event in errors.
// Errors: InvalidArgument (empty or invalid type/tag, bad UTF-8), LimitExceeded (a limit above),
// Unavailable (no randomness for the id).
Status NormalizeEvent(Event& event, size_t index, const EventLimits& limits, int64_t now_ms);

}  // namespace reef::events
