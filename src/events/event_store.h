// EventStore: Reef's DCB event store (dcb.events; spec 000). Append with a condition, read by
// query, the head, and subscriptions that catch up and then follow live. Positions are opaque
// u64s; nothing above src/events assumes how or where events are kept.
//
// Two backends (docs/operations.md "Event store"):
//  - embedded (OpenEventStore), the default: a segment log in one directory; an append is
//    acknowledged only once it is on disk (fdatasync), and concurrent appends share one sync
//    (group commit). One process.
//  - PostgreSQL (OpenPostgresEventStore): tables in a database that several Reef processes
//    share; an append is acknowledged once its transaction committed.
//
// Thread ownership: every method of EventStore and Subscription may be called from any
// thread. Append and Subscription::Next block (Next for at most its timeout).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "events/event.h"

namespace reef::events {

// A stored event seen in place, without copying: valid only during the visitor call that
// receives it. `tags` holds the event's distinct tags; `data` its bytes.
struct EventView {
  Position position = 0;
  std::string_view type;
  std::vector<std::string_view> tags;
  std::string_view data;
  EventId id{};
  int64_t timestamp_ms = 0;
  std::string_view correlation_id;
  std::string_view causation_id;
  std::string_view idempotency_key;
  std::string_view user_metadata;  // EventMetadata::user

  // An owned copy.
  SequencedEvent ToEvent() const;
  // A view of `event` (valid while `event` lives and is not changed).
  static EventView Of(const SequencedEvent& event);
  // Its size as stored, counted like StoredBytes(const Event&) (event.h).
  uint64_t StoredBytes() const;
};

// Receives events in read order; returns false to stop the read early. It runs without any of
// the store's locks held, but must not call back into the store that is reading.
using EventVisitor = std::function<bool(const EventView&)>;

// A subscription: events matching a query after a position, in position order, with no hole
// and no repeat. It starts by catching up from the store, then follows new appends through a
// bounded buffer; a subscriber too slow for that buffer falls back to catching up from its
// own position instead of losing events.
class Subscription {
 public:
  virtual ~Subscription() = default;

  // The next events, at most `max_events` (≥ 1), waiting up to `timeout` for at least one.
  // An empty vector means none arrived in time. Errors: Unavailable once the store is closed
  // or failed.
  virtual Result<std::vector<SequencedEvent>> Next(size_t max_events,
                                                   std::chrono::milliseconds timeout) = 0;

  // The position of the last event delivered (the `after` it was created with at first).
  virtual Position position() const = 0;
  // True while following live appends; false while catching up.
  virtual bool live() const = 0;
  // How many times the live buffer overflowed and the subscription fell back to catching up.
  virtual uint64_t fallbacks() const = 0;
};

// Counters of one store since it was opened (for metrics and benchmarks).
struct EventStoreStats {
  uint64_t appends = 0;         // acknowledged append requests
  uint64_t conflicts = 0;       // requests refused by their condition
  uint64_t duplicate_ids = 0;   // requests refused for reusing a stored event id
  uint64_t syncs = 0;           // fdatasync calls made for appends (group commits)
  uint64_t events_written = 0;  // events made durable
  // Bytes cut from the end of the log when the store was opened: a torn append that was never
  // acknowledged (or, indistinguishably, damage to the very last frame). 0 after a clean stop.
  uint64_t torn_bytes_cut = 0;
  // Events of a log written by an older Reef whose id an earlier event already had (ReadById
  // finds the earlier one).
  uint64_t duplicate_ids_recovered = 0;
  // Bytes of memory the id index takes (docs/benchmarks.md: the cost of unique ids).
  uint64_t id_index_bytes = 0;

  // Which backend: "embedded" or "postgresql". The counters below are PostgreSQL's (0 for the
  // embedded store).
  std::string_view backend = "embedded";
  uint64_t connections = 0;       // database connections open now (pool and head follower)
  uint64_t connect_failures = 0;  // failed attempts to connect
  uint64_t barrier_rounds = 0;    // safe-head rounds (the read barrier)
  uint64_t barrier_waits = 0;     // rounds that had to wait for appends in flight
};

class EventStore {
 public:
  virtual ~EventStore() = default;

  // Appends `events` atomically (all or none) at head+1.. and returns the last position
  // written, once durable. Event ids are unique in the store:
  //  - when every event is already stored, unchanged (id, type, tags, data, metadata; the
  //    timestamp only when given), at consecutive positions in this order, the append is a
  //    retry: it returns their original last position and writes nothing, whatever the
  //    condition says (the condition was checked when they were written);
  //  - otherwise an id the store already holds refuses the append (DuplicateEventId, naming
  //    the id and the position holding it).
  // When `condition` is given, the append fails with Conflict if an event after
  // `condition->after` matches `condition->fail_if_events_match`.
  // Each event is normalized first (NormalizeEvent: repeated tags dropped, nil id and zero
  // timestamp filled). Ids must differ within one append (InvalidArgument).
  // Errors: InvalidArgument (no events, a bad event or query), LimitExceeded (event or append
  // too large), DuplicateEventId, Conflict (the condition), Unavailable (the store is closed,
  // or failed after a write or sync error: reopen it).
  virtual Result<Position> Append(std::vector<Event> events,
                                  std::optional<AppendCondition> condition = std::nullopt) = 0;

