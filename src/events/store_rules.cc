// The checks of an append shared by the embedded and PostgreSQL backends
// (detail/store_rules.h).
#include "events/detail/store_rules.h"

#include <fmt/format.h>

#include <algorithm>

namespace reef::events::detail {

namespace {

// An append may not carry one id twice.
Status CheckDistinctIds(const std::vector<Event>& events) {
  if (events.size() < 2) return Status::Ok();
  std::vector<std::pair<EventId, size_t>> ids;
  ids.reserve(events.size());
  for (size_t i = 0; i < events.size(); ++i) ids.emplace_back(events[i].id, i);
  std::sort(ids.begin(), ids.end());
  for (size_t i = 1; i < ids.size(); ++i) {
    if (ids[i].first == ids[i - 1].first) {
      return Status::InvalidArgument(fmt::format("events {} and {} have the same id {}",
                                                 ids[i - 1].second, ids[i].second,
                                                 FormatEventId(ids[i].first)));
    }
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<bool>> PrepareAppend(std::vector<Event>& events,
                                        const std::optional<AppendCondition>& condition,
                                        const EventLimits& limits, int64_t now_ms) {
  if (events.empty()) return Status::InvalidArgument("an append needs at least one event");
  if (condition) REEF_RETURN_IF_ERROR(ValidateQuery(condition->fail_if_events_match, limits));
  REEF_RETURN_IF_ERROR(FillNilEventIds(events));
  REEF_RETURN_IF_ERROR(CheckDistinctIds(events));
  std::vector<bool> timestamp_given;
  timestamp_given.reserve(events.size());
  for (const Event& event : events) timestamp_given.push_back(event.metadata.timestamp_ms != 0);
  uint64_t total = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    REEF_RETURN_IF_ERROR(NormalizeEvent(events[i], i, limits, now_ms));
    total += StoredBytes(events[i]);
    if (total > limits.max_append_bytes) {
      return Status::LimitExceeded(fmt::format(
          "the append's events take more than {} bytes (max_append_bytes); {} events reached "
          "{} bytes",
          limits.max_append_bytes, i + 1, total));
    }
  }
  return timestamp_given;
}

bool SameEvent(const EventView& stored, const Event& event, bool timestamp_given) {
  return stored.id == event.id && stored.type == event.type && stored.data == event.data &&
         stored.tags.size() == event.tags.size() &&
         std::equal(event.tags.begin(), event.tags.end(), stored.tags.begin()) &&
         stored.correlation_id == event.metadata.correlation_id &&
         stored.causation_id == event.metadata.causation_id &&
         stored.idempotency_key == event.metadata.idempotency_key &&
         stored.user_metadata == event.metadata.user &&
         (!timestamp_given || stored.timestamp_ms == event.metadata.timestamp_ms);
}

Status DuplicateIdError(size_t index, const EventId& id, Position stored) {
  return Status::DuplicateEventId(
      fmt::format("event {} has id {}, which the store already holds at position {} (event ids are "
                  "unique; a retry must resend the whole append unchanged)",
                  index, FormatEventId(id), stored));
}

Position ReadHead(const ReadOptions& options, std::optional<Position> last_visited,
                  bool reached_end, Position head) {
  if (options.backwards) return std::min(options.from.value_or(head), head);
  if (reached_end) return head;
  return last_visited.value_or(std::max<Position>(options.from.value_or(1), 1) - 1);
}

}  // namespace reef::events::detail
