#include "events/event.h"

#include <fmt/format.h>
#include <openssl/rand.h>
#include <unistd.h>

#include <algorithm>

#include "core/utf8.h"

namespace reef::events {

namespace {

constexpr std::string_view kHex = "0123456789abcdef";

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool IsHyphenOffset(size_t i) {
  return i == 8 || i == 13 || i == 18 || i == 23;
}

// Names the event or query item an error is about: "event 2: type is empty", or for the
// messages that read as a predicate, "query item 0 has neither types nor tags".
Status JoinContext(const Status& status, std::string_view context) {
  std::string_view message = status.message();
  if (message.starts_with("has ") || message.starts_with("is ")) {
    return Status(status.code(), fmt::format("{} {}", context, message));
  }
  return status.WithContext(context);
}

// Checks one name (a type or a tag): non-empty, at most `max` bytes, valid UTF-8. The message
// leaves out which event or item: the caller adds it with WithContext, only on error.
Status CheckName(std::string_view what, std::string_view name, uint32_t max) {
  if (name.empty()) return Status::InvalidArgument(fmt::format("{} is empty", what));
  if (name.size() > max) {
    return Status::LimitExceeded(fmt::format("{} is {} bytes; the limit is {} (max_{}_bytes)", what,
                                             name.size(), max, what));
  }
  if (auto bad = FindInvalidUtf8(name)) {
    return Status::InvalidArgument(fmt::format("{} is not valid UTF-8 (byte {})", what, *bad));
  }
  return Status::Ok();
}

// Drops repeated tags, keeping each first occurrence in place. Events carry a handful of
// tags, so a quadratic scan beats hashing (and allocates nothing when there is no repeat).
void DropRepeatedTags(std::vector<std::string>& tags) {
  size_t kept = 0;
  for (size_t i = 0; i < tags.size(); ++i) {
    bool repeat = false;
    for (size_t j = 0; j < kept && !repeat; ++j) repeat = tags[j] == tags[i];
    if (repeat) continue;
    if (kept != i) tags[kept] = std::move(tags[i]);
    ++kept;
  }
  tags.resize(kept);
}

// ValidateQuery's check of one item, without naming the item.
Status CheckItem(const QueryItem& item, const EventLimits& limits) {
  if (item.types.empty() && item.tags.empty()) {
    return Status::InvalidArgument(
        "has neither types nor tags; to match every event, send a query with no items");
  }
  if (item.types.size() > limits.max_item_terms || item.tags.size() > limits.max_item_terms) {
    return Status::LimitExceeded(
        fmt::format("has {} types and {} tags; the limit is {} each (max_item_terms)",
                    item.types.size(), item.tags.size(), limits.max_item_terms));
  }
  for (const std::string& type : item.types) {
    REEF_RETURN_IF_ERROR(CheckName("type", type, limits.max_type_bytes));
  }
  for (const std::string& tag : item.tags) {
    REEF_RETURN_IF_ERROR(CheckName("tag", tag, limits.max_tag_bytes));
  }
  return Status::Ok();
}

// NormalizeEvent without naming the event.
Status NormalizeOne(Event& event, const EventLimits& limits, int64_t now_ms) {
  REEF_RETURN_IF_ERROR(CheckName("type", event.type, limits.max_type_bytes));
  if (event.tags.size() > 1) DropRepeatedTags(event.tags);
  if (event.tags.size() > limits.max_tags_per_event) {
    return Status::LimitExceeded(
        fmt::format("has {} distinct tags; the limit is {} "
                    "(max_tags_per_event)",
                    event.tags.size(), limits.max_tags_per_event));
  }
  for (const std::string& tag : event.tags) {
    REEF_RETURN_IF_ERROR(CheckName("tag", tag, limits.max_tag_bytes));
  }
  const EventMetadata& m = event.metadata;
  for (auto [name, value] :
       {std::pair{"correlation_id", &m.correlation_id}, std::pair{"causation_id", &m.causation_id},
        std::pair{"idempotency_key", &m.idempotency_key}}) {
    if (value->size() > limits.max_metadata_bytes) {
      return Status::LimitExceeded(
          fmt::format("metadata {} is {} bytes; the limit is {} (max_metadata_bytes)", name,
                      value->size(), limits.max_metadata_bytes));
    }
    if (auto bad = FindInvalidUtf8(*value)) {
      return Status::InvalidArgument(
          fmt::format("metadata {} is not valid UTF-8 (byte {})", name, *bad));
    }
  }
  if (m.user.size() > limits.max_user_metadata_bytes) {
    return Status::LimitExceeded(fmt::format(
        "its application metadata is {} bytes of JSON; the limit is {} (max_user_metadata_bytes)",
        m.user.size(), limits.max_user_metadata_bytes));
  }
  if (auto bad = FindInvalidUtf8(m.user)) {
    return Status::InvalidArgument(
        fmt::format("its application metadata is not valid UTF-8 (byte {})", *bad));
  }
  if (m.timestamp_ms < 0) {
    return Status::InvalidArgument(
        fmt::format("metadata timestamp {} is negative", m.timestamp_ms));
  }
  uint64_t bytes = StoredBytes(event);
  if (bytes > limits.max_event_bytes) {
    return Status::LimitExceeded(fmt::format(
        "is {} bytes stored; the limit is {} (max_event_bytes)", bytes, limits.max_event_bytes));
  }
  if (event.id == EventId{}) {
    REEF_ASSIGN_OR_RETURN(event.id, NewEventId());
  }
  if (event.metadata.timestamp_ms == 0) event.metadata.timestamp_ms = now_ms;
  return Status::Ok();
}

}  // namespace

std::string FormatEventId(const EventId& id) {
  std::string text;
  text.reserve(36);
  for (size_t i = 0; i < id.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) text.push_back('-');
    text.push_back(kHex[id[i] >> 4]);
    text.push_back(kHex[id[i] & 0xf]);
  }
  return text;
}

