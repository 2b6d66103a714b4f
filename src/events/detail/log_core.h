// LogCore: the embedded event store behind OpenEventStore (event_store.h), shared by the
// store's handle and its subscriptions, so a subscription that outlives its handle fails
// cleanly instead of touching freed memory. Not a public header. Its methods are defined by
// topic, one file each in src/events:
//   log_store.cc         the EventStore handle, OpenEventStore's option checks, closing, counters
//   log_segments.cc      segment files: Open (lock, recovery), creating, mapping, writing frames
//   log_writer.cc        appends: validation on the caller's thread, group commit on the writer
//   log_reads.cc         reads, and the lookups by position and id that every part shares
//   log_subscription.cc  subscriptions: catching up by reading, then following live appends
//
// Thread ownership: the public methods may be called from any thread (Open first, once). The
// members below are grouped by who owns them: constant after construction, Open and then the
// writer thread, index_mu_, queue_mu_ and subs_mu_.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/mutex.h"
#include "core/status.h"
#include "events/detail/event_id_index.h"
#include "events/detail/event_index.h"
#include "events/detail/subscription_state.h"
#include "events/event.h"
#include "events/event_store.h"

namespace reef::events::detail {

// The most segment files one store holds.
inline constexpr uint32_t kMaxSegments = 1u << 16;

// One segment file, mapped read-only over `mapped` bytes (at least its size; pages past the
// end of the file are never touched).
struct Segment {
  std::filesystem::path path;
  int fd = -1;
  const uint8_t* base = nullptr;
  uint64_t mapped = 0;
  uint64_t size = 0;  // bytes written and synced (writer-owned after open)
};

// An append on its way through the writer.
struct AppendRequest {
  std::vector<Event> events;             // normalized
  std::string body;                      // the events' records
  std::vector<uint32_t> record_offsets;  // of each record in `body`
  uint32_t body_crc = 0;
  std::vector<bool> timestamp_given;  // [i]: the client set event i's timestamp
  std::optional<AppendCondition> condition;
  std::promise<Result<Position>> done;
  Result<Position> result = Status::Internal("not decided");
  bool decided = false;           // result holds the answer (once the batch is durable)
  bool staged = false;            // written in this batch (not a conflict or a retry)
  bool needs_this_batch = false;  // a retry whose original is staged in this same batch
};

class LogCore : public std::enable_shared_from_this<LogCore> {
 public:
  LogCore(std::filesystem::path dir, EventStoreOptions options);
  ~LogCore();

  // ---- Opening (log_segments.cc) -------------------------------------------------------

  // Locks the directory, recovers every segment into the index and starts the writer.
  // REQUIRES: called once, before any other method.
  Status Open();

  // ---- The EventStore operations (log_writer.cc, log_reads.cc; Stats in log_store.cc) ---

  // EventStore::Append: validates and encodes on the caller's thread, then waits for the
  // writer to answer.
  Result<Position> Append(std::vector<Event> events, std::optional<AppendCondition> condition);
  Result<Position> ReadEach(const Query& query, const ReadOptions& options,
                            const EventVisitor& visitor) const;
  Position Head() const { return head_.load(); }
  Result<std::optional<SequencedEvent>> ReadById(const EventId& id) const;
  EventStoreStats Stats() const;
  const EventStoreOptions& options() const { return options_; }
  // Events at the given positions (REQUIRES: each <= Head()), in order.
  Result<std::vector<SequencedEvent>> EventsAt(const std::vector<Position>& positions) const;

  // ---- Subscriptions (log_subscription.cc) -----------------------------------------------

  // Makes `sub` live when nothing was appended since the read that ended at `read_head`: from
  // then on the writer pushes every matching event to it. False when the head moved.
  bool GoLive(const std::shared_ptr<SubscriptionState>& sub, Position read_head);
  void Unsubscribe(const std::shared_ptr<SubscriptionState>& sub);

  // ---- Closing (log_store.cc) ------------------------------------------------------------

  // Closed, or failed after a write error: subscriptions end either way.
  bool ended() const { return closed_flag_.load() || failed_.load(); }
  std::string ClosedMessage() const;
  // Refuses further appends, lets the writer finish what is queued, and wakes subscribers.
  void Close();

 private:
  struct Base {
    std::atomic<const uint8_t*> pointer{nullptr};
    std::atomic<uint64_t> mapped{0};
  };

  Status Decode(Position position, Location location, EventView& view) const;
  // The position at or below `bound` holding `id`. Staged positions count when `bound` passes
  // the head, which only the writer thread may ask; others hold index_mu_ and pass the head.
  std::optional<Position> FindId(const EventId& id, Position bound) const;
  // The id at `position`, for growing the id index (writer thread).
  EventId IdAt(Position position) const;
  // The event at `position` (REQUIRES: <= index_.last()) as the writer sees it: from the log
  // when durable, else from the request staged earlier in this batch (not in the file yet).
  bool ViewAt(Position position, EventView& view) const;

  // ---- Segments (log_segments.cc) --------------------------------------------------------