  // The events matching `query`, per `options` (event.h: ReadOptions, ReadResult).
  // Errors: InvalidArgument (a bad query).
  virtual Result<ReadResult> Read(const Query& query, const ReadOptions& options = {}) const = 0;

  // Like Read, but hands each event to `visitor` in place instead of copying it; stops when
  // the visitor returns false. Returns the head for the events visited (ReadResult::head).
  virtual Result<Position> ReadEach(const Query& query, const ReadOptions& options,
                                    const EventVisitor& visitor) const = 0;

  // The durable event with id `id`, or nullopt when the store holds none (an O(1) lookup in
  // the store's id index).
  virtual Result<std::optional<SequencedEvent>> ReadById(const EventId& id) const = 0;

  // The position of the last durable event; 0 when the store is empty.
  virtual Position Head() const = 0;

  // A subscription to events matching `query` at positions after `after`.
  // Errors: InvalidArgument (a bad query), Unavailable (the store is closed).
  virtual Result<std::unique_ptr<Subscription>> Subscribe(const Query& query, Position after) = 0;

  virtual EventStoreStats Stats() const = 0;
  virtual const EventLimits& limits() const = 0;
};

struct EventStoreOptions {
  EventLimits limits;
  // Bytes per segment file; a new file starts when the next append would not fit. Raised to
  // limits.max_append_bytes plus framing when smaller.
  uint64_t segment_bytes = 256u << 20;
  // Bytes of appends written together before one fdatasync (group commit), at most.
  uint64_t max_batch_bytes = 64u << 20;
  // Events a live subscription buffers for a slow subscriber before falling back to catch-up.
  size_t subscription_buffer_events = 4096;
  // Positions one read searches per hold of the index lock; between holds the writer may
  // publish, so a query that matches little never stalls appends for a whole scan.
  uint64_t read_window_positions = 1 << 16;
};

// Opens (creating when absent) the embedded event store in directory `dir`. Recovers after a
// crash: a torn append at the end of the log (one never acknowledged) is cut away; anything
// else unreadable is refused. One process at a time: the directory is locked.
// Errors: Unavailable (I/O error, the directory is locked by another process), DataLoss (an
// acknowledged part of the log is unreadable; the message names the file and offset),
// InvalidArgument (options).
Result<std::unique_ptr<EventStore>> OpenEventStore(const std::filesystem::path& dir,
                                                   const EventStoreOptions& options = {});

struct PostgresEventStoreOptions {
  EventLimits limits;
  // Connections the store keeps for appends and reads (each blocks one while it runs), besides
  // the one that follows the head and listens for other processes' appends.
  size_t pool_size = 16;
  // How long an append or read waits for a free connection before Unavailable.
  std::chrono::milliseconds acquire_timeout{10'000};
  // How long a read waits for the appends in flight when it started to commit or roll back
  // (the read barrier) before Unavailable.
  std::chrono::milliseconds read_barrier_timeout{10'000};
  // How often the head is checked when no notification arrives (LISTEN/NOTIFY is the fast
  // path; this is the fallback).
  std::chrono::milliseconds poll_interval{1'000};
  // Events a read fetches per statement.
  uint32_t read_page_events = 1'000;
  // Appends of more events than this go through COPY; smaller ones through one call of the
  // stored procedure reef_append.
  uint32_t copy_events = 200;
  // Lock keys one append may take ((type, tag) pairs of its events and its condition); an
  // append needing more takes the store-wide lock instead, excluding every other append while
  // it commits.
  uint32_t max_lock_keys = 64;
  // Small appends that arrive while others are being written wait and are then written
  // together, up to this many in one transaction (group commit: one commit, one WAL flush for
  // all; each keeps its own condition and answer). 1 writes every append in its own.
  uint32_t group_appends = 32;
  // Transactions of grouped appends one store runs at once.
  uint32_t group_transactions = 2;
  // How long a group waits for any one of its appends' lock keys held by another transaction
  // before its appends are sent alone (then only those needing the key wait for it); >= 1 ms.
  std::chrono::milliseconds group_lock_timeout{50};
};

// Opens the PostgreSQL event store in the database `conninfo` names (a libpq connection string
// or postgresql:// URI), creating or migrating its tables (docs/operations.md "PostgreSQL").
// Positions come from a sequence: ascending in commit-safe order, one append's events
// adjacent, but with gaps where an append rolled back. Reads and subscriptions
// see an event only once every position below it is settled (committed or abandoned), so none
// is ever skipped. Any number of processes may open the same database.
// Errors: Unavailable (the database cannot be reached), DataLoss (its tables are from a newer
// Reef or not Reef's), InvalidArgument (options).
Result<std::unique_ptr<EventStore>> OpenPostgresEventStore(
    const std::string& conninfo, const PostgresEventStoreOptions& options = {});

}  // namespace reef::events
