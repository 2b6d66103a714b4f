#include "actor/durable_image.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "actor/image_snapshot.h"
#include "core/files.h"

namespace reef::actor {

Result<std::unique_ptr<DurableImage>> DurableImage::Open(const DurableImageOptions& options,
                                                         RecoveredImage* recovered,
                                                         JournalRecovery* recovery) {
  const std::filesystem::path& dir = options.journal.dir;
  std::error_code ec;
  REEF_RETURN_IF_ERROR(CreatePrivateDirectory(dir, "durable image"));
  REEF_ASSIGN_OR_RETURN(int lock_fd,
                        LockExclusively(dir / "LOCK", fmt::format("image {}", dir.string())));
  std::unique_ptr<DurableImage> image(new DurableImage(options, lock_fd));

  REEF_ASSIGN_OR_RETURN(const uint64_t snapshot, LoadImageSnapshot(dir, recovered));
  // Checked before the journal opens (which would begin a new file): a compaction never
  // removes the file being written, which begins right after the snapshot, so a snapshot with
  // no journal file beginning at or before the record after it means files were lost.
  if (snapshot > 0) {
    uint64_t oldest_file = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
      const std::string name = entry.path().filename().string();
      if (!name.starts_with("journal-") || !name.ends_with(".log") || name.size() != 32) continue;
      const uint64_t first = std::strtoull(name.c_str() + 8, nullptr, 10);
      if (oldest_file == 0 || first < oldest_file) oldest_file = first;
    }
    if (oldest_file == 0 || oldest_file > snapshot + 1) {
      return Status::DataLoss(fmt::format(
          "durable image {}: the snapshot ends at record {} but {}: journal files are missing",
          dir.string(), snapshot,
          oldest_file == 0 ? std::string("there is no journal file")
                           : fmt::format("the journal begins at record {}", oldest_file)));
    }
  }
  JournalOptions journal = options.journal;
  journal.first_seq = snapshot + 1;
  uint64_t first_replayed = 0;
  auto replay = [&](uint64_t seq, std::string_view record) -> Status {
    if (seq <= snapshot) return Status::Ok();  // in the snapshot already (compaction crashed)
    if (first_replayed == 0 && seq > snapshot + 1) {
      return Status::DataLoss(fmt::format(
          "durable image {}: the snapshot ends at record {} but the journal resumes at {}",
          dir.string(), snapshot, seq));
    }
    first_replayed = seq;
    Status applied = recovered->Apply(record);
    if (applied.ok()) return applied;
    return Status::DataLoss(
        fmt::format("{} (record {} of the journal in {})", applied.message(), seq, dir.string()));
  };
  JournalRecovery found;
  REEF_ASSIGN_OR_RETURN(image->journal_, Journal::Open(journal, replay, &found));
  if (recovery != nullptr) *recovery = found;
  const uint64_t appended = image->journal_->appended();
  std::vector<JournalFile> closed = image->journal_->ClosedFiles();
  const uint64_t oldest = closed.empty() ? appended + 1 : closed.front().first_seq;
  if (appended < snapshot || (first_replayed == 0 && oldest > snapshot + 1)) {
    return Status::DataLoss(fmt::format(
        "durable image {}: the snapshot ends at record {} but the journal holds records {}..{}: "
        "journal files are missing",
        dir.string(), snapshot, oldest, appended));
  }
  REEF_RETURN_IF_ERROR(RemoveOldSnapshots(dir, snapshot));
  // Messages a crash caught between their send and their arrival arrive now, at the end of
  // their targets' mailboxes, in the order they were sent: recorded first, so the journal
  // replays to this image again.
  std::vector<std::pair<uint64_t, ActorRef>> arriving;
  for (const auto& [origin, sent] : recovered->in_flight())
    arriving.emplace_back(origin, sent.target);
  std::string record;
  for (const auto& [origin, target] : arriving) {
    EncodeArrivalRecord(target, origin, &record);
    REEF_RETURN_IF_ERROR(image->journal_->Append(record).status());
    REEF_RETURN_IF_ERROR(recovered->Apply(record));
  }
  image->next_origin_.store(recovered->last_origin() + 1);
  {
    MutexLock lock(image->mu_);
    image->snapshot_seq_ = snapshot;
  }
  {
    MutexLock lock(image->first_use_mu_);
    for (const auto& [id, implementation] : recovered->implementations()) {
      image->implementations_.insert(id);
    }
  }
  image->compactor_ = std::thread([raw = image.get()] { raw->CompactLoop(); });
  return image;
}

DurableImage::~DurableImage() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  stop_.NotifyAll();
  if (compactor_.joinable()) compactor_.join();
  journal_.reset();
  ::close(lock_fd_);
}

void DurableImage::WhenAppendedDurable(Journal::Done done) {
  {
    MutexLock lock(mu_);
    if (!failed_.ok()) return done(failed_);
  }
  journal_->WhenDurable(journal_->appended(), std::move(done));
}

