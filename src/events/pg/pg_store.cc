// The PostgreSQL event store's handle, Open and appends (pg_core.h). An append is one call of
// reef_append (pg_schema.cc) on a pooled connection; this file computes the advisory lock
// keys it takes and turns the function's errors into the store's.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <thread>

#include "core/clock.h"
#include "events/detail/store_rules.h"
#include "events/pg/pg_core.h"

namespace reef::events::pg_store {

namespace {

// The lock key of a (type, tag) pair (`kind`: T for a type alone, G for a tag alone, P for
// both). Collisions only make unrelated appends wait for each other.
int64_t PairKey(std::string_view type, std::string_view tag, char kind) {
  std::string text;
  text.reserve(3 + type.size() + tag.size());
  text += kind;
  text += type;
  text += '\0';
  text += tag;
  return pg::HashedLockKey(text);
}

// The keys of an append, sorted: shared for every (type, tag) pair, (type, any tag) and
// (any type, tag) its events carry, exclusive for what each condition item could match (one
// of its tags suffices: a matching event carries them all). A condition on every event, or more
// keys than `max_keys`, takes the store-wide key exclusively instead, which every append holds
// shared.
void LockKeys(const std::vector<Event>& events, const std::optional<AppendCondition>& condition,
              uint32_t max_keys, std::vector<int64_t>& keys, std::vector<uint8_t>& exclusive) {
  std::map<int64_t, bool> wanted;  // key -> exclusive
  auto want = [&wanted](int64_t key, bool excl) {
    auto [it, inserted] = wanted.emplace(key, excl);
    if (!inserted) it->second = it->second || excl;
  };
  bool store_wide = false;
  if (condition) {
    const Query& q = condition->fail_if_events_match;
    if (q.MatchesAll()) store_wide = true;
    for (const QueryItem& item : q.items) {
      std::string_view tag = item.tags.empty() ? std::string_view() : item.tags.front();
      char kind = item.tags.empty() ? 'T' : (item.types.empty() ? 'G' : 'P');
      if (item.types.empty()) {
        want(PairKey({}, tag, kind), true);
      } else {
        for (const std::string& type : item.types) want(PairKey(type, tag, kind), true);
      }
    }
  }
  for (const Event& event : events) {
    if (store_wide || wanted.size() > max_keys) break;
    want(PairKey(event.type, {}, 'T'), false);
    for (const std::string& tag : event.tags) {
      want(PairKey({}, tag, 'G'), false);
      want(PairKey(event.type, tag, 'P'), false);
    }
  }
  keys.clear();
  exclusive.clear();
  if (store_wide || wanted.size() > max_keys) {
    keys.push_back(kStoreLockKey);
    exclusive.push_back(true);
    return;
  }
  wanted.emplace(kStoreLockKey, false);
  for (const auto& [key, excl] : wanted) {  // std::map: ascending, one global order
    keys.push_back(key);
    exclusive.push_back(excl);
  }
}

// PostgreSQL's text holds no NUL character; the embedded store's strings may.
Status CheckNoNul(std::string_view text, std::string_view field, std::optional<size_t> index) {
  if (text.find('\0') == std::string_view::npos) return Status::Ok();
  return Status::InvalidArgument(
      fmt::format("{}the {} contains U+0000, which the PostgreSQL event store cannot hold",
                  index ? fmt::format("event {}: ", *index) : std::string(), field));
}

// OK when PostgreSQL's text can hold every string of `events`.
Status CheckText(const std::vector<Event>& events) {
  for (size_t i = 0; i < events.size(); ++i) {
    const Event& e = events[i];
    const EventMetadata& m = e.metadata;
    REEF_RETURN_IF_ERROR(CheckNoNul(e.type, "type", i));
    for (const std::string& tag : e.tags) REEF_RETURN_IF_ERROR(CheckNoNul(tag, "tag", i));
    REEF_RETURN_IF_ERROR(CheckNoNul(m.correlation_id, "correlation id", i));
    REEF_RETURN_IF_ERROR(CheckNoNul(m.causation_id, "causation id", i));
    REEF_RETURN_IF_ERROR(CheckNoNul(m.idempotency_key, "idempotency key", i));
    REEF_RETURN_IF_ERROR(CheckNoNul(m.user, "metadata", i));
  }
  return Status::Ok();
}

// The events as reef_append's ten arrays, appended to `p`.
void AddEventArrays(const std::vector<Event>& events, pg::Params& p) {
  std::vector<EventId> ids;
  std::vector<std::string_view> types, tags, data, corr, caus, idem, user;
  std::vector<int32_t> tag_ends;
  std::vector<int64_t> ts;
  for (const Event& e : events) {
    const EventMetadata& m = e.metadata;
    ids.push_back(e.id);
    types.push_back(e.type);
    tags.insert(tags.end(), e.tags.begin(), e.tags.end());
    tag_ends.push_back(static_cast<int32_t>(tags.size()));
    data.push_back(e.data);
    ts.push_back(m.timestamp_ms);
    corr.push_back(m.correlation_id);
    caus.push_back(m.causation_id);
    idem.push_back(m.idempotency_key);
    user.push_back(m.user);
  }
  p.UuidArray(ids).TextArray(types).TextArray(tags).Int4Array(tag_ends).ByteaArray(data);
  p.Int8Array(ts).TextArray(corr).TextArray(caus).TextArray(idem).TextArray(user);
}

// The events, at positions `first`, `first` + 1, ..., as the binary input of COPY reef_events.
std::string CopyInput(const std::vector<Event>& events, int64_t first) {
  pg::BinaryCopy copy;
  for (const Event& e : events) {
    const EventMetadata& m = e.metadata;
    std::vector<std::string_view> tags(e.tags.begin(), e.tags.end());
    copy.Row(10);
    copy.Int8(first++);
    copy.Uuid(e.id);
    copy.Bytes(e.type);
    copy.TextArray(tags);
    copy.Bytes(e.data);
    copy.Int8(m.timestamp_ms);
    copy.Bytes(m.correlation_id);
    copy.Bytes(m.causation_id);
    copy.Bytes(m.idempotency_key);
    copy.Bytes(m.user);
  }
  return copy.Finish();
}

// reef_append_check's eight parameters (the lock keys, the barrier key, the condition),
// appended to `p`. Errors: InvalidArgument for a condition text PostgreSQL cannot hold.
Status AddCheckParams(const std::vector<Event>& events,
                      const std::optional<AppendCondition>& condition, uint32_t max_keys,
                      pg::Params& p) {
  std::vector<int64_t> keys;
  std::vector<uint8_t> exclusive;
  LockKeys(events, condition, max_keys, keys, exclusive);
  std::vector<std::string_view> cond_types, cond_tags;
  std::vector<int32_t> cond_type_ends, cond_tag_ends;
  if (condition) {
    for (const QueryItem& item : condition->fail_if_events_match.items) {
      for (const std::string& t : item.types) {
        REEF_RETURN_IF_ERROR(CheckNoNul(t, "condition's type", std::nullopt));
        cond_types.push_back(t);
      }
      for (const std::string& t : item.tags) {
        REEF_RETURN_IF_ERROR(CheckNoNul(t, "condition's tag", std::nullopt));
        cond_tags.push_back(t);
      }
      cond_type_ends.push_back(static_cast<int32_t>(cond_types.size()));
      cond_tag_ends.push_back(static_cast<int32_t>(cond_tags.size()));
    }
  }
  p.Int8Array(keys).BoolArray(exclusive).Int8(kBarrierKey);
  if (condition) {
    Position after = condition->after.value_or(0);
    p.Int8(static_cast<int64_t>(std::min<Position>(after, INT64_MAX)));
  } else {
    p.Null(pg::Oid::kInt8);
  }
  p.TextArray(cond_types).Int4Array(cond_type_ends).TextArray(cond_tags).Int4Array(cond_tag_ends);
  return Status::Ok();
}

// A large append on `conn`: one transaction of reef_append_check, a block of positions, COPY of
// the events at them, their tag rows; the result is the last position.
// A failed step is a PgResult with !ok(), its SQLSTATE kept (rolled back); a lost connection
// is Unavailable (the outcome unknown).
Result<pg::PgResult> CopyAppend(pg::Connection& conn, const pg::Params& check,
                                const std::vector<Event>& events) {
  REEF_RETURN_IF_ERROR(conn.ExecScript("BEGIN", "append"));
  auto steps = [&]() -> Result<pg::PgResult> {
    REEF_ASSIGN_OR_RETURN(
        pg::PgResult checked,
        conn.Run("SELECT reef_append_check($1, $2, $3, $4, $5, $6, $7, $8)", check));
    if (!checked.ok()) return checked;
    pg::Params draw;
    draw.Int4(static_cast<int32_t>(events.size())).Int8(kDrawKey);
    REEF_ASSIGN_OR_RETURN(pg::PgResult drawn, conn.Run("SELECT reef_draw_positions($1, $2)", draw));
    if (!drawn.ok()) return drawn;
    REEF_ASSIGN_OR_RETURN(int64_t first, drawn.Int(0, 0));
    REEF_ASSIGN_OR_RETURN(
        pg::PgResult copied,
        conn.CopyIn("COPY reef_events (position, id, type, tags, data, timestamp_ms, "
                    "correlation_id, causation_id, idempotency_key, user_metadata) FROM STDIN "
                    "(FORMAT binary)",
                    CopyInput(events, first)));
    if (!copied.ok()) return copied;
    pg::Params range;
    range.Int8(first).Int8(first + static_cast<int64_t>(events.size()) - 1);
    REEF_ASSIGN_OR_RETURN(
        pg::PgResult tagged,
        conn.Run("INSERT INTO reef_event_tags (tag, position) SELECT t, position FROM "
                 "reef_events, unnest(tags) AS t WHERE position BETWEEN $1 AND $2 "
                 "RETURNING NULL",
                 range));
    if (!tagged.ok()) return tagged;
    return conn.Run("SELECT $2::int8", range);
  };
  auto last = steps();
  if (!last.ok()) return last;  // connection lost: nothing more to say to it
  if (!last->ok()) {
    (void)conn.ExecScript("ROLLBACK", "append");
    return last;
  }
  REEF_RETURN_IF_ERROR(conn.ExecScript("COMMIT", "append"));
  return last;
}

// reef_append's SQLSTATEs: its condition failed; an id is already stored (unique violation).
constexpr std::string_view kConflictState = "RFCON";
constexpr std::string_view kUniqueViolation = "23505";

}  // namespace

// ---- PgCore ---------------------------------------------------------------------------------

PgCore::PgCore(std::string conninfo, PostgresEventStoreOptions options)
    : conninfo_(std::move(conninfo)), options_(std::move(options)) {
  pg::ConnectOptions connect{conninfo_};
  pool_ = std::make_unique<pg::Pool>(connect, options_.pool_size, options_.acquire_timeout);
  tracker_ = std::make_unique<HeadTracker>(connect, options_.poll_interval);
}

PgCore::~PgCore() {
  Close();
}

Status PgCore::Open() {
  if (options_.pool_size == 0 || options_.read_page_events == 0) {
    return Status::InvalidArgument("pool_size and read_page_events must be at least 1");
  }
  {
    REEF_ASSIGN_OR_RETURN(pg::Pool::Lease conn, pool_->Acquire());
    REEF_RETURN_IF_ERROR(MigrateEventSchema(*conn));
  }
  return tracker_->Start();
}

void PgCore::Close() {
  if (closed_.exchange(true)) return;
  tracker_->Stop();
}

std::string PgCore::ClosedMessage() const {
  return "the event store is closed";
}

Result<Position> PgCore::Append(std::vector<Event> events,
                                std::optional<AppendCondition> condition) {
  if (closed()) return Status::Unavailable(ClosedMessage());
  REEF_ASSIGN_OR_RETURN(std::vector<bool> timestamp_given,
                        detail::PrepareAppend(events, condition, options_.limits, UnixNowMs()));
  REEF_RETURN_IF_ERROR(CheckText(events));
  // A few events: one call of reef_append. More: COPY (docs/operations.md "PostgreSQL").
  const bool copy = events.size() > options_.copy_events;
  pg::Params params;
  if (!copy) AddEventArrays(events, params);
  REEF_RETURN_IF_ERROR(AddCheckParams(events, condition, options_.max_lock_keys, params));

  static constexpr const char* kSql =
      "SELECT reef_append($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, "
      "$17, $18)";
  // Each attempt lets go of its connection before it looks further (a second connection
  // taken while holding the first would let writers starve the pool of each other).
  for (int attempt = 0;; ++attempt) {
    int pid = 0;
    Result<pg::PgResult> ran = Status::Internal("not run");
    {
      REEF_ASSIGN_OR_RETURN(pg::Pool::Lease conn, pool_->Acquire());
      pid = conn->backend_pid();
      ran = copy ? CopyAppend(*conn, params, events) : conn->Run(kSql, params);
      // A statement cancelled inside reef_draw_positions would keep its session lock: a pooled
      // connection holds none, so let go of any before it goes back.
      if (ran.ok() && !ran->ok() && ran->sqlstate() != kConflictState &&
          ran->sqlstate() != kUniqueViolation && conn->healthy()) {
        (void)conn->Exec("SELECT pg_advisory_unlock_all()");
      }
    }
    if (!ran.ok()) {
      // The connection broke: the append may have committed. Find out on another connection
      // once the old one's server process is gone, then answer or append again.
      REEF_ASSIGN_OR_RETURN(bool committed, ResolveLost(pid, events));
      if (committed) {
        tracker_->NoteLocalAppend();
        return RetryOrDuplicate(events, timestamp_given);
      }
      if (attempt >= 2) return ran.status();
      continue;
    }
    const pg::PgResult& result = *ran;
    if (result.ok()) {
      REEF_ASSIGN_OR_RETURN(int64_t last, result.Int(0, 0));
      counters_.appends.fetch_add(1);
      counters_.events_written.fetch_add(events.size());
      tracker_->NoteLocalAppend();
      return static_cast<Position>(last);
    }
    const std::string state = result.sqlstate();
    if (state == kConflictState) {
      // A retry sent while its original was in flight waited for the original's locks and then
      // saw its events: a retry (or a reused id) is never a conflict.
      auto decided = RetryOrDuplicate(events, timestamp_given);
      if (decided.ok() || decided.status().code() != Code::kNotFound) return decided;
      counters_.conflicts.fetch_add(1);
      return Status::Conflict(fmt::format(
          "append condition failed: event {} matches fail_if_events_match and comes after {}",
          result.detail(), condition ? condition->after.value_or(0) : 0));
    }
    if (state == kUniqueViolation && attempt < 2) {
      auto decided = RetryOrDuplicate(events, timestamp_given);
      if (decided.ok() || decided.status().code() != Code::kNotFound) return decided;
      continue;  // the other append rolled back: try again
    }
    // A cancelled statement (statement_timeout, pg_cancel_backend) or a deadlock changed
    // nothing: the caller may try again.
    const bool retryable = state == "57014" || state == "40P01" || state == "55P03";
    return Status(retryable ? Code::kUnavailable : result.ToStatus().code(),
                  fmt::format("append failed: {}", result.ToStatus().message()));
  }
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
      if (gone.ok()) {
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
  p.UuidArray(ids);
  REEF_ASSIGN_OR_RETURN(
      pg::PgResult rows,
      conn->Exec(fmt::format("SELECT {}, xid::text, (SELECT count(*) FROM reef_events x WHERE "
                             "x.xid = e.xid)::text FROM reef_events e WHERE id = ANY($1) "
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
  std::string_view xid = rows.field(0, 10);
  for (size_t i = 0; retry && i < events.size(); ++i) {
    auto it = stored.find(events[i].id);
    retry = it != stored.end() && it->second.second == static_cast<int>(i) &&
            rows.field(static_cast<int>(i), 10) == xid;
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

Position PgCore::Head() const {
  // At most a second (metrics ask for it on every scrape): then the last head published.
  auto head = tracker_->FreshHead(std::min<std::chrono::milliseconds>(
      options_.read_barrier_timeout, std::chrono::milliseconds(1'000)));
  return head.ok() ? *head : tracker_->published();
}

EventStoreStats PgCore::Stats() const {
  EventStoreStats s;
  s.appends = counters_.appends.load();
  s.conflicts = counters_.conflicts.load();
  s.duplicate_ids = counters_.duplicate_ids.load();
  s.events_written = counters_.events_written.load();
  s.backend = "postgresql";
  s.connections = pool_->open_connections() + (tracker_->connected() ? 1 : 0);
  s.connect_failures = pool_->connect_failures();
  s.barrier_rounds = tracker_->rounds();
  s.barrier_waits = tracker_->waits();
  return s;
}

// ---- The EventStore handle --------------------------------------------------------------------

namespace {

class PgEventStore final : public EventStore {
 public:
  explicit PgEventStore(std::shared_ptr<PgCore> core) : core_(std::move(core)) {}
  ~PgEventStore() override { core_->Close(); }

  Result<Position> Append(std::vector<Event> events,
                          std::optional<AppendCondition> condition) override {
    return core_->Append(std::move(events), std::move(condition));
  }
  Result<ReadResult> Read(const Query& query, const ReadOptions& options) const override {
    ReadResult out;
    REEF_ASSIGN_OR_RETURN(out.head, core_->ReadEach(query, options, [&](const EventView& view) {
      out.events.push_back(view.ToEvent());
      return true;
    }));
    return out;
  }
  Result<Position> ReadEach(const Query& query, const ReadOptions& options,
                            const EventVisitor& visitor) const override {
    return core_->ReadEach(query, options, visitor);
  }
  Result<std::optional<SequencedEvent>> ReadById(const EventId& id) const override {
    return core_->ReadById(id);
  }
  Position Head() const override { return core_->Head(); }
  Result<std::unique_ptr<Subscription>> Subscribe(const Query& query, Position after) override {
    REEF_RETURN_IF_ERROR(ValidateQuery(query, core_->options().limits));
    if (core_->closed()) return Status::Unavailable(core_->ClosedMessage());
    return NewPgSubscription(core_, query, after);
  }
  EventStoreStats Stats() const override { return core_->Stats(); }
  const EventLimits& limits() const override { return core_->options().limits; }

 private:
  std::shared_ptr<PgCore> core_;
};

}  // namespace

}  // namespace reef::events::pg_store

namespace reef::events {

Result<std::unique_ptr<EventStore>> OpenPostgresEventStore(
    const std::string& conninfo, const PostgresEventStoreOptions& options) {
  auto core = std::make_shared<pg_store::PgCore>(conninfo, options);
  REEF_RETURN_IF_ERROR(core->Open());
  return std::unique_ptr<EventStore>(new pg_store::PgEventStore(std::move(core)));
}

}  // namespace reef::events
