// Appends to the PostgreSQL event store (pg_core.h): the advisory lock keys they take, the
// parameters of reef_append, reef_append_one and reef_append_group (pg_schema.cc), the COPY path
// for large appends, grouping small appends into one transaction, and what the database's errors
// mean (the open cases are decided in pg_outcomes.cc).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>

#include "core/clock.h"
#include "events/detail/store_rules.h"
#include "events/pg/pg_core.h"

namespace reef::events::pg_store {

int64_t PairKey(std::string_view type, std::string_view tag, char kind) {
  std::string text;
  text.reserve(3 + type.size() + tag.size());
  text += kind;
  text += type;
  text += '\0';
  text += tag;
  return pg::HashedLockKey(text);
}

namespace {

// The keys of an append, sorted: shared for every (type, tag) pair, (type, any tag) and
// (any type, tag) its events carry, exclusive for what each condition item could match (one
// of its tags suffices: a matching event carries them all). A condition on every event, or more
// keys than `max_keys`, takes the store-wide key exclusively instead, which every append holds
// shared.
// Lock keys wanted, each exclusive if any wanter wants it so; ascending (std::map): the one
// global order every append and group takes them in.
class KeySet {
 public:
  void Want(int64_t key, bool exclusive) {
    auto [it, inserted] = wanted_.emplace(key, exclusive);
    if (!inserted) it->second = it->second || exclusive;
  }
  size_t size() const { return wanted_.size(); }
  // The keys in order and, per key, whether exclusive.
  void Split(std::vector<int64_t>& keys, std::vector<uint8_t>& exclusive) const {
    keys.clear();
    exclusive.clear();
    for (const auto& [key, excl] : wanted_) {
      keys.push_back(key);
      exclusive.push_back(excl);
    }
  }