void DurableImage::Append(std::string record) {
  auto seq = journal_->Append(std::move(record));
  if (seq.ok()) return;
  Status failed;
  {
    MutexLock lock(mu_);
    if (!failed_.ok()) return;
    failed_ = Status::Unavailable("the durable image could not record a change: " +
                                  seq.status().message());
    failed = failed_;
  }
  // Nothing after the missing record may reach the disk: the journal stays a prefix of what
  // happened, and the changes from here on live in memory only.
  journal_->Abandon(failed);
  spdlog::error("durable image: {}; nothing the image does from now on is acknowledged",
                failed.message());
}

void DurableImage::AppendImplementation(const Implementation& implementation) {
  MutexLock lock(first_use_mu_);  // held while appending: see the header
  if (!implementations_.insert(implementation.id).second) return;
  std::string record;
  EncodeImplementationRecord(implementation, &record);
  Append(std::move(record));
}

DurableImageStats DurableImage::stats() const {
  MutexLock lock(mu_);
  return {journal_->stats(), snapshot_seq_, snapshot_bytes_, compactions_};
}

void DurableImage::CollectMetrics(std::string_view runtime, MetricFamilies& out) const {
  static constexpr MetricDesc kRecords{
      "reef_image_journal_records_total", MetricType::kCounter,
      "Records appended to the durable image's journal since the server started."};
  static constexpr MetricDesc kSyncs{
      "reef_image_journal_syncs_total", MetricType::kCounter,
      "Batches of journal records written, one fdatasync each, since the server started."};
  static constexpr MetricDesc kLargest{"reef_image_journal_largest_batch", MetricType::kGauge,
                                       "Records in the largest batch since the server started."};
  static constexpr MetricDesc kSnapshot{
      "reef_image_snapshot_record", MetricType::kGauge,
      "The journal record the current snapshot of the image includes (0: none)."};
  static constexpr MetricDesc kCompactions{
      "reef_image_compactions_total", MetricType::kCounter,
      "Compactions of the journal into a snapshot since the server started."};
  const DurableImageStats now = stats();
  const MetricLabels labels{{"runtime", std::string(runtime)}};
  out.Add(kRecords, labels, now.journal.records);
  out.Add(kSyncs, labels, now.journal.batches);
  out.Add(kLargest, labels, now.journal.largest_batch);
  out.Add(kSnapshot, labels, now.snapshot_seq);
  out.Add(kCompactions, labels, now.compactions);
}

Status DurableImage::CompactNow() {
  MutexLock compacting(compact_mu_);
  std::vector<JournalFile> closed = journal_->ClosedFiles();
  if (closed.empty()) return Status::Ok();
  const std::filesystem::path& dir = options_.journal.dir;
  // The image as of the last closed file: the snapshot, then the files after it. Nothing of
  // the live image is touched; the records say it all.
  RecoveredImage image(options_.value_limits);
  REEF_ASSIGN_OR_RETURN(const uint64_t from, LoadImageSnapshot(dir, &image));
  for (const JournalFile& file : closed) {
    if (file.last_seq <= from) continue;
    REEF_RETURN_IF_ERROR(Journal::ReadClosedFile(file, [&](uint64_t seq, std::string_view record) {
      if (seq <= from) return Status::Ok();
      Status applied = image.Apply(record);
      if (applied.ok()) return applied;
      return Status::DataLoss(
          fmt::format("{} (record {} of {})", applied.message(), seq, file.path.string()));
    }));
  }
  const uint64_t seq = closed.back().last_seq;
  REEF_ASSIGN_OR_RETURN(const uint64_t bytes, WriteImageSnapshot(dir, seq, image));
  // The new snapshot is durable: the files and the snapshot it replaces may go. A crash in
  // between leaves both, and Open skips the records the snapshot has.
  REEF_RETURN_IF_ERROR(journal_->RemoveThrough(seq));
  REEF_RETURN_IF_ERROR(RemoveOldSnapshots(dir, seq));
  MutexLock lock(mu_);
  snapshot_seq_ = seq;
  snapshot_bytes_ = bytes;
  ++compactions_;
  return Status::Ok();
}

void DurableImage::CompactLoop() {
  constexpr auto kPoll = std::chrono::seconds(1);
  constexpr auto kAfterFailure = std::chrono::seconds(60);
  auto next_try = std::chrono::steady_clock::now();
  MutexLock lock(mu_);
  while (!stopping_) {
    stop_.WaitUntil(mu_, std::chrono::steady_clock::now() + kPoll);
    if (stopping_ || options_.compact_after_bytes == 0) continue;
    if (std::chrono::steady_clock::now() < next_try) continue;
    const uint64_t threshold = std::max(options_.compact_after_bytes, snapshot_bytes_);
    lock.Unlock();
    uint64_t closed_bytes = 0;
    for (const JournalFile& file : journal_->ClosedFiles()) closed_bytes += file.bytes;
    if (closed_bytes >= threshold) {
      Status compacted = CompactNow();
      if (!compacted.ok()) {
        spdlog::error("durable image: compaction failed (tried again in a minute): {}",
                      compacted.ToString());
        next_try = std::chrono::steady_clock::now() + kAfterFailure;
      }
    }
    lock.Lock();
  }
}

}  // namespace reef::actor
