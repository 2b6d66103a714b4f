// DurableImage: makes an actor group durable (issue 16; docs/operations.md "Durable image").
// It owns the group's image journal (journal.h); the runtime appends one record
// (image_record.h) at every change of one of the group's actors, on the thread that makes the
// change, and Open replays the journal into a RecoveredImage that Runtime::Restore brings back.
//
// The output gate: nothing that leaves the process may claim a change before its record is on
// disk. Every change of the group's actors happens on the group's home reactor and is appended
// there in the order it happened, so "everything appended so far is durable"
// (WhenAppendedDurable) covers any change made before the call. Changes inside the image need
// no gate: a message one actor sends another is recorded in the sender's commit record, before
// any record of what the receiver does with it, so a crash can lose the effect only together
// with its cause.
//
// Thread ownership: any thread. The group's records are appended on its home reactor.
#pragma once

#include <memory>
#include <set>
#include <string>

#include "actor/image_record.h"
#include "actor/journal.h"
#include "core/mutex.h"
#include "core/status.h"

namespace reef::actor {

class DurableImage {
 public:
  // Opens (or creates) the journal in options.dir and replays it into `recovered`.
  // Errors: those of Journal::Open (DataLoss for damage, Unavailable for I/O) and of
  // RecoveredImage::Apply (DataLoss naming the record's sequence number).
  static Result<std::unique_ptr<DurableImage>> Open(const JournalOptions& options,
                                                    RecoveredImage* recovered,
                                                    JournalRecovery* recovery = nullptr);
  DurableImage(const DurableImage&) = delete;
  DurableImage& operator=(const DurableImage&) = delete;

  // Runs `done(Ok)` once every record appended before this call is on disk, or
  // `done(Unavailable)` when the journal failed. `done` runs on the journal's writer thread or
  // on the caller's and must not block.
  void WhenAppendedDurable(Journal::Done done);

  // Appends `record`. When that fails (the journal failed, or a record over its size limit)
  // the image is failed for good: logged once, and WhenAppendedDurable answers Unavailable
  // from then on (the changes go on in memory, but none is acknowledged).
  void Append(std::string record);
  // True the first time `implementation_id` is asked for: its record is to be appended first.
  bool FirstUseOf(const std::string& implementation_id) EXCLUDES(mu_);

  JournalStats stats() const { return journal_->stats(); }

 private:
  explicit DurableImage(std::unique_ptr<Journal> journal) : journal_(std::move(journal)) {}

  std::unique_ptr<Journal> journal_;
  Mutex mu_;
  std::set<std::string, std::less<>> implementations_ GUARDED_BY(mu_);  // recorded ones
  Status failed_ GUARDED_BY(mu_);
};

}  // namespace reef::actor
