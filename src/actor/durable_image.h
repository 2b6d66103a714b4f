// DurableImage: makes an actor group durable (issue 16; docs/operations.md "Durable image").
// It owns the group's image journal (journal.h) in one directory; the runtime appends one
// record (image_record.h) at every change of one of the group's actors, on the thread that
// makes the change, and Open loads the newest snapshot (image_snapshot.h) and replays the
// journal after it into a RecoveredImage that Runtime::Restore brings back.
//
// The output gate: no op answer or "changed" notification claims a change before its record is
// on disk (reads — inspect, ps, events, logs — show the live image, which may be a few
// milliseconds ahead of the disk). Every change of an actor is appended on the reactor that
// owns it, in the order it happened, so "everything appended so far is durable"
// (WhenAppendedDurable), asked on that reactor after the change, covers it. Changes inside the
// group need no gate: a message one actor sends another is recorded in the sender's commit
// record, before any record of what the receiver does with it, so a crash can lose the effect
// only together with its cause.
//
// Groups spread over several reactors (a free-running group: program unit instances) write
// routed commits: a send to an actor on another reactor is in flight, by origin number, until
// the target's reactor records its arrival. Replay keeps in-flight messages aside and puts
// each in its target's mailbox at its arrival record, so every mailbox comes back in the order
// it had. Open records the arrival of every message still in flight at the end (a crash came
// between the send and its arrival), at the end of its target's mailbox, before anything else.
//
// Compaction: a background thread rebuilds the image from the last snapshot and the journal
// files closed since (never the file being written, never the live actors), writes it as a new
// snapshot, and removes those files and the old snapshot. So the journal holds only the changes
// since the last snapshot and a restart replays a bounded amount.
//
// Thread ownership: any thread, except that Append and AppendImplementation run where the
// change they record happens (the reactor owning the actor), since their order is the
// journal's.
#pragma once

#include <atomic>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "actor/image_record.h"
#include "actor/journal.h"
#include "core/metrics.h"
#include "core/mutex.h"
#include "core/status.h"

namespace reef::actor {

struct DurableImageOptions {
  JournalOptions journal;  // journal.dir is the durable image's directory
  ValueLimits value_limits;
  // Compact once the closed journal files hold this many bytes, and at least as many as the
  // last snapshot (so a large image is not rewritten for a few changes). 0: never on its own.
  uint64_t compact_after_bytes = 64ull << 20;
};

struct DurableImageStats {
  JournalStats journal;
  uint64_t snapshot_seq = 0;    // the journal record the current snapshot includes (0: none)
  uint64_t snapshot_bytes = 0;  // its size (0: none, or not written by this process)
  uint64_t compactions = 0;     // done by this process
};

class DurableImage {
 public:
  // Locks the directory (`LOCK`: one process at a time), loads the newest snapshot and replays
  // the journal records after it into `recovered`, and starts the compaction thread.
  // Errors: Unavailable (I/O, or another process holds the lock); DataLoss (a damaged snapshot
  // or journal, records missing between the snapshot and the journal, or a record refused by
  // RecoveredImage::Apply, naming its number).
  static Result<std::unique_ptr<DurableImage>> Open(const DurableImageOptions& options,
                                                    RecoveredImage* recovered,
                                                    JournalRecovery* recovery = nullptr);
  // Stops the compaction thread (a compaction under way finishes), then closes the journal
  // after writing what was appended.
  ~DurableImage();
  DurableImage(const DurableImage&) = delete;
  DurableImage& operator=(const DurableImage&) = delete;

  // Runs `done(Ok)` once every record appended before this call is on disk, or
  // `done(Unavailable)` when the journal failed. `done` runs on the journal's writer thread or
  // on the caller's and must not block.
  void WhenAppendedDurable(Journal::Done done);

  // REQUIRES: on the reactor that owns the actor the record is about (the runtime's
  // records, durable_group.cc). Appends `record`. When that fails (the journal failed, or a
  // record over its size limit) the image is failed for good: logged once, and
  // WhenAppendedDurable answers Unavailable from then on (the changes go on in memory, but
  // none is acknowledged).
  void Append(std::string record);
  // Appends `implementation`'s record unless it was appended (or recovered) before. A second
  // reactor asking for the same one returns once the first has appended it, so no record
  // naming it can precede it.
  void AppendImplementation(const Implementation& implementation) EXCLUDES(first_use_mu_);
  // A number no message in flight has (routed commits), unique since Open. Any thread.
  uint64_t NextOrigin() { return next_origin_.fetch_add(1); }

  // Compacts every closed journal file now (what the background thread does when they grow).
  // Errors: those of reading the snapshot and the files (DataLoss, Unavailable) and of writing
  // the new snapshot (Unavailable); the journal and the old snapshot stay as they were then.
  Status CompactNow() EXCLUDES(compact_mu_);

  DurableImageStats stats() const EXCLUDES(mu_);
  // Adds the durable image's series to a /metrics scrape (docs/http-api.md "Durable image
  // metrics"): reef_image_journal_records_total, reef_image_journal_syncs_total,
  // reef_image_journal_largest_batch, reef_image_snapshot_record, reef_image_compactions_total,
  // each labelled runtime="<runtime>" ("image", "programs": the runtime metrics' label).
  void CollectMetrics(std::string_view runtime, MetricFamilies& out) const EXCLUDES(mu_);

 private:
  DurableImage(const DurableImageOptions& options, int lock_fd)
      : options_(options), lock_fd_(lock_fd) {}
  void CompactLoop();

  const DurableImageOptions options_;
  const int lock_fd_;
  std::unique_ptr<Journal> journal_;

  Mutex first_use_mu_;
  std::set<std::string, std::less<>> implementations_ GUARDED_BY(first_use_mu_);  // recorded
  std::atomic<uint64_t> next_origin_{1};

  mutable Mutex mu_;
  Status failed_ GUARDED_BY(mu_);
  uint64_t snapshot_seq_ GUARDED_BY(mu_) = 0;
  uint64_t snapshot_bytes_ GUARDED_BY(mu_) = 0;
  uint64_t compactions_ GUARDED_BY(mu_) = 0;
  bool stopping_ GUARDED_BY(mu_) = false;
  CondVar stop_;  // signalled when stopping_ is set

  Mutex compact_mu_;  // one compaction at a time
  std::thread compactor_;
};

}  // namespace reef::actor
