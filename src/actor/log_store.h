// LogStore: the image's actor logs (spec 001 "Actor repair and logging"): the retained tail
// of every actor's accepted log entries, readable in pages, plus live follow subscriptions.
//
// - Every accepted entry gets the next image-wide sequence number (1, 2, 3, ...).
// - The store keeps each actor's last LogStoreOptions::retained_per_actor entries (1,000),
//   in memory only. Retention is keyed by ActorRef, not incarnation, so it survives restart;
//   Forget drops an actor's tail (when the actor is deleted).
// - History reads are non-destructive pages in sequence order, merged across actors.
// - Follow registers a server-side filter and receives only matching FUTURE entries, in
//   sequence order, through a bounded Broadcast subscription that fails explicitly when it
//   lags (actor/broadcast.h).
//
// The CALLER enforces the per-actor minimum level (lower-severity entries are neither stored
// nor sent, so they never reach Append) and reports an over-long message to the guest as an
// explicit failure (TransitionLimits::max_log_message_bytes). Append re-checks the size and
// the encoding as a defence and rejects, never truncates.
//
// Logging is diagnostic output, not a transaction: an appended entry stays even if the
// invocation that logged it fails, is cancelled or is killed.
//
// Thread ownership: any thread; all methods are thread-safe. Lock order: LogStore::mu_ before
// the Broadcast's locks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "actor/broadcast.h"
#include "actor/guest_abi.h"
#include "core/mutex.h"
#include "core/status.h"
#include "core/value.h"

namespace reef::actor {

// One accepted log entry.
struct LogEntry {
  std::uint64_t seq = 0;          // image-wide, increasing, starts at 1
  ActorRef actor;                 // the actor that logged it
  std::uint32_t incarnation = 0;  // the actor's incarnation when it logged
  LogLevel level = LogLevel::kInfo;
  std::string message;       // UTF-8, at most LogStoreOptions::max_message_bytes bytes
  std::int64_t unix_ms = 0;  // wall-clock time of Append, milliseconds since 1970 UTC
};

// Which entries a History read or a Follow subscription wants.
struct LogFilter {
  std::vector<ActorRef> actors;  // empty = every actor; duplicates are harmless
  LogLevel min_level = LogLevel::kTrace;

  // True when `entry` is from one of `actors` (or any, when empty) at min_level or above.
  bool Matches(const LogEntry& entry) const;
};

// One page of history, in increasing seq order.
struct LogPage {
  std::vector<LogEntry> entries;
  // Pass as `after_seq` to read the next page: the seq of the last entry returned, or the
  // requested after_seq when the page is empty.
  std::uint64_t next_after = 0;
  bool more = false;  // true when matching entries after next_after were retained at read time
};

struct LogStoreOptions {
  std::size_t retained_per_actor = 1000;  // entries kept per actor; older ones are evicted
  std::size_t subscriber_buffer = 1024;   // entries a Follow subscription buffers before it lags
  std::size_t max_message_bytes = 512;    // UTF-8 bytes per message (spec 001)
  std::size_t max_page_entries = 10000;   // largest `limit` History accepts
};

class LogStore {
 public:
  explicit LogStore(LogStoreOptions options = {});
  LogStore(const LogStore&) = delete;
  LogStore& operator=(const LogStore&) = delete;

  // Stores `message` as the next entry of `actor` and delivers it to matching followers.
  // Returns its seq. REQUIRES: the caller already applied the actor's minimum level.
  // Errors: LimitExceeded when `message` is over max_message_bytes UTF-8 bytes;
  // InvalidArgument when it is not valid UTF-8. A rejected message consumes no seq.
  Result<std::uint64_t> Append(ActorRef actor, std::uint32_t incarnation, LogLevel level,
                               std::string message);

  // Drops every retained entry of `actor`; later Appends for it start a new tail. Followers
  // are unaffected. A no-op for an actor without entries.
  void Forget(ActorRef actor);

  // Up to `limit` retained entries matching `filter` with seq > `after_seq`, in seq order.
  // Non-destructive. Cost: O(A + limit * log A) for A actors with entries after `after_seq`,
  // plus the entries skipped by min_level. Errors: InvalidArgument when `limit` is 0 or over
  // max_page_entries.
  Result<LogPage> History(const LogFilter& filter, std::uint64_t after_seq,
                          std::size_t limit) const;

  // Subscribes to the entries appended from now on that `filter` matches, in seq order.
  // The subscription buffers subscriber_buffer entries and fails explicitly when it lags;
  // Close it (or drop it) to unsubscribe.
  std::shared_ptr<Subscription<LogEntry>> Follow(const LogFilter& filter);

  // The seq of the last accepted entry (0 before the first).
  std::uint64_t last_seq() const;
  // Entries retained for `actor` (0 for an unknown actor).
  std::size_t retained(const ActorRef& actor) const;
  const LogStoreOptions& options() const { return options_; }

 private:
  // Constant after construction.
  const LogStoreOptions options_;

  // Protected by mu_: writers (Append, Forget) hold it exclusively, readers shared.
  mutable SharedMutex mu_;
  std::uint64_t last_seq_ GUARDED_BY(mu_) = 0;
  std::map<ActorRef, std::deque<LogEntry>> by_actor_ GUARDED_BY(mu_);  // each in seq order

  // Any thread (it has its own locks). Published under mu_ (exclusive) so followers see
  // entries in seq order.
  Broadcast<LogEntry> followers_;
};

}  // namespace reef::actor
