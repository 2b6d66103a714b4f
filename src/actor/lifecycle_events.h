// LifecycleEvents: the image's stream of actor lifecycle events (spawned, committed, failed,
// stopped, restarted, ...; spec 001 "runa-actor owns ... statuses and lifecycle events").
//
// Publish gives each event the next image-wide sequence number (1, 2, 3, ...) and keeps the
// last LifecycleEventsOptions::retained events (10,000) in memory for non-destructive Recent
// reads; Subscribe registers a server-side filter (kinds, actors) and receives matching
// FUTURE events through a bounded Broadcast subscription that fails explicitly when it lags
// (actor/broadcast.h).
//
// Thread ownership: any thread; all methods are thread-safe. Lock order:
// LifecycleEvents::mu_ before the Broadcast's locks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "actor/broadcast.h"
#include "core/mutex.h"
#include "core/status.h"
#include "core/value.h"

namespace reef::actor {

// The lifecycle event kinds, one row each: enumerator, stable lowercase name (protocol, CLI),
// and what happened to the actor.
#define REEF_LIFECYCLE_KINDS(X)                                                \
  X(kSpawned, "spawned", "created with its first incarnation")                 \
  X(kCommitted, "committed", "a handler finished and its new state committed") \
  X(kFailed, "failed", "a handler failed; detail holds the reason")            \
  X(kStopped, "stopped", "stopped; it takes no more input until restarted")    \
  X(kRestarted, "restarted", "started again as a new incarnation")             \
  X(kPaused, "paused", "no longer scheduled until resumed")                    \
  X(kResumed, "resumed", "scheduled again after a pause")                      \
  X(kInstalled, "installed", "switched implementation; detail holds its id")   \
  X(kMigrated, "migrated", "its state was replaced by a host migration")       \
  X(kLog, "log", "logged an entry (actor/log_store.h)")                        \
  X(kRemoved, "removed", "removed for good; detail counts the dropped messages")

enum class LifecycleKind : std::uint8_t {
#define REEF_X(name, text, summary) name,
  REEF_LIFECYCLE_KINDS(REEF_X)
#undef REEF_X
};

// Number of LifecycleKind enumerators.
inline constexpr std::size_t kLifecycleKindCount = 0
#define REEF_X(name, text, summary) +1
    REEF_LIFECYCLE_KINDS(REEF_X)
#undef REEF_X
    ;

// Stable lowercase name of `kind`, e.g. "spawned".
std::string_view LifecycleKindName(LifecycleKind kind);
// One-line description of `kind`, from the table.
std::string_view LifecycleKindSummary(LifecycleKind kind);
// Parses a lowercase kind name. Errors: InvalidArgument listing the valid names.
Result<LifecycleKind> ParseLifecycleKind(std::string_view name);

struct LifecycleEvent {
  std::uint64_t seq = 0;  // image-wide, increasing, starts at 1
  LifecycleKind kind = LifecycleKind::kSpawned;
  ActorRef actor;
  std::uint32_t incarnation = 0;  // the actor's incarnation the event belongs to
  std::string detail;             // UTF-8; e.g. a failure reason or an implementation id
  std::int64_t unix_ms = 0;       // wall-clock time of Publish, milliseconds since 1970 UTC
};

// Which events a Recent read or a subscription wants.
struct LifecycleFilter {
  std::vector<LifecycleKind> kinds;  // empty = every kind
  std::vector<ActorRef> actors;      // empty = every actor

  // True when `event` has one of `kinds` and is about one of `actors` (empty: any).
  bool Matches(const LifecycleEvent& event) const;
};

// One page of retained events, in increasing seq order.
struct LifecyclePage {
  std::vector<LifecycleEvent> events;
  // Pass as `after_seq` to read the next page: the seq of the last event examined (returned
  // or filtered out), or the requested after_seq when none was.
  std::uint64_t next_after = 0;
  bool more = false;  // true when retained events after next_after remain to be examined
  // Oldest retained seq at read time; a reader whose after_seq + 1 is below it missed events.
  std::uint64_t first_retained = 0;
};

struct LifecycleEventsOptions {
  std::size_t retained = 10000;          // events kept for Recent; older ones are evicted
  std::size_t subscriber_buffer = 1024;  // events a subscription buffers before it lags
  std::size_t max_page_events = 10000;   // largest `limit` Recent accepts
};

class LifecycleEvents {
 public:
  explicit LifecycleEvents(LifecycleEventsOptions options = {});
  LifecycleEvents(const LifecycleEvents&) = delete;
  LifecycleEvents& operator=(const LifecycleEvents&) = delete;

  // Records the event, delivers it to matching subscribers (never blocking on them), and
  // returns its seq. REQUIRES: `detail` is UTF-8 and bounded by the caller.
  std::uint64_t Publish(LifecycleKind kind, ActorRef actor, std::uint32_t incarnation,
                        std::string detail);

  // Up to `limit` retained events with seq > `after_seq` that `filter` matches, in seq order.
  // Non-destructive. Errors: InvalidArgument when `limit` is 0 or over max_page_events.
  Result<LifecyclePage> Recent(std::uint64_t after_seq, std::size_t limit,
                               const LifecycleFilter& filter = {}) const;

  // Subscribes to the events published from now on that `filter` matches, in seq order.
  // The subscription buffers subscriber_buffer events and fails explicitly when it lags;
  // Close it (or drop it) to unsubscribe.
  std::shared_ptr<Subscription<LifecycleEvent>> Subscribe(const LifecycleFilter& filter);

  // The seq of the last published event (0 before the first).
  std::uint64_t last_seq() const;
  const LifecycleEventsOptions& options() const { return options_; }

 private:
  // Constant after construction.
  const LifecycleEventsOptions options_;

  // Protected by mu_.
  mutable Mutex mu_;
  std::uint64_t last_seq_ GUARDED_BY(mu_) = 0;
  std::deque<LifecycleEvent> recent_ GUARDED_BY(mu_);  // consecutive seqs, oldest first

  // Any thread (it has its own locks). Published under mu_ so subscribers see events in seq
  // order.
  Broadcast<LifecycleEvent> subscribers_;
};

}  // namespace reef::actor
