// Reads of the embedded event store (LogCore, detail/log_core.h): queries (ReadEach), reads
// by id and by position, and EventView. The index is read under a shared lock, bounded by the
// durable head; records are decoded straight from the segments' read-only mappings, outside
// the lock. Also the lookups by id and position that recovery and the writer share (FindId,
// IdAt, ViewAt), which may also see the events the writer has staged but not yet published.
//
// Thread ownership: ReadEach, ReadById and EventsAt from any thread. FindId past the head,
// IdAt, and ViewAt of a staged position only on the writer thread (or in Open, before it).
#include <fmt/format.h>

#include <algorithm>

#include "events/detail/log_core.h"
#include "events/detail/log_format.h"
#include "events/detail/store_rules.h"

namespace reef::events {

uint64_t EventView::StoredBytes() const {
  return events::StoredBytes(type, tags, data,
                             {correlation_id, causation_id, idempotency_key, user_metadata});
}

EventView EventView::Of(const SequencedEvent& event) {
  EventView view;
  const EventMetadata& m = event.event.metadata;
  view.position = event.position;
  view.type = event.event.type;
  view.tags.assign(event.event.tags.begin(), event.event.tags.end());
  view.data = event.event.data;
  view.id = event.event.id;
  view.timestamp_ms = m.timestamp_ms;
  view.correlation_id = m.correlation_id;
  view.causation_id = m.causation_id;
  view.idempotency_key = m.idempotency_key;
  view.user_metadata = m.user;
  return view;
}

SequencedEvent EventView::ToEvent() const {
  SequencedEvent out;
  out.position = position;
  out.event.type = std::string(type);
  out.event.tags.assign(tags.begin(), tags.end());
  out.event.data = std::string(data);
  out.event.id = id;
  out.event.metadata.timestamp_ms = timestamp_ms;
  out.event.metadata.correlation_id = std::string(correlation_id);
  out.event.metadata.causation_id = std::string(causation_id);
  out.event.metadata.idempotency_key = std::string(idempotency_key);
  out.event.metadata.user = std::string(user_metadata);
  return out;
}

namespace detail {

Result<Position> LogCore::ReadEach(const Query& query, const ReadOptions& options,
                                   const EventVisitor& visitor) const {
  REEF_RETURN_IF_ERROR(ValidateQuery(query, options_.limits));
  // Nothing read: a forward decision has seen nothing from `from` on.
  if (options.limit && *options.limit == 0)
    return ReadHead(options, std::nullopt, false, head_.load());
  constexpr size_t kChunk = 1024;
  const Position window = options_.read_window_positions;
  std::vector<std::pair<Position, Location>> chunk;
  chunk.reserve(kChunk);
  EventView view;
  uint64_t left = options.limit.value_or(UINT64_MAX);
  Position head = 0;
  std::optional<Position> cursor;  // the next position to look at
  std::optional<Position> last_visited;
  bool finished = false;
  while (!finished) {
    chunk.clear();
    {
      ReaderLock lock(index_mu_);
      if (!cursor) {
        head = head_.load();
        cursor = options.backwards ? std::min(options.from.value_or(head), head)
                                   : options.from.value_or(1);
      }
      CompiledQuery compiled = index_.Compile(query);
      while (chunk.size() < kChunk && chunk.size() < left) {
        // At most `window` positions per search, then the lock is let go, so a query that
        // matches little never holds the writer off for a whole scan.
        Position edge = options.backwards ? (*cursor > window ? *cursor - window + 1 : 1)
                                          : std::min(head, *cursor + window - 1);
        std::optional<Position> found = options.backwards ? index_.Prev(compiled, *cursor, edge)
                                                          : index_.Next(compiled, *cursor, edge);
        if (!found) {
          bool at_end = options.backwards ? edge <= 1 : edge >= head;
          if (at_end || *cursor == 0 || *cursor > head) {
            finished = true;
          } else {
            cursor = options.backwards ? edge - 1 : edge + 1;
          }
          break;
        }
        chunk.emplace_back(*found, index_.location(*found));
        if (options.backwards) {
          if (*found == 1) {
            finished = true;
            break;
          }
          cursor = *found - 1;
        } else {
          cursor = *found + 1;
        }
      }
    }
    for (const auto& [position, location] : chunk) {
      REEF_RETURN_IF_ERROR(Decode(position, location, view));
      last_visited = position;
      --left;
      if (!visitor(view)) return ReadHead(options, last_visited, false, head);
    }
    if (left == 0) return ReadHead(options, last_visited, false, head);
  }
  return ReadHead(options, last_visited, true, head);
}

Result<std::optional<SequencedEvent>> LogCore::ReadById(const EventId& id) const {
  std::optional<Position> found;
  Location location = 0;
  {
    ReaderLock lock(index_mu_);
    found = FindId(id, head_.load());  // durable events only
    if (found) location = index_.location(*found);
  }
  if (!found) return std::optional<SequencedEvent>();
  EventView view;
  REEF_RETURN_IF_ERROR(Decode(*found, location, view));
  return std::optional<SequencedEvent>(view.ToEvent());
}

Result<std::vector<SequencedEvent>> LogCore::EventsAt(
    const std::vector<Position>& positions) const {
  std::vector<Location> locations;
  locations.reserve(positions.size());
  {
    ReaderLock lock(index_mu_);
    for (Position p : positions) locations.push_back(index_.location(p));
  }
  std::vector<SequencedEvent> out;
  out.reserve(positions.size());
  EventView view;
  for (size_t i = 0; i < positions.size(); ++i) {
    REEF_RETURN_IF_ERROR(Decode(positions[i], locations[i], view));
    out.push_back(view.ToEvent());
  }
  return out;
}

// ---- Reading helpers -------------------------------------------------------------------------

Status LogCore::Decode(Position position, Location location, EventView& view) const {
  const Base& base = bases_[SegmentOf(location)];
  const uint8_t* segment = base.pointer.load(std::memory_order_acquire);
  uint64_t offset = OffsetOf(location);
  uint64_t mapped = base.mapped.load(std::memory_order_acquire);
  if (!segment || offset >= mapped || DecodeRecord(segment + offset, mapped - offset, view) == 0) {
    return Status::DataLoss(
        fmt::format("event {} in {} cannot be decoded", position, dir_.string()));
  }
  view.position = position;
  return Status::Ok();
}

// ---- Lookups by id and position (also for recovery and the writer) ---------------------------

std::optional<Position> LogCore::FindId(const EventId& id, Position bound) const {
  std::optional<Position> found;
  EventView view;
  WriterIds().ForEachCandidate(id, [&](Position position) {
    if (position <= bound && ViewAt(position, view) && view.id == id) found = position;
    return found.has_value();
  });
  return found;
}

EventId LogCore::IdAt(Position position) const {
  EventView view;
  return ViewAt(position, view) ? view.id : EventId{};
}

bool LogCore::ViewAt(Position position, EventView& view) const {
  if (position <= head_.load()) {
    return Decode(position, WriterIndex().location(position), view).ok();
  }
  for (const auto& [first, request] : staged_) {
    if (position < first || position >= first + request->events.size()) continue;
    const Event& event = request->events[position - first];
    view.position = position;
    view.type = event.type;
    view.tags.assign(event.tags.begin(), event.tags.end());
    view.data = event.data;
    view.id = event.id;
    view.timestamp_ms = event.metadata.timestamp_ms;
    view.correlation_id = event.metadata.correlation_id;
    view.causation_id = event.metadata.causation_id;
    view.idempotency_key = event.metadata.idempotency_key;
    view.user_metadata = event.metadata.user;
    return true;
  }
  return false;
}

}  // namespace detail

}  // namespace reef::events
