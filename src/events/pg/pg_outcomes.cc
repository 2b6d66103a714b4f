// How the PostgreSQL event store decides an append's outcome when the database's answer left
// it open (pg_core.h): a lost connection (did it commit?), a stored id (a retry, or an id
// reused?), a failed condition (a conflict, or a retry of an append in flight?).
#include <fmt/format.h>

#include <map>
#include <thread>

#include "events/detail/store_rules.h"
#include "events/pg/pg_core.h"

namespace reef::events::pg_store {

Result<Position> PgCore::Conflicted(const std::string& matching, const std::vector<Event>& events,
                                    const std::optional<AppendCondition>& condition,
                                    const std::vector<bool>& timestamp_given) {
  // A retry sent while its original was in flight waited for the original's locks and then saw
  // its events: a retry (or a reused id) is never a conflict.
  auto decided = RetryOrDuplicate(events, timestamp_given);
  if (decided.ok() || decided.status().code() != Code::kNotFound) return decided;
  counters_.conflicts.fetch_add(1);
  return Status::Conflict(fmt::format(
      "append condition failed: event {} matches fail_if_events_match and comes after {}", matching,
      condition ? condition->after.value_or(0) : 0));
}

Result<bool> PgCore::ResolveLost(int pid, const std::vector<Event>& events) {
  const auto deadline = std::chrono::steady_clock::now() + options_.acquire_timeout;
  Status last = Status::Unavailable("PostgreSQL is unreachable");
  for (auto pause = std::chrono::milliseconds(50); std::chrono::steady_clock::now() < deadline;
       pause = std::min(pause * 2, std::chrono::milliseconds(1000))) {
    auto conn = pool_->Acquire();
    if (conn.ok()) {
      pg::Params p;
      p.Int4(pid);
      // The old server process may still be running the append: end it and wait until it is
      // gone, so the answer below cannot change afterwards.
      auto gone = (*conn)->Exec(
          "SELECT pg_terminate_backend($1, 5000) OR NOT EXISTS (SELECT 1 FROM pg_stat_activity "
          "WHERE pid = $1)",
          p, "ending the lost connection's server process");
      if (gone.ok() && gone->field(0, 0) != "t") {
        last = Status::Unavailable("the lost connection's server process did not end within 5 s");
      } else if (gone.ok()) {
        pg::Params ids;
        ids.Uuid(events.front().id);  // appends are atomic: the first id tells
        auto found = (*conn)->Exec("SELECT count(*) FROM reef_events WHERE id = $1", ids,
                                   "looking up a lost append");
        if (found.ok()) {
          REEF_ASSIGN_OR_RETURN(int64_t n, found->Int(0, 0));
          return n > 0;
        }
        last = found.status();
      } else {
        last = gone.status();
      }
    } else {
      last = conn.status();
    }
    std::this_thread::sleep_for(pause);
  }
  return Status::Unavailable(fmt::format(
      "the append's outcome is unknown: the connection to PostgreSQL broke and it could not be "
      "reached again ({}); retrying the append unchanged (the same event ids) is safe",
      last.message()));
}

Result<Position> PgCore::RetryOrDuplicate(const std::vector<Event>& events,
                                          const std::vector<bool>& timestamp_given) const {
  REEF_ASSIGN_OR_RETURN(pg::Pool::Lease conn, pool_->Acquire());
  std::vector<EventId> ids;
  ids.reserve(events.size());
  for (const Event& e : events) ids.push_back(e.id);
  pg::Params p;
  p.UuidArray(ids).Int8(static_cast<int64_t>(events.size()));
  // Per stored event: its append (append_first; the transaction for events written before
  // schema version 2, when a transaction held one append) and how many events that append
  // holds, counted up to one more than this append's.
  REEF_ASSIGN_OR_RETURN(
      pg::PgResult rows,
      conn->Exec(
          fmt::format("SELECT {}, coalesce('a' || append_first, 'x' || xid::text), (CASE WHEN "
                      "append_first IS NULL THEN (SELECT count(*) FROM reef_events x WHERE x.xid "
                      "= e.xid) ELSE (SELECT count(*) FROM reef_events x WHERE x.position BETWEEN "
                      "e.append_first AND e.append_first + $2 AND x.append_first = "
                      "e.append_first) END)::text FROM reef_events e WHERE id = ANY($1) "
                      "ORDER BY position",
                      kEventColumns),
          p, "looking up stored event ids", /*binary_rows=*/true));
  if (rows.rows() == 0) return Status::NotFound("none of the append's ids is stored");
  std::map<EventId, std::pair<Position, int>> stored;  // id -> (position, row)
  EventView view;
  for (int r = 0; r < rows.rows(); ++r) {
    REEF_RETURN_IF_ERROR(DecodeEventRow(rows, r, view));
    stored.emplace(view.id, std::make_pair(view.position, r));
  }
  // A retry: every event stored, unchanged, in this order, as the whole of one append.
  bool retry = static_cast<size_t>(rows.rows()) == events.size();
  std::string_view append = rows.field(0, 10);
  for (size_t i = 0; retry && i < events.size(); ++i) {
    auto it = stored.find(events[i].id);
    retry = it != stored.end() && it->second.second == static_cast<int>(i) &&
            rows.field(static_cast<int>(i), 10) == append;
    if (retry) {
      REEF_RETURN_IF_ERROR(DecodeEventRow(rows, static_cast<int>(i), view));
      retry = detail::SameEvent(view, events[i], timestamp_given[i]);
    }
  }
  if (retry) {
    std::string_view whole = rows.field(0, 11);
    retry = whole == std::to_string(events.size());
  }
  if (retry) return stored[events.back().id].first;
  counters_.duplicate_ids.fetch_add(1);
  for (size_t i = 0; i < events.size(); ++i) {
    auto it = stored.find(events[i].id);
    if (it != stored.end()) return detail::DuplicateIdError(i, events[i].id, it->second.first);
  }
  return Status::Internal("stored ids vanished");
}

}  // namespace reef::events::pg_store