Result<EventId> ParseEventId(std::string_view text) {
  if (text.size() != 36) {
    return Status::InvalidArgument(
        fmt::format("event id \"{}\" is {} characters; a UUID is 36 (8-4-4-4-12 hex digits)", text,
                    text.size()));
  }
  EventId id{};
  size_t byte = 0;
  for (size_t i = 0; i < text.size();) {
    if (IsHyphenOffset(i)) {
      if (text[i] != '-') {
        return Status::InvalidArgument(
            fmt::format("event id \"{}\": expected '-' at offset {}", text, i));
      }
      ++i;
      continue;
    }
    int high = HexValue(text[i]);
    int low = HexValue(text[i + 1]);
    if (high < 0 || low < 0) {
      return Status::InvalidArgument(
          fmt::format("event id \"{}\": '{}' at offset {} is not a hex digit", text,
                      high < 0 ? text[i] : text[i + 1], high < 0 ? i : i + 1));
    }
    id[byte++] = static_cast<uint8_t>(high << 4 | low);
    i += 2;
  }
  // The nil UUID stands for "no id" (NormalizeEvent gives such an event a fresh one), so taking
  // it as a client's id would silently replace the id the client meant to keep.
  if (id == EventId{}) {
    return Status::InvalidArgument(
        "event id is the nil UUID (all zeros), which Reef reads as \"no id\"; leave \"id\" out "
        "to have the store pick one");
  }
  return id;
}