 private:
  std::map<int64_t, bool> wanted_;  // key -> exclusive
};

void LockKeys(const std::vector<Event>& events, const std::optional<AppendCondition>& condition,
              uint32_t max_keys, std::vector<int64_t>& keys, std::vector<uint8_t>& exclusive) {
  KeySet wanted;
  bool store_wide = false;
  if (condition) {
    const Query& q = condition->fail_if_events_match;
    if (q.MatchesAll()) store_wide = true;
    for (const QueryItem& item : q.items) {
      std::string_view tag = item.tags.empty() ? std::string_view() : item.tags.front();
      char kind = item.tags.empty() ? 'T' : (item.types.empty() ? 'G' : 'P');
      if (item.types.empty()) {
        wanted.Want(PairKey({}, tag, kind), true);
      } else {
        for (const std::string& type : item.types) wanted.Want(PairKey(type, tag, kind), true);
      }
    }
  }
  for (const Event& event : events) {
    if (store_wide || wanted.size() > max_keys) break;
    wanted.Want(PairKey(event.type, {}, 'T'), false);
    for (const std::string& tag : event.tags) {
      wanted.Want(PairKey({}, tag, 'G'), false);
      wanted.Want(PairKey(event.type, tag, 'P'), false);
    }
  }
  if (store_wide || wanted.size() > max_keys) {
    keys.assign(1, kStoreLockKey);
    exclusive.assign(1, true);
    return;
  }
  wanted.Want(kStoreLockKey, false);
  wanted.Split(keys, exclusive);
}

// PostgreSQL's text holds no NUL character; the embedded store's strings may.
Status CheckNoNul(std::string_view text, std::string_view field, size_t index) {
  if (text.find('\0') == std::string_view::npos) return Status::Ok();
  return Status::InvalidArgument(
      fmt::format("event {}: the {} contains U+0000, which the PostgreSQL event store cannot hold",
                  index, field));
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

// The events of one or more appends as reef_append's ten arrays, built up append by append.
struct EventArrays {
  std::vector<EventId> ids;
  std::vector<std::string_view> types, tags, data, corr, caus, idem, user;
  std::vector<int32_t> tag_ends;
  std::vector<int64_t> ts;

  void Add(const std::vector<Event>& events) {
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
  }
  void AddTo(pg::Params& p) const {
    p.UuidArray(ids).TextArray(types).TextArray(tags).Int4Array(tag_ends).ByteaArray(data);
    p.Int8Array(ts).TextArray(corr).TextArray(caus).TextArray(idem).TextArray(user);
  }
};

// The items of one or more conditions as the flat arrays reef_condition_hit reads.
struct ConditionArrays {
  std::vector<std::string_view> types, tags;
  std::vector<int32_t> type_ends, tag_ends;

  void Add(const std::optional<AppendCondition>& condition) {
    if (!condition) return;
    for (const QueryItem& item : condition->fail_if_events_match.items) {
      types.insert(types.end(), item.types.begin(), item.types.end());
      tags.insert(tags.end(), item.tags.begin(), item.tags.end());
      type_ends.push_back(static_cast<int32_t>(types.size()));
      tag_ends.push_back(static_cast<int32_t>(tags.size()));
    }
  }
  void AddTo(pg::Params& p) const {
    p.TextArray(types).Int4Array(type_ends).TextArray(tags).Int4Array(tag_ends);
  }
};

// A condition's `after` as the database's bigint.
int64_t AfterValue(const AppendCondition& condition) {
  return static_cast<int64_t>(std::min<Position>(condition.after.value_or(0), INT64_MAX));
}

// The events, at positions `first`, `first` + 1, ..., as the binary input of COPY reef_events.
std::string CopyInput(const std::vector<Event>& events, int64_t first) {
  pg::BinaryCopy copy;
  int64_t position = first;
  for (const Event& e : events) {
    const EventMetadata& m = e.metadata;
    std::vector<std::string_view> tags(e.tags.begin(), e.tags.end());
    copy.Row(11);
    copy.Int8(position++);
    copy.Uuid(e.id);
    copy.Bytes(e.type);
    copy.TextArray(tags);
    copy.Bytes(e.data);
    copy.Int8(m.timestamp_ms);
    copy.Bytes(m.correlation_id);
    copy.Bytes(m.causation_id);
    copy.Bytes(m.idempotency_key);
    copy.Bytes(m.user);
    copy.Int8(first);  // append_first
  }
  return copy.Finish();
}

// reef_append_check's eight parameters (the lock keys from LockKeys, the barrier key, the
// condition), appended to `p`.
void AddCheckParams(const std::vector<int64_t>& keys, const std::vector<uint8_t>& exclusive,
                    const std::optional<AppendCondition>& condition, pg::Params& p) {
  p.Int8Array(keys).BoolArray(exclusive).Int8(kBarrierKey);
  if (condition) {
    p.Int8(AfterValue(*condition));
  } else {
    p.Null(pg::Oid::kInt8);
  }
  ConditionArrays items;
  items.Add(condition);
  items.AddTo(p);
}

int32_t LockTimeoutMs(std::chrono::milliseconds lock_timeout) {
  return static_cast<int32_t>(std::clamp<int64_t>(lock_timeout.count(), 1, INT32_MAX));
}

// reef_append_group's parameters for `group` (its lock keys: the union of the members').
pg::Params GroupParams(std::span<GroupedAppend* const> group,
                       std::chrono::milliseconds lock_timeout) {
  EventArrays events;
  ConditionArrays items;
  std::vector<int32_t> event_ends, item_ends;
  std::vector<int64_t> afters;
  KeySet keys;
  for (const GroupedAppend* member : group) {
    events.Add(*member->events);
    event_ends.push_back(static_cast<int32_t>(events.ids.size()));
    afters.push_back(*member->condition ? AfterValue(**member->condition) : -1);
    items.Add(*member->condition);
    item_ends.push_back(static_cast<int32_t>(items.type_ends.size()));
    for (size_t k = 0; k < member->keys.size(); ++k) {
      keys.Want(member->keys[k], member->exclusive[k] != 0);
    }
  }
  std::vector<int64_t> key_list;
  std::vector<uint8_t> exclusive;
  keys.Split(key_list, exclusive);
  pg::Params p;
  events.AddTo(p);
  p.Int4Array(event_ends).Int8Array(key_list).BoolArray(exclusive).Int8(kBarrierKey);
  p.Int8Array(afters).Int4Array(item_ends);
  items.AddTo(p);
  p.Int4(LockTimeoutMs(lock_timeout));
  return p;
}

// reef_append_one's parameters for a group of one append of one event.
pg::Params OneParams(const GroupedAppend& append, std::chrono::milliseconds lock_timeout) {
  const Event& e = append.events->front();
  const EventMetadata& m = e.metadata;
  std::vector<std::string_view> tags(e.tags.begin(), e.tags.end());
  pg::Params p;
  p.Uuid(e.id).Text(e.type).TextArray(tags).Bytea(e.data).Int8(m.timestamp_ms);
  p.Text(m.correlation_id).Text(m.causation_id).Text(m.idempotency_key).Text(m.user);
  AddCheckParams(append.keys, append.exclusive, *append.condition, p);
  p.Int4(LockTimeoutMs(lock_timeout));
  return p;
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
                    "correlation_id, causation_id, idempotency_key, user_metadata, append_first) "
                    "FROM STDIN "
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

Result<Position> PgCore::Append(std::vector<Event> events,
                                std::optional<AppendCondition> condition) {
  if (closed()) return Status::Unavailable(ClosedMessage());
  REEF_ASSIGN_OR_RETURN(std::vector<bool> timestamp_given,
                        detail::PrepareAppend(events, condition, options_.limits, UnixNowMs()));
  REEF_RETURN_IF_ERROR(CheckText(events));
  // A condition's terms holding U+0000 match nothing here (as in the embedded store): left
  // out, and a condition left with nothing to match cannot fail.
  if (condition) {
    std::optional<Query> matchable = Matchable(condition->fail_if_events_match);
    if (!matchable) {
      condition.reset();
    } else {
      condition->fail_if_events_match = std::move(*matchable);
    }
  }
  // Large appends go through COPY, each in its own transaction (docs/operations.md
  // "PostgreSQL"); small ones join a group.
  if (events.size() > options_.copy_events || options_.group_appends <= 1) {
    return AppendAlone(events, condition, timestamp_given);
  }
  GroupedAppend me;
  me.events = &events;
  me.condition = &condition;
  for (const Event& e : events) me.bytes += StoredBytes(e);
  LockKeys(events, condition, options_.max_lock_keys, me.keys, me.exclusive);
  {
    // Whoever finds a transaction slot free runs the appends waiting (in order, itself among
    // them or not) as one group; the rest wait for their outcome.
    MutexLock lock(group_mu_);
    group_queue_.push_back(&me);
    while (me.outcome.kind == GroupedAppend::Kind::kWaiting) {
      if (groups_running_ >= options_.group_transactions || group_queue_.empty()) {
        group_cv_.Wait(group_mu_);
        continue;
      }
      std::vector<GroupedAppend*> group = TakeGroup();
      ++groups_running_;
      lock.Unlock();
      std::vector<GroupedAppend::Outcome> outcomes = RunGroup(group);
      lock.Lock();
      --groups_running_;
      for (size_t i = 0; i < group.size(); ++i) group[i]->outcome = std::move(outcomes[i]);
      group_cv_.NotifyAll();
    }
  }
  switch (me.outcome.kind) {
    case GroupedAppend::Kind::kWritten:
      return Written(events, me.outcome.position);
    case GroupedAppend::Kind::kConflict:
      return Conflicted(std::to_string(me.outcome.position), events, condition, timestamp_given);
    case GroupedAppend::Kind::kFailed:
      return me.outcome.status;
    default:
      return AppendAlone(events, condition, timestamp_given);
  }
}

Position PgCore::Written(const std::vector<Event>& events, int64_t last) {
  counters_.appends.fetch_add(1);
  counters_.events_written.fetch_add(events.size());
  tracker_->NoteLocalAppend();
  return static_cast<Position>(last);
}

std::vector<GroupedAppend*> PgCore::TakeGroup() {
  // At most group_appends appends, copy_events events and max_append_bytes bytes (one call's
  // arrays stay as small as one append's), and 2 x max_lock_keys lock keys (PostgreSQL's lock
  // table is shared by every session).
  std::vector<GroupedAppend*> group;
  size_t events = 0, keys = 0;
  uint64_t bytes = 0;
  while (!group_queue_.empty() && group.size() < options_.group_appends) {
    GroupedAppend* next = group_queue_.front();
    events += next->events->size();
    keys += next->keys.size();
    bytes += next->bytes;
    if (!group.empty() &&
        (events > options_.copy_events || keys > 2 * size_t{options_.max_lock_keys} ||
         bytes > options_.limits.max_append_bytes)) {
      break;
    }
    group.push_back(next);
    group_queue_.pop_front();
  }
  return group;
}

std::vector<GroupedAppend::Outcome> PgCore::RunGroup(std::span<GroupedAppend* const> group) {
  std::vector<GroupedAppend::Outcome> outcomes(group.size());
  auto all = [&](GroupedAppend::Kind kind, const Status& status) {
    for (GroupedAppend::Outcome& o : outcomes) o = {kind, 0, status};
    return outcomes;
  };
  // A lone append of one event calls reef_append_one, cheaper than a group of one
  // (pg_schema.cc).
  const bool one = group.size() == 1 && group.front()->events->size() == 1;
  const pg::Params params = one ? OneParams(*group.front(), options_.group_lock_timeout)
                                : GroupParams(group, options_.group_lock_timeout);
  int pid = 0;
  Result<pg::PgResult> ran = Status::Internal("not run");
  {
    auto conn = pool_->Acquire();
    if (!conn.ok()) return all(GroupedAppend::Kind::kFailed, conn.status());
    pid = (*conn)->backend_pid();
    ran = (*conn)->RunPrepared(
        one ? "SELECT reef_append_one($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, "
              "$14, $15, $16, $17, $18)"
            : "SELECT reef_append_group($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, "
              "$14, $15, $16, $17, $18, $19, $20, $21)",
        params);
    // A statement cancelled inside reef_draw_positions would keep its session lock.
    if (ran.ok() && !ran->ok() && ran->sqlstate() != kConflictState &&
        ran->sqlstate() != kUniqueViolation && (*conn)->healthy()) {
      (void)(*conn)->Exec("SELECT pg_advisory_unlock_all()");
    }
  }
  if (!ran.ok()) {
    // The connection broke: the group may have committed, or still may. Once its server
    // process is gone (else the outcome is unknown), each append goes again on its own: one
    // the group wrote then meets its own ids or events and is answered as a retry.
    auto gone = ResolveLost(pid, *group.front()->events);
    if (!gone.ok()) return all(GroupedAppend::Kind::kFailed, gone.status());
    tracker_->NoteLocalAppend();  // some of the group may have committed
    return all(GroupedAppend::Kind::kAlone, Status::Ok());
  }
  // An id already stored, a deadlock, a lock held elsewhere past the group's lock_timeout, a
  // cancelled statement: nothing was written; each append goes again on its own, where such
  // cases are told apart (and a lock is waited for by the appends that need it only).
  if (!ran->ok() || ran->rows() != static_cast<int>(group.size())) {
    const std::string state = ran->sqlstate();
    if (state != kUniqueViolation && state != "55P03" && state != "40P01" && state != "57014") {
      spdlog::warn("PostgreSQL event store: a group of {} appends failed ({}); sending them alone",
                   group.size(), ran->ok() ? "wrong number of rows" : ran->ToStatus().message());
    }
    return all(GroupedAppend::Kind::kAlone, Status::Ok());
  }
  for (size_t i = 0; i < group.size(); ++i) {
    auto value = ran->Int(static_cast<int>(i), 0);
    // (Committed, but unreadable: sent again, each append is answered as a retry.)
    if (!value.ok()) {
      tracker_->NoteLocalAppend();
      return all(GroupedAppend::Kind::kAlone, Status::Ok());
    }
    outcomes[i].kind = *value > 0 ? GroupedAppend::Kind::kWritten : GroupedAppend::Kind::kConflict;
    outcomes[i].position = *value > 0 ? *value : -*value;
  }
  return outcomes;
}

Result<Position> PgCore::AppendAlone(const std::vector<Event>& events,
                                     const std::optional<AppendCondition>& condition,
                                     const std::vector<bool>& timestamp_given) {
  const bool copy = events.size() > options_.copy_events;
  pg::Params params;
  if (!copy) {
    EventArrays arrays;
    arrays.Add(events);
    arrays.AddTo(params);
  }
  std::vector<int64_t> keys;
  std::vector<uint8_t> exclusive;
  LockKeys(events, condition, options_.max_lock_keys, keys, exclusive);
  AddCheckParams(keys, exclusive, condition, params);

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
      ran = copy ? CopyAppend(*conn, params, events) : conn->RunPrepared(kSql, params);
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
      return Written(events, last);
    }
    const std::string state = result.sqlstate();
    if (state == kConflictState) {
      return Conflicted(result.detail(), events, condition, timestamp_given);
    }
    if (state == kUniqueViolation && attempt < 2) {
      auto decided = RetryOrDuplicate(events, timestamp_given);
      if (decided.ok()) tracker_->NoteLocalAppend();  // perhaps written by a lost group
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

}  // namespace reef::events::pg_store
