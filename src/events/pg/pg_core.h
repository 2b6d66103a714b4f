// PgCore: the PostgreSQL event store behind OpenPostgresEventStore (event_store.h), shared by
// the store's handle and its subscriptions. Its files:
//   pg_schema.cc        the tables, the append function, migrations (docs/operations.md)
//   pg_store.cc         the EventStore handle, Open, Close, figures
//   pg_append.cc        appends: the lock keys they take, grouping, COPY
//   pg_outcomes.cc      an append's outcome when the database left it open (lost
//                       connection, stored id, failed condition)
//   pg_reads.cc         reads by query and by id (SQL built per query)
//   pg_head.cc          HeadTracker: the read barrier (the safe head) and LISTEN/NOTIFY
//   pg_subscription.cc  subscriptions that follow the safe head
//
// How appends stay consistent (the @dcb-es design): an append takes transaction-scoped
// advisory locks, in one global order, on a hash of every (type, tag) pair its events carry
// (shared) and of every pair its condition could match (exclusive), checks the condition in the
// same transaction, and only then draws positions from the sequence and inserts, all in one
// call of a function under READ COMMITTED (reef_append_one, reef_append_group or reef_append). A
// writer whose events could match a condition therefore either commits before the condition is
// checked, or waits and draws later positions. Lock keys only ever make appends wait; conflicts
// come from the SQL check alone, so a hash collision never invents one.
//
// Why reads need a barrier: positions are drawn before commit, so position 7 may commit after
// position 8. A reader must not hand out 8 (or use 8 as a condition's `after`) while 7 may
// still appear. Writers hold a shared advisory lock (the barrier key) from before they draw a
// position until they commit; the safe head is the sequence's last value read while holding the
// barrier key exclusively, once in a while for all readers of the process (pg_head.cc).
//
// Thread ownership: any thread; the pool hands each call its own connection.
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "core/mutex.h"
#include "events/event_store.h"
#include "pg/pg.h"

namespace reef::events::pg_store {

// Advisory lock keys the event store keeps for itself (pg::kReefKeyNamespace).
inline constexpr int64_t kStoreLockKey = pg::kReefKeyNamespace | 1;  // every append (shared)
inline constexpr int64_t kBarrierKey = pg::kReefKeyNamespace | 2;    // appends in flight (shared)
// Drawing a block of positions (session lock, held for two sequence calls); reef_append passes
// p_barrier + 2.
inline constexpr int64_t kDrawKey = kBarrierKey + 2;

// The advisory lock key of a (type, tag) pair (`kind`: 'T' for a type alone, 'G' for a tag
// alone, 'P' for both; pg_append.cc). Collisions only make unrelated appends wait.
int64_t PairKey(std::string_view type, std::string_view tag, char kind);

// The NOTIFY channel announcing that some process appended.
inline constexpr const char* kEventsChannel = "reef_events";

// Creates or migrates the event store's tables on `conn` (pg_schema.cc).
// Errors: DataLoss when the database holds a newer schema version than this Reef knows.
Status MigrateEventSchema(pg::Connection& conn);
// The schema's migrations, oldest first (tests start from an earlier version).
std::span<const char* const> EventSchemaMigrations();

// The safe head: the highest position below which every position is settled, published to
// readers and subscribers (pg_head.cc).
class HeadTracker {
 public:
  HeadTracker(pg::ConnectOptions connect, std::chrono::milliseconds poll_interval);
  ~HeadTracker();

  // Starts the tracking thread. Errors: Unavailable when the database cannot be reached.
  Status Start();
  // Stops it; waiters get Unavailable.
  void Stop();

  // A safe head computed after this call began: every append acknowledged before the call is
  // at or below it. Blocks up to `timeout`. Errors: Unavailable (timeout, store closed).
  Result<Position> FreshHead(std::chrono::milliseconds timeout);
  // The latest safe head published (never blocks; may lag).
  Position published() const;
  // Waits until the published head passes `seen` or `deadline` passes; false when stopped.
  bool WaitPast(Position seen, std::chrono::steady_clock::time_point deadline);
  // An append of this process committed: tell other processes, and compute a new head soon
  // when this process has subscribers.
  void NoteLocalAppend();
  // A subscription of this process began (+1) or ended (-1).
  void AddSubscriber(int delta);
  // The last error of the tracking connection ("" when healthy).
  std::string last_error() const;
  bool stopped() const;
  // Rounds run, and those that waited for appends in flight (metrics).
  uint64_t rounds() const { return rounds_.load(); }
  uint64_t waits() const { return waits_.load(); }
  bool connected() const { return connected_.load(); }

 private:
  void Loop(std::unique_ptr<pg::Connection> conn);
  // One round (reef_safe_head): the safe head, or nullopt when an append kept the barrier key
  // past the round's lock_timeout. Errors: Unavailable (connection lost), Internal.
  Result<std::optional<Position>> Round(pg::Connection& conn);
  // Waits for a wake-up, a notification on `conn` or `timeout`, whichever comes first.
  void WaitForWork(pg::Connection& conn, std::chrono::microseconds timeout);
  // Makes the thread run a round soon.
  void Wake();

  const pg::ConnectOptions connect_;
  const std::chrono::milliseconds poll_interval_;
  int wake_fd_ = -1;  // eventfd: a round is wanted
  std::thread thread_;
  std::atomic<uint64_t> rounds_{0};
  std::atomic<uint64_t> waits_{0};
  std::atomic<bool> connected_{false};

