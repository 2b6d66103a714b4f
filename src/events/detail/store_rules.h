// The rules every backend shares: the checks of an append before it touches storage, the rule
// that tells a retry from a reuse of an event id (event_store.h, EventStore::Append), and the
// head a read returns (event.h, ReadResult).
//
// Thread ownership: plain functions of their arguments; any thread.
#pragma once

#include <optional>
#include <vector>

#include "core/status.h"
#include "events/event_store.h"

namespace reef::events::detail {

// Validates and normalizes an append in place: at least one event, a valid condition query,
// nil ids filled, ids distinct within the append, each event normalized (NormalizeEvent, with
// the store clock's `now_ms`), the total within max_append_bytes. Returns, per event, whether
// the client gave its timestamp (a retry compares timestamps only then).
// Errors: InvalidArgument, LimitExceeded, Unavailable (no randomness for an id).
Result<std::vector<bool>> PrepareAppend(std::vector<Event>& events,
                                        const std::optional<AppendCondition>& condition,
                                        const EventLimits& limits, int64_t now_ms);

// True when `stored` is `event` stored unchanged: everything the client gave matches; the
// timestamp only when the client gave one (else the store's clock set it).
bool SameEvent(const EventView& stored, const Event& event, bool timestamp_given);

// DuplicateEventId for event `index` of an append, whose id the store holds at `stored`.
Status DuplicateIdError(size_t index, const EventId& id, Position stored);

// The head a read returns (ReadResult::head): `head` is the store's head when the read ran,
// `last_visited` the last event handed out, `reached_end` whether the read went to the end.
Position ReadHead(const ReadOptions& options, std::optional<Position> last_visited,
                  bool reached_end, Position head);

}  // namespace reef::events::detail