namespace {

// Random bytes for ids from OpenSSL's CSPRNG, drawn 4 KiB at a time into a per-thread pool:
// OpenSSL 3.0 takes a process-wide lock on every RAND_bytes call, which 64 appending threads
// fight over. The pool remembers its process, so a forked child never reuses its parent's
// bytes.
bool RandomBytes(uint8_t* out, size_t size) {
  constexpr size_t kPoolBytes = 4096;
  if (size > kPoolBytes / 4) return RAND_bytes(out, static_cast<int>(size)) == 1;
  struct Pool {
    std::array<uint8_t, kPoolBytes> bytes{};
    size_t used = kPoolBytes;
    pid_t pid = 0;
  };
  thread_local Pool pool;
  pid_t pid = ::getpid();
  if (pool.pid != pid || kPoolBytes - pool.used < size) {
    if (RAND_bytes(pool.bytes.data(), static_cast<int>(kPoolBytes)) != 1) return false;
    pool.used = 0;
    pool.pid = pid;
  }
  std::copy_n(pool.bytes.begin() + static_cast<std::ptrdiff_t>(pool.used), size, out);
  // Used bytes are wiped, so no two ids can come from the same pool bytes.
  std::fill_n(pool.bytes.begin() + static_cast<std::ptrdiff_t>(pool.used), size, uint8_t{0});
  pool.used += size;
  return true;
}

void MarkVersion4(EventId& id) {
  id[6] = static_cast<uint8_t>((id[6] & 0x0f) | 0x40);  // version 4
  id[8] = static_cast<uint8_t>((id[8] & 0x3f) | 0x80);  // RFC 9562 variant
}

}  // namespace

Result<EventId> NewEventId() {
  EventId id{};
  if (!RandomBytes(id.data(), id.size())) {
    return Status::Unavailable("OpenSSL RAND_bytes failed: no entropy for an event id");
  }
  MarkVersion4(id);
  return id;
}

Status FillNilEventIds(std::span<Event> events) {
  size_t nil = 0;
  for (const Event& event : events) nil += event.id == EventId{};
  if (nil == 0) return Status::Ok();
  std::vector<uint8_t> random(nil * sizeof(EventId));
  if (!RandomBytes(random.data(), random.size())) {
    return Status::Unavailable("OpenSSL RAND_bytes failed: no entropy for event ids");
  }
  size_t next = 0;
  for (Event& event : events) {
    if (event.id != EventId{}) continue;
    std::copy_n(random.begin() + static_cast<std::ptrdiff_t>(next), sizeof(EventId),
                event.id.begin());
    MarkVersion4(event.id);
    next += sizeof(EventId);
  }
  return Status::Ok();
}

bool Matches(const Query& query, std::string_view type, const std::vector<std::string_view>& tags) {
  if (query.items.empty()) return true;
  for (const QueryItem& item : query.items) {
    if (!item.types.empty() &&
        std::find(item.types.begin(), item.types.end(), type) == item.types.end()) {
      continue;
    }
    bool has_all = std::all_of(item.tags.begin(), item.tags.end(), [&](const std::string& tag) {
      return std::find(tags.begin(), tags.end(), tag) != tags.end();
    });
    if (has_all) return true;
  }
  return false;
}

uint64_t StoredBytes(const Event& event) {
  const EventMetadata& m = event.metadata;
  return StoredBytes(event.type, event.tags, event.data,
                     {m.correlation_id, m.causation_id, m.idempotency_key, m.user});
}

Status ValidateQuery(const Query& query, const EventLimits& limits) {
  if (query.items.size() > limits.max_query_items) {
    return Status::LimitExceeded(
        fmt::format("query has {} items; the limit is {} (max_query_items)", query.items.size(),
                    limits.max_query_items));
  }
  for (size_t i = 0; i < query.items.size(); ++i) {
    Status checked = CheckItem(query.items[i], limits);
    if (!checked.ok()) return JoinContext(checked, fmt::format("query item {}", i));
  }
  return Status::Ok();
}

Status NormalizeEvent(Event& event, size_t index, const EventLimits& limits, int64_t now_ms) {
  Status normalized = NormalizeOne(event, limits, now_ms);
  if (!normalized.ok()) return JoinContext(normalized, fmt::format("event {}", index));
  return Status::Ok();
}

}  // namespace reef::events