  mutable Mutex mu_;
  CondVar cv_;
  bool stopping_ GUARDED_BY(mu_) = false;
  bool round_wanted_ GUARDED_BY(mu_) = false;
  bool notify_wanted_ GUARDED_BY(mu_) = false;
  int subscribers_ GUARDED_BY(mu_) = 0;
  uint64_t started_ GUARDED_BY(mu_) = 0;    // rounds begun
  uint64_t completed_ GUARDED_BY(mu_) = 0;  // the number of the last round that finished
  Position published_ GUARDED_BY(mu_) = 0;
  std::string last_error_ GUARDED_BY(mu_);
};

// Counters (EventStoreStats).
struct PgCounters {
  std::atomic<uint64_t> appends{0};
  std::atomic<uint64_t> conflicts{0};
  std::atomic<uint64_t> duplicate_ids{0};
  std::atomic<uint64_t> events_written{0};
};

// A small append waiting to be written with others in one transaction (group commit;
// pg_append.cc). The thread that runs the group fills in the outcome under PgCore's group lock.
struct GroupedAppend {
  enum class Kind {
    kWaiting,   // not yet run
    kWritten,   // position: its last position
    kConflict,  // its condition failed; position: the first matching event
    kAlone,     // the group wrote nothing or may have (connection lost): append on its own
    kFailed,    // status: the database could not be reached (the outcome unknown)
  };
  struct Outcome {
    Kind kind = Kind::kWaiting;
    int64_t position = 0;
    Status status;
  };
  const std::vector<Event>* events = nullptr;
  const std::optional<AppendCondition>* condition = nullptr;
  std::vector<int64_t> keys;       // its lock keys, sorted (LockKeys)
  std::vector<uint8_t> exclusive;  // per key
  uint64_t bytes = 0;              // its bytes as stored (StoredBytes)
  Outcome outcome;
};

class PgCore : public std::enable_shared_from_this<PgCore> {
 public:
  PgCore(std::string conninfo, PostgresEventStoreOptions options);
  ~PgCore();

  Status Open();
  void Close();
  bool closed() const { return closed_.load(); }

  Result<Position> Append(std::vector<Event> events, std::optional<AppendCondition> condition);
  // Reads up to the fresh safe head (pg_reads.cc).
  Result<Position> ReadEach(const Query& query, const ReadOptions& options,
                            const EventVisitor& visitor) const;
  // Reads events matching `query` in (after, up_to], at most `limit`, ascending (for
  // subscriptions; no barrier: the caller passes a safe head).
  Result<std::vector<SequencedEvent>> ReadRange(const Query& query, Position after, Position up_to,
                                                uint32_t limit) const;
  Result<std::optional<SequencedEvent>> ReadById(const EventId& id) const;
  Position Head() const;
  EventStoreStats Stats() const;

  const PostgresEventStoreOptions& options() const { return options_; }
  HeadTracker& tracker() const { return *tracker_; }
  std::string ClosedMessage() const;

 private:
  // Decides whether an append refused for a stored id is a retry of one that committed (its
  // last position) or reuses an id (DuplicateEventId). NotFound when none of its ids is
  // stored (the append that held them rolled back).
  Result<Position> RetryOrDuplicate(const std::vector<Event>& events,
                                    const std::vector<bool>& timestamp_given) const;
  // One append in a transaction of its own (reef_append, or COPY for large ones), retrying
  // and telling retries from conflicts.
  Result<Position> AppendAlone(const std::vector<Event>& events,
                               const std::optional<AppendCondition>& condition,
                               const std::vector<bool>& timestamp_given);
  // The answer to an append whose condition matched the event at `matching` (a retry of an
  // append in flight also meets its own events).
  Result<Position> Conflicted(const std::string& matching, const std::vector<Event>& events,
                              const std::optional<AppendCondition>& condition,
                              const std::vector<bool>& timestamp_given);
  // Counts an append this process wrote (last position `last`) and tells the head tracker.
  Position Written(const std::vector<Event>& events, int64_t last);
  // The next group from the front of the queue (at least one append).
  std::vector<GroupedAppend*> TakeGroup() REQUIRES(group_mu_);
  // Writes `group` in one call of reef_append_group; returns each member's outcome (without
  // touching the members, which other threads read under group_mu_).
  std::vector<GroupedAppend::Outcome> RunGroup(std::span<GroupedAppend* const> group);
  // After the connection running an append (server process `pid`) broke: ends that process,
  // then reports whether the append committed. Errors: Unavailable when PostgreSQL stays
  // unreachable for acquire_timeout.
  Result<bool> ResolveLost(int pid, const std::vector<Event>& events);

  const std::string conninfo_;
  const PostgresEventStoreOptions options_;
  std::unique_ptr<pg::Pool> pool_;
  std::unique_ptr<HeadTracker> tracker_;
  std::atomic<bool> closed_{false};
  mutable PgCounters counters_;

  Mutex group_mu_;
  CondVar group_cv_;
  std::deque<GroupedAppend*> group_queue_ GUARDED_BY(group_mu_);
  uint32_t groups_running_ GUARDED_BY(group_mu_) = 0;
};

// A subscription following the safe head (pg_subscription.cc).
std::unique_ptr<Subscription> NewPgSubscription(std::shared_ptr<PgCore> core, Query query,
                                                Position after);

// Decodes one row of the event columns (kEventColumns, binary format) at `row` of `result`
// into `view` (pg_reads.cc). Errors: DataLoss for a malformed row.
Status DecodeEventRow(const pg::PgResult& result, int row, EventView& view);
// The columns DecodeEventRow reads, in its order.
extern const char* const kEventColumns;

// `query` without the items that name a type or tag holding U+0000: PostgreSQL's text holds
// none, so no stored event carries one (docs/operations.md "Text"). nullopt when nothing is
// left to match; a query with no items (every event) is kept as it is (pg_reads.cc).
std::optional<Query> Matchable(const Query& query);

}  // namespace reef::events::pg_store