  uint64_t SegmentCapacity() const;
  Status MapSegment(Segment& segment);
  Status StartSegment(Position first);
  // Reads one segment file into the index. In the last file, a torn frame at the end (an
  // append that was never acknowledged) is cut away; anywhere else, a bad frame is DataLoss.
  Status Recover(const std::filesystem::path& path, bool last_file);
  Status Rewrite(Segment& s, Position first);
  // Empty when a whole, intact frame starting at `first` lies at `offset`; else what is wrong.
  static std::string CheckFrame(const Segment& s, uint64_t offset, Position first);
  // True when a whole frame with intact checksums, starting at position `first` or later,
  // lies at `at`.
  static bool IntactFrameAt(const Segment& s, uint64_t at, Position first);
  // Whether the bad frame at `offset` (in the last segment, where position `first` comes
  // next) is the torn end of an append that was never acknowledged, rather than damage to
  // acknowledged data. A torn end has no intact frame after it: when its own header is whole,
  // nothing intact where the frame says it ends; when not, nothing intact anywhere after it.
  static bool IsTornEnd(const Segment& s, uint64_t offset, Position first);
  // Writes `buffer` at `offset` of the active segment and syncs it.
  Status Flush(const std::string& buffer, uint64_t offset);

  // ---- The writer (log_writer.cc) --------------------------------------------------------

  void WriterLoop();
  void WriteBatch(std::vector<std::unique_ptr<AppendRequest>>& batch);
  // Settles `request` without writing when it must not be written: a retry of events already
  // stored, an id stored before, or a failed condition. Checks against everything staged so
  // far. True when settled.
  bool Decide(AppendRequest& request);
  // Event ids are unique in the store. When every event of `request` is already stored, the
  // same, at consecutive positions in order, it is a retry and gets their last position;
  // otherwise any id stored before refuses it (DuplicateEventId). False when no id is stored.
  bool DecideIds(AppendRequest& request);
  // Adds `request`'s events to the index (invisible to readers until Publish) and fixes its
  // positions; its frame starts at byte `frame_offset` of the active segment.
  void Stage(AppendRequest& request, uint64_t frame_offset);
  // A write or sync failed: what the kernel holds is unknown, so no further append is
  // accepted until the store is reopened (which recovers from what is really on disk).
  void Fail(Position durable);
  // Makes the batch visible: the new head, then live subscribers get their events.
  void Publish(const std::vector<std::unique_ptr<AppendRequest>>& batch);

  // Wakes every subscriber waiting for events, so it sees the store closed or failed
  // (log_subscription.cc).
  void WakeSubscribers() REQUIRES(subs_mu_);

  // index_ and ids_ read without index_mu_, which only their one writer may do: the writer
  // thread (also through FindId, IdAt and ViewAt), and Open before the writer starts. Every
  // other reader holds index_mu_ shared; the writer holds it exclusively to change them.
  const EventIndex& WriterIndex() const NO_THREAD_SAFETY_ANALYSIS { return index_; }
  const EventIdIndex& WriterIds() const NO_THREAD_SAFETY_ANALYSIS { return ids_; }

  // ---- State -----------------------------------------------------------------------------

  // Constant after construction.
  const std::filesystem::path dir_;
  const EventStoreOptions options_;
  int lock_fd_ = -1;

  // Segment mappings by number, readable without a lock (set once each, never moved).
  std::unique_ptr<Base[]> bases_;
  // Owned by Open, then by the writer thread.
  std::vector<Segment> segments_;
  std::thread writer_;
  // Owned by the writer thread: the requests staged in the batch being written, by first
  // position (retry checks read them before they reach the file).
  std::vector<std::pair<Position, const AppendRequest*>> staged_;
  uint64_t torn_bytes_ = 0;               // cut from the end of the log when it was opened
  uint64_t duplicate_ids_recovered_ = 0;  // ids stored more than once by an older Reef

  // Protected by index_mu_ (the writer holds it exclusively only to stage or drop entries, and
  // reads them without it: WriterIndex, WriterIds).
  mutable SharedMutex index_mu_;
  EventIndex index_ GUARDED_BY(index_mu_);
  EventIdIndex ids_ GUARDED_BY(index_mu_);
  // The last durable, visible position; written under subs_mu_.
  std::atomic<Position> head_{0};
  std::atomic<bool> failed_{false};
  std::atomic<bool> closed_flag_{false};

  // Protected by queue_mu_.
  Mutex queue_mu_;
  CondVar queue_cv_;
  std::deque<std::unique_ptr<AppendRequest>> queue_ GUARDED_BY(queue_mu_);
  bool closing_ GUARDED_BY(queue_mu_) = false;

  // Protected by subs_mu_.
  Mutex subs_mu_;
  std::vector<std::shared_ptr<SubscriptionState>> subs_ GUARDED_BY(subs_mu_);

  std::atomic<uint64_t> appends_{0}, conflicts_{0}, duplicates_{0}, syncs_{0}, events_written_{0};
};

// A subscription to `query` after position `after`, reading from and registered with `core`
// (log_subscription.cc). REQUIRES: `query` is valid (ValidateQuery).
std::unique_ptr<Subscription> NewLogSubscription(std::shared_ptr<LogCore> core, Query query,
                                                 Position after);

}  // namespace reef::events::detail
