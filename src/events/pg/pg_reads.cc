// Reads of the PostgreSQL event store (pg_core.h): a query becomes one SQL statement per page,
// a union of index lookups (one per query item: the first tag's rows in reef_event_tags, or
// each type's in reef_events_by_type), each stopping at the page size, so a page costs what it
// returns, not the history before it. Rows come back in binary format and are handed to the
// visitor in place.
#include <arpa/inet.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "events/detail/store_rules.h"
#include "events/pg/pg_core.h"

namespace reef::events::pg_store {

const char* const kEventColumns =
    "position, id, type, tags, data, timestamp_ms, correlation_id, causation_id, "
    "idempotency_key, user_metadata";

namespace {

int64_t ReadBigEndian64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return static_cast<int64_t>(v);
}

uint32_t ReadBigEndian32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return ntohl(v);
}

// A one-dimensional text[] in binary format (array_send) as views into `bytes`.
bool DecodeTextArray(std::string_view bytes, std::vector<std::string_view>& out) {
  out.clear();
  if (bytes.size() < 12) return false;
  uint32_t ndim = ReadBigEndian32(bytes.data());
  if (ndim == 0) return true;
  if (ndim != 1 || bytes.size() < 20) return false;
  uint32_t count = ReadBigEndian32(bytes.data() + 12);
  size_t at = 20;
  for (uint32_t i = 0; i < count; ++i) {
    if (at + 4 > bytes.size()) return false;
    uint32_t len = ReadBigEndian32(bytes.data() + at);
    at += 4;
    if (len == UINT32_MAX || at + len > bytes.size()) return false;
    out.push_back(bytes.substr(at, len));
    at += len;
  }
  return at == bytes.size();
}

int64_t ClampPosition(Position p) {
  return static_cast<int64_t>(std::min<Position>(p, INT64_MAX));
}

// One page's statement: events matching `query` with lo <= position <= hi, at most $3 of them,
// ascending (or descending when `backwards`).
std::string PageSql(const Query& query, bool backwards, pg::Params& params) {
  const char* order = backwards ? "DESC" : "ASC";
  if (query.MatchesAll()) {
    return fmt::format(
        "SELECT {} FROM reef_events WHERE position BETWEEN $1 AND $2 ORDER BY position {} "
        "LIMIT $3",
        kEventColumns, order);
  }
  std::string branches;
  auto add_branch = [&branches](const std::string& sql) {
    if (!branches.empty()) branches += " UNION ";
    branches += "(" + sql + ")";
  };
  for (const QueryItem& item : query.items) {
    if (item.tags.empty()) {
      for (const std::string& type : item.types) {
        params.Text(type);
        add_branch(fmt::format(
            "SELECT position FROM reef_events WHERE type = ${} AND position BETWEEN $1 AND $2 "
            "ORDER BY position {} LIMIT $3",
            params.size(), order));
      }
      continue;
    }
    params.Text(item.tags.front());
    size_t tag = params.size();
    std::vector<std::string_view> tags(item.tags.begin(), item.tags.end());
    params.TextArray(tags);
    size_t all_tags = params.size();
    std::string type_filter;
    if (!item.types.empty()) {
      std::vector<std::string_view> types(item.types.begin(), item.types.end());
      params.TextArray(types);
      type_filter = fmt::format(" AND e.type = ANY(${})", params.size());
    }
    add_branch(fmt::format(
        "SELECT t.position FROM reef_event_tags t JOIN reef_events e ON e.position = t.position "
        "WHERE t.tag = ${} AND t.position BETWEEN $1 AND $2 AND e.tags @> ${}{} "
        "ORDER BY t.position {} LIMIT $3",
        tag, all_tags, type_filter, order));
  }
  return fmt::format(
      "SELECT {} FROM reef_events WHERE position IN (SELECT position FROM ({}) u ORDER BY "
      "position {} LIMIT $3) ORDER BY position {}",
      kEventColumns, branches, order, order);
}

}  // namespace

std::optional<Query> Matchable(const Query& query) {
  if (query.MatchesAll()) return query;
  auto has_nul = [](const std::vector<std::string>& terms) {
    return std::any_of(terms.begin(), terms.end(),
                       [](const std::string& t) { return t.find('\0') != std::string::npos; });
  };
  Query out;
  for (const QueryItem& item : query.items) {
    // An item needs all its tags (one with NUL: nothing) and one of its types.
    if (has_nul(item.tags)) continue;
    QueryItem kept = item;
    std::erase_if(kept.types,
                  [](const std::string& t) { return t.find('\0') != std::string::npos; });
    if (!item.types.empty() && kept.types.empty()) continue;
    out.items.push_back(std::move(kept));
  }
  if (out.items.empty()) return std::nullopt;
  return out;
}

namespace {

// One page of events (`sql` from PageSql) on `conn`. When the connection broke (a restart, a
// terminated session), the page is read again once on another connection from `pool`, which
// then replaces `conn`: reads change nothing.
Result<pg::PgResult> ReadPage(pg::Pool& pool, pg::Pool::Lease& conn, const std::string& sql,
                              const pg::Params& params) {
  auto rows = conn->Exec(sql, params, "reading events", /*binary_rows=*/true);
  if (rows.ok() || rows.status().code() != Code::kUnavailable || conn->healthy()) return rows;
  REEF_ASSIGN_OR_RETURN(conn, pool.Acquire());
  return conn->Exec(sql, params, "reading events", /*binary_rows=*/true);
}

}  // namespace

