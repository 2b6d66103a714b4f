// Journal: an append-only log of opaque records with group commit, the storage of the durable
// image (issue 16, docs/operations.md "Image journal").
//
// Why a log: the image's writes are small transitions that must be on disk before anything
// leaves them, many per second. storage_candidates measured on this VM (fdatasync p50
// 141 us): an appended frame 90 us p50 and 10.5 k single commits/s, 564 k records/s in
// batches of 100; SQLite (WAL) 154 us, 6.3 k/s, 275 k rows/s; LMDB 266 us, 3.7 k/s. A log
// writes each record once; SQLite would rewrite B-tree pages per transition.
//
// Files: `dir`/journal-<first sequence number, 20 digits>.log, mode 0600 (`dir` is created
// 0700). One process at a time: the caller locks the directory (DurableImage does). Each file
// is a 32-byte header ("REEF-IMAGE-JRNL1", its first sequence number u64, zero u64) and frames
// (core/frame.h, magic "JRNL"): one frame per batch, its body the batch's records, each a u32
// length and the bytes. Sequence numbers start at JournalOptions::first_seq (1) and run on
// without a gap from file to file; a file is closed and the next begun once it passes
// `segment_bytes`.
//
// Recovery (Open): every file is read and checked before any record is handed out. A frame
// that is cut short or fails a checksum at the end of the last file, with no intact frame
// after it, is a torn write: the file is cut there (Recovery says how much). Anything else —
// a bad frame with an intact one after it, a wrong file header, a gap or overlap between
// files — is damage: Open fails with DataLoss naming the file and the byte offset, and
// nothing is replayed.
//
// Durability: Append queues a record and returns its sequence number at once; the one writer
// thread takes everything queued (up to max_batch_bytes), writes it as one frame with one
// write, calls fdatasync once, and then runs the WhenDurable callbacks up to the batch's last
// number. A failed write or sync fails the journal for good (no retry: after a failed
// fdatasync the page cache may already have dropped the data): every waiting and later call
// gets Unavailable.
//
// Thread ownership: Append, WhenDurable, WaitDurable, durable() and stats() on any thread;
// the writer thread does all file I/O after Open. WhenDurable callbacks run on the writer
// thread (or on the caller's, when already durable or failed) and must not block.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/mutex.h"
#include "core/status.h"

namespace reef::actor {

struct JournalOptions {
  std::filesystem::path dir;
  uint64_t segment_bytes = 64ull << 20;  // a file this large is closed and the next begun
  size_t max_batch_bytes = 4u << 20;     // one frame carries at most this much (one record more)
  size_t max_record_bytes = 64u << 20;   // Append refuses larger records (LimitExceeded)
  // The number of the first record when `dir` holds no journal file (after a compaction
  // removed them all, the snapshot's record + 1).
  uint64_t first_seq = 1;
};

// A journal file no longer written to: records first_seq..last_seq.
struct JournalFile {
  std::filesystem::path path;
  uint64_t first_seq = 0;
  uint64_t last_seq = 0;
  uint64_t bytes = 0;
};

// What Open found.
struct JournalRecovery {
  uint64_t records = 0;     // replayed
  size_t files = 0;         // read
  uint64_t torn_bytes = 0;  // cut from the end of the last file (0: it ended cleanly)
};

struct JournalStats {
  uint64_t records = 0;        // appended since Open
  uint64_t batches = 0;        // frames written, one fdatasync each
  uint64_t largest_batch = 0;  // records in the largest frame
  uint64_t bytes = 0;          // frame bytes written
  uint64_t durable = 0;        // highest sequence number known on disk
};

class Journal {
 public:
  // Called once per intact record, in sequence order. An error stops Open and is returned.
  using Replay = std::function<Status(uint64_t seq, std::string_view record)>;
  using Done = std::function<void(Status)>;

  // Opens (or creates) the journal in options.dir, replaying its records through `replay`.
  // Errors: DataLoss (damage, above); Unavailable (a file or the directory cannot be read,
  // written or synced); whatever `replay` returns.
  static Result<std::unique_ptr<Journal>> Open(const JournalOptions& options, const Replay& replay,
                                               JournalRecovery* recovery = nullptr);
  // Writes what was appended, then stops the writer.
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  // Queues `record` and returns its sequence number; it is durable once WhenDurable says so.
  // Errors: LimitExceeded (over max_record_bytes); Unavailable (the journal failed).
  Result<uint64_t> Append(std::string record) EXCLUDES(mu_);
  // Runs `done(Ok)` once every record up to `seq` is on disk, or `done(Unavailable)` if the
  // journal fails first (or is destroyed before writing it).
  void WhenDurable(uint64_t seq, Done done) EXCLUDES(mu_);
  // Blocks until WhenDurable(seq) would run; its status.
  Status WaitDurable(uint64_t seq);
  uint64_t durable() const EXCLUDES(mu_);
  // Fails the journal for good because of `why` (its user could not record a change, so later
  // records must not follow on disk): nothing more is written, every waiting and later call
  // gets Unavailable. What is on disk stays a consistent prefix. Idempotent.
  void Abandon(Status why) EXCLUDES(mu_);

  // Compaction (durable_image.h): the files closed so far (rotated away from; oldest first),
  // reading one back, and removing those whose records all come at or before `seq`.
  std::vector<JournalFile> ClosedFiles() const EXCLUDES(mu_);
  // Replays every record of a closed file. Errors: DataLoss (not intact, or not holding
  // exactly its records), Unavailable (cannot read), whatever `replay` returns.
  static Status ReadClosedFile(const JournalFile& file, const Replay& replay);
  // Errors: Unavailable (a file cannot be removed, the directory not synced).
  Status RemoveThrough(uint64_t seq) EXCLUDES(mu_);
  // The sequence number of the last record appended (0: none yet).
  uint64_t appended() const EXCLUDES(mu_);
  JournalStats stats() const EXCLUDES(mu_);

 private:
  struct Pending {
    uint64_t seq;
    std::string record;
  };

  explicit Journal(const JournalOptions& options);
  void WriterLoop();
  // Writes `batch` as one frame and syncs it (rotating first if the file is full).
  Status WriteBatch(const std::vector<Pending>& batch);
  Status StartFile(uint64_t first_seq);
  void Fail(Status why) REQUIRES(mu_);

  const JournalOptions options_;
  // Writer thread only (and Open, before it starts).
  int fd_ = -1;
  std::filesystem::path path_;
  uint64_t current_first_ = 0;  // the first record number of `path_`
  uint64_t file_bytes_ = 0;

  mutable Mutex mu_;
  CondVar wake_;
  std::vector<Pending> queue_ GUARDED_BY(mu_);
  uint64_t next_seq_ GUARDED_BY(mu_) = 1;
  uint64_t durable_ GUARDED_BY(mu_) = 0;
  Status failed_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  std::multimap<uint64_t, Done> waiters_ GUARDED_BY(mu_);
  JournalStats stats_ GUARDED_BY(mu_);
  std::vector<JournalFile> closed_ GUARDED_BY(mu_);
  std::thread writer_;
};

}  // namespace reef::actor