Status DecodeEventRow(const pg::PgResult& result, int row, EventView& view) {
  std::string_view position = result.field(row, 0);
  std::string_view id = result.field(row, 1);
  std::string_view timestamp = result.field(row, 5);
  if (position.size() != 8 || id.size() != 16 || timestamp.size() != 8 ||
      !DecodeTextArray(result.field(row, 3), view.tags)) {
    return Status::DataLoss(fmt::format("a row of reef_events (row {}) cannot be decoded", row));
  }
  view.position = static_cast<Position>(ReadBigEndian64(position.data()));
  std::memcpy(view.id.data(), id.data(), 16);
  view.type = result.field(row, 2);
  view.data = result.field(row, 4);
  view.timestamp_ms = ReadBigEndian64(timestamp.data());
  view.correlation_id = result.field(row, 6);
  view.causation_id = result.field(row, 7);
  view.idempotency_key = result.field(row, 8);
  view.user_metadata = result.field(row, 9);
  return Status::Ok();
}

Result<Position> PgCore::ReadEach(const Query& query, const ReadOptions& options,
                                  const EventVisitor& visitor) const {
  REEF_RETURN_IF_ERROR(ValidateQuery(query, options_.limits));
  if (closed()) return Status::Unavailable(ClosedMessage());
  REEF_ASSIGN_OR_RETURN(Position head, tracker_->FreshHead(options_.read_barrier_timeout));
  const std::optional<Query> matchable = Matchable(query);
  if (options.limit && *options.limit == 0) {
    return detail::ReadHead(options, std::nullopt, false, head);
  }
  if (!matchable) return detail::ReadHead(options, std::nullopt, true, head);  // nothing matches
  uint64_t left = options.limit.value_or(UINT64_MAX);
  Position lo = options.backwards ? 1 : std::max<Position>(options.from.value_or(1), 1);
  Position hi = options.backwards ? std::min(options.from.value_or(head), head) : head;
  std::optional<Position> last_visited;
  std::string sql;
  EventView view;
  REEF_ASSIGN_OR_RETURN(pg::Pool::Lease conn, pool_->Acquire());
  while (lo <= hi && left > 0) {
    const uint64_t page = std::min<uint64_t>(left, options_.read_page_events);
    pg::Params params;
    params.Int8(ClampPosition(lo)).Int8(ClampPosition(hi)).Int8(static_cast<int64_t>(page));
    sql = PageSql(*matchable, options.backwards, params);
    REEF_ASSIGN_OR_RETURN(pg::PgResult rows, ReadPage(*pool_, conn, sql, params));
    for (int r = 0; r < rows.rows(); ++r) {
      REEF_RETURN_IF_ERROR(DecodeEventRow(rows, r, view));
      last_visited = view.position;
      --left;
      if (!visitor(view)) return detail::ReadHead(options, last_visited, false, head);
    }
    if (static_cast<uint64_t>(rows.rows()) < page) break;  // nothing more in [lo, hi]
    if (left == 0) return detail::ReadHead(options, last_visited, false, head);
    if (options.backwards) {
      if (view.position <= 1) break;
      hi = view.position - 1;
    } else {
      lo = view.position + 1;
    }
  }
  return detail::ReadHead(options, last_visited, /*reached_end=*/true, head);
}

Result<std::vector<SequencedEvent>> PgCore::ReadRange(const Query& query, Position after,
                                                      Position up_to, uint32_t limit) const {
  std::vector<SequencedEvent> out;
  const std::optional<Query> matchable = Matchable(query);
  if (after >= up_to || limit == 0 || !matchable) return out;
  REEF_ASSIGN_OR_RETURN(pg::Pool::Lease conn, pool_->Acquire());
  pg::Params params;
  params.Int8(ClampPosition(after + 1)).Int8(ClampPosition(up_to)).Int8(limit);
  std::string sql = PageSql(*matchable, /*backwards=*/false, params);
  REEF_ASSIGN_OR_RETURN(pg::PgResult rows, ReadPage(*pool_, conn, sql, params));
  EventView view;
  out.reserve(static_cast<size_t>(rows.rows()));
  for (int r = 0; r < rows.rows(); ++r) {
    REEF_RETURN_IF_ERROR(DecodeEventRow(rows, r, view));
    out.push_back(view.ToEvent());
  }
  return out;
}

Result<std::optional<SequencedEvent>> PgCore::ReadById(const EventId& id) const {
  if (closed()) return Status::Unavailable(ClosedMessage());
  REEF_ASSIGN_OR_RETURN(pg::Pool::Lease conn, pool_->Acquire());
  pg::Params params;
  params.Uuid(id);
  REEF_ASSIGN_OR_RETURN(
      pg::PgResult rows,
      conn->Exec(fmt::format("SELECT {} FROM reef_events WHERE id = $1", kEventColumns), params,
                 "reading an event by id", /*binary_rows=*/true));
  if (rows.rows() == 0) return std::optional<SequencedEvent>();
  EventView view;
  REEF_RETURN_IF_ERROR(DecodeEventRow(rows, 0, view));
  return std::optional<SequencedEvent>(view.ToEvent());
}

}  // namespace reef::events::pg_store
