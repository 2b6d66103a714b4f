#include "actor/journal.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <future>
#include <iterator>
#include <limits>

#include "core/crc32c.h"
#include "core/files.h"
#include "core/frame.h"

namespace reef::actor {

namespace {

constexpr std::string_view kFileMagic = "REEF-IMAGE-JRNL1";
constexpr size_t kFileHeaderBytes = 32;
constexpr uint32_t kFrameMagic = 0x4c4e524a;  // "JRNL" in file order

std::string Errno(std::string_view what, const std::filesystem::path& path) {
  return "image journal: " + ErrnoText(what, path);
}

Status WriteAll(int fd, std::string_view bytes, const std::filesystem::path& path) {
  return WriteFully(fd, bytes, path, "image journal");
}

std::filesystem::path FilePath(const std::filesystem::path& dir, uint64_t first_seq) {
  return dir / fmt::format("journal-{:020}.log", first_seq);
}

// The most a journal file can hold: its header, its segment size (the larger of this one's and
// 1 GiB, so files written with a larger setting still load), then one more frame of at most
// max_batch_bytes plus one record (frames are only started below the segment size).
uint64_t MaxFileBytes(const JournalOptions& options) {
  return kFileHeaderBytes + std::max<uint64_t>(options.segment_bytes, 1ull << 30) +
         kFrameHeaderBytes + options.max_batch_bytes + options.max_record_bytes + 4;
}

// One file read whole, with what its frames hold.
struct ParsedFile {
  std::filesystem::path path;
  std::string bytes;
  uint64_t first_seq = 0;
  std::vector<std::string_view> records;
  uint64_t valid_bytes = 0;  // the intact prefix
  std::string problem;       // why the rest is not intact (empty: it is)
};

// Checks the frame at `offset`; its records go to `records` when it is intact.
std::string CheckFrame(const std::string& bytes, uint64_t offset, uint64_t next_seq,
                       std::vector<std::string_view>* records, uint64_t* frame_bytes) {
  if (bytes.size() - offset < kFrameHeaderBytes) return "a frame header is cut short";
  const auto* base = reinterpret_cast<const uint8_t*>(bytes.data());
  auto header = DecodeFrameHeader(kFrameMagic, base + offset);
  if (!header) return "a frame header fails its magic or checksum";
  if (header->first != next_seq) {
    return fmt::format("the frame starts at record {}, but {} comes next", header->first, next_seq);
  }
  const uint64_t body = offset + kFrameHeaderBytes;
  if (bytes.size() - body < header->body_bytes) return "a frame body is cut short";
  if (Crc32c(base + body, header->body_bytes) != header->body_crc) {
    return "a frame body fails its checksum";
  }
  std::string problem = SplitRecords(std::string_view(bytes).substr(body, header->body_bytes),
                                     header->count, records);
  if (!problem.empty()) return problem;
  *frame_bytes = kFrameHeaderBytes + header->body_bytes;
  return {};
}

// True when an intact frame header (any sequence number) starts somewhere after `offset`.
bool IntactFrameAfter(const std::string& bytes, uint64_t offset) {
  const auto* base = reinterpret_cast<const uint8_t*>(bytes.data());
  for (uint64_t at = offset + 1; at + kFrameHeaderBytes <= bytes.size(); ++at) {
    if (DecodeFrameHeader(kFrameMagic, base + at)) return true;
  }
  return false;
}

Result<ParsedFile> ParseFile(const std::filesystem::path& path, uint64_t next_seq,
                             uint64_t max_bytes) {
  ParsedFile file;
  file.path = path;
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) return Status::Unavailable(Errno("cannot read", path));
  if (size > max_bytes) {
    return Status::DataLoss(fmt::format(
        "image journal damaged: {} holds {} bytes, more than a journal file ever does ({})",
        path.string(), size, max_bytes));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Unavailable(Errno("cannot read", path));
  file.bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  const auto* base = reinterpret_cast<const uint8_t*>(file.bytes.data());
  if (file.bytes.size() < kFileHeaderBytes ||
      std::string_view(file.bytes).substr(0, kFileMagic.size()) != kFileMagic) {
    return Status::DataLoss(
        fmt::format("image journal damaged: {}: not a journal file header", path.string()));
  }
  file.first_seq = GetLe<uint64_t>(base + kFileMagic.size());
  if (next_seq != 0 && file.first_seq != next_seq) {
    return Status::DataLoss(fmt::format(
        "image journal damaged: {} begins at record {}, but {} comes next (a file is missing "
        "or left over)",
        path.string(), file.first_seq, next_seq));
  }
  uint64_t offset = kFileHeaderBytes;
  uint64_t seq = file.first_seq;
  while (offset < file.bytes.size()) {
    std::vector<std::string_view> records;
    uint64_t frame_bytes = 0;
    std::string problem = CheckFrame(file.bytes, offset, seq, &records, &frame_bytes);
    if (!problem.empty()) {
      file.problem = fmt::format("{} at byte {}", problem, offset);
      break;
    }
    seq += records.size();
    file.records.insert(file.records.end(), records.begin(), records.end());
    offset += frame_bytes;
  }
  file.valid_bytes = offset;
  return file;
}

}  // namespace

Journal::Journal(const JournalOptions& options) : options_(options) {}

Result<std::unique_ptr<Journal>> Journal::Open(const JournalOptions& options, const Replay& replay,
                                               JournalRecovery* recovery) {
  std::error_code ec;
  REEF_RETURN_IF_ERROR(CreatePrivateDirectory(options.dir, "image journal"));
  std::unique_ptr<Journal> journal(new Journal(options));
  std::vector<std::filesystem::path> paths;
  for (const auto& entry : std::filesystem::directory_iterator(options.dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with("journal-") && name.ends_with(".log")) paths.push_back(entry.path());
  }
  if (ec) {
    return Status::Unavailable(
        fmt::format("image journal: cannot list {}: {}", options.dir.string(), ec.message()));
  }
  std::sort(paths.begin(), paths.end());

  // Every file is checked before anything is replayed.
  std::vector<ParsedFile> files;
  uint64_t next_seq = 0;
  for (size_t i = 0; i < paths.size(); ++i) {
    REEF_ASSIGN_OR_RETURN(ParsedFile file, ParseFile(paths[i], next_seq, MaxFileBytes(options)));
    const bool last = i + 1 == paths.size();
    if (!file.problem.empty() && (!last || IntactFrameAfter(file.bytes, file.valid_bytes))) {
      return Status::DataLoss(
          fmt::format("image journal damaged: {}: {}", file.path.string(), file.problem));
    }
    next_seq = file.first_seq + file.records.size();
    files.push_back(std::move(file));
  }

  JournalRecovery found;
  found.files = files.size();
  for (const ParsedFile& file : files) {
    uint64_t seq = file.first_seq;
    for (std::string_view record : file.records) REEF_RETURN_IF_ERROR(replay(seq++, record));
    found.records += file.records.size();
  }

  if (files.empty()) {
    next_seq = std::max<uint64_t>(options.first_seq, 1);
    REEF_RETURN_IF_ERROR(journal->StartFile(next_seq));
  } else {
    {
      MutexLock lock(journal->mu_);
      for (size_t i = 0; i + 1 < files.size(); ++i) {
        journal->closed_.push_back(
            {files[i].path, files[i].first_seq, files[i + 1].first_seq - 1, files[i].bytes.size()});
      }
    }
    ParsedFile& tail = files.back();
    journal->path_ = tail.path;
    journal->fd_ = ::open(tail.path.c_str(), O_WRONLY | O_CLOEXEC);
    if (journal->fd_ < 0) return Status::Unavailable(Errno("cannot open", tail.path));
    found.torn_bytes = tail.bytes.size() - tail.valid_bytes;
    if (found.torn_bytes > 0 &&
        (::ftruncate(journal->fd_, static_cast<off_t>(tail.valid_bytes)) != 0 ||
         ::fdatasync(journal->fd_) != 0)) {
      return Status::Unavailable(Errno("cannot cut the torn tail of", tail.path));
    }
    if (::lseek(journal->fd_, static_cast<off_t>(tail.valid_bytes), SEEK_SET) < 0) {
      return Status::Unavailable(Errno("cannot seek in", tail.path));
    }
    journal->file_bytes_ = tail.valid_bytes;
    journal->current_first_ = tail.first_seq;
  }
  {
    MutexLock lock(journal->mu_);
    journal->next_seq_ = next_seq;
    journal->durable_ = next_seq - 1;
    journal->stats_.durable = next_seq - 1;
  }
  if (recovery != nullptr) *recovery = found;
  journal->writer_ = std::thread([j = journal.get()] { j->WriterLoop(); });
  return journal;
}

Journal::~Journal() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  wake_.NotifyAll();
  if (writer_.joinable()) writer_.join();
  if (fd_ >= 0) ::close(fd_);
}

Status Journal::StartFile(uint64_t first_seq) {
  std::filesystem::path path = FilePath(options_.dir, first_seq);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return Status::Unavailable(Errno("cannot create", path));
  std::string header(kFileMagic);
  PutLe<uint64_t>(header, first_seq);
  PutLe<uint64_t>(header, 0);
  Status written = WriteAll(fd, header, path);
  if (written.ok() && ::fdatasync(fd) != 0)
    written = Status::Unavailable(Errno("cannot sync", path));
  if (written.ok()) written = SyncDirectory(options_.dir);
  if (!written.ok()) {
    ::close(fd);
    return written;
  }
  if (fd_ >= 0) {  // rotation: the file written so far is closed for good
    ::close(fd_);
    MutexLock lock(mu_);
    closed_.push_back({path_, current_first_, first_seq - 1, file_bytes_});
  }
  fd_ = fd;
  path_ = std::move(path);
  current_first_ = first_seq;
  file_bytes_ = header.size();
  return Status::Ok();
}

Result<uint64_t> Journal::Append(std::string record) {
  if (record.size() > options_.max_record_bytes) {
    return Status::LimitExceeded(fmt::format("a journal record of {} bytes exceeds the limit of {}",
                                             record.size(), options_.max_record_bytes));
  }
  MutexLock lock(mu_);
  if (!failed_.ok()) return failed_;
  if (stopping_) return Status::Unavailable("the image journal is closing");
  const uint64_t seq = next_seq_++;
  queue_.push_back({seq, std::move(record)});
  ++stats_.records;
  lock.Unlock();
  wake_.NotifyOne();
  return seq;
}

void Journal::WhenDurable(uint64_t seq, Done done) {
  MutexLock lock(mu_);
  if (seq <= durable_ || !failed_.ok()) {
    Status status = seq <= durable_ ? Status::Ok() : failed_;
    lock.Unlock();
    return done(status);
  }
  waiters_.emplace(seq, std::move(done));
}

Status Journal::WaitDurable(uint64_t seq) {
  std::promise<Status> promise;
  std::future<Status> result = promise.get_future();
  WhenDurable(seq, [&promise](Status status) { promise.set_value(std::move(status)); });
  return result.get();
}

std::vector<JournalFile> Journal::ClosedFiles() const {
  MutexLock lock(mu_);
  return closed_;
}

Status Journal::RemoveThrough(uint64_t seq) {
  std::vector<JournalFile> candidates;
  {
    MutexLock lock(mu_);
    for (const JournalFile& file : closed_) {
      if (file.last_seq <= seq) candidates.push_back(file);
    }
  }
  // Each file leaves the list only once it is gone, so a failed removal is tried again by the
  // next compaction.
  Status result = Status::Ok();
  bool removed = false;
  for (const JournalFile& file : candidates) {
    std::error_code ec;
    std::filesystem::remove(file.path, ec);
    if (ec) {
      result = Status::Unavailable(
          fmt::format("image journal: cannot remove {}: {}", file.path.string(), ec.message()));
      break;
    }
    removed = true;
    MutexLock lock(mu_);
    closed_.erase(closed_.begin());
  }
  if (removed) {
    Status synced = SyncDirectory(options_.dir);
    if (result.ok()) result = synced;
  }
  return result;
}

Status Journal::ReadClosedFile(const JournalFile& file, const Replay& replay) {
  REEF_ASSIGN_OR_RETURN(ParsedFile parsed,
                        ParseFile(file.path, file.first_seq, std::numeric_limits<uint64_t>::max()));
  if (!parsed.problem.empty()) {
    return Status::DataLoss(
        fmt::format("image journal damaged: {}: {}", file.path.string(), parsed.problem));
  }
  if (parsed.first_seq + parsed.records.size() != file.last_seq + 1) {
    return Status::DataLoss(
        fmt::format("image journal damaged: {} holds records {}..{}, not ..{}", file.path.string(),
                    parsed.first_seq, parsed.first_seq + parsed.records.size() - 1, file.last_seq));
  }
  uint64_t seq = parsed.first_seq;
  for (std::string_view record : parsed.records) REEF_RETURN_IF_ERROR(replay(seq++, record));
  return Status::Ok();
}

uint64_t Journal::appended() const {
  MutexLock lock(mu_);
  return next_seq_ - 1;
}

uint64_t Journal::durable() const {
  MutexLock lock(mu_);
  return durable_;
}

JournalStats Journal::stats() const {
  MutexLock lock(mu_);
  return stats_;
}

void Journal::Abandon(Status why) {
  std::multimap<uint64_t, Done> left;
  Status failed;
  {
    MutexLock lock(mu_);
    if (failed_.ok()) Fail(std::move(why));
    failed = failed_;
    auto from = waiters_.upper_bound(durable_);
    left.insert(from, waiters_.end());
    waiters_.erase(from, waiters_.end());
  }
  for (auto& [seq, done] : left) done(failed);
}

void Journal::Fail(Status why) {
  failed_ = Status::Unavailable("the image journal failed: " + why.message());
}

void Journal::WriterLoop() {
  for (;;) {
    std::vector<Pending> batch;
    {
      MutexLock lock(mu_);
      while (queue_.empty() && !stopping_) wake_.Wait(mu_);
      if (queue_.empty()) break;  // stopping, everything written
      // Up to max_batch_bytes (at least one record); the rest waits for the next frame.
      size_t bytes = 0, take = 0;
      while (take < queue_.size() &&
             (take == 0 || bytes + queue_[take].record.size() + 4 <= options_.max_batch_bytes)) {
        bytes += queue_[take].record.size() + 4;
        ++take;
      }
      batch.assign(std::make_move_iterator(queue_.begin()),
                   std::make_move_iterator(queue_.begin() + static_cast<ptrdiff_t>(take)));
      queue_.erase(queue_.begin(), queue_.begin() + static_cast<ptrdiff_t>(take));
      if (!failed_.ok()) continue;  // a failed journal writes nothing more
    }
    Status written = WriteBatch(batch);
    std::vector<Done> ready;
    Status outcome;
    {
      MutexLock lock(mu_);
      if (written.ok()) {
        durable_ = batch.back().seq;
        ++stats_.batches;
        stats_.largest_batch = std::max<uint64_t>(stats_.largest_batch, batch.size());
        stats_.durable = durable_;
      } else {
        Fail(written);
      }
      outcome = failed_;
      auto end = failed_.ok() ? waiters_.upper_bound(durable_) : waiters_.end();
      for (auto it = waiters_.begin(); it != end; ++it) ready.push_back(std::move(it->second));
      waiters_.erase(waiters_.begin(), end);
    }
    for (Done& done : ready) done(outcome);
  }
  // Closing: whoever still waits for a record that was never written hears so.
  std::multimap<uint64_t, Done> left;
  {
    MutexLock lock(mu_);
    left.swap(waiters_);
  }
  for (auto& [seq, done] : left) done(Status::Unavailable("the image journal closed first"));
}

Status Journal::WriteBatch(const std::vector<Pending>& batch) {
  if (file_bytes_ >= options_.segment_bytes) REEF_RETURN_IF_ERROR(StartFile(batch.front().seq));
  std::string body;
  for (const Pending& pending : batch) AppendRecord(body, pending.record);
  FrameHeader header{batch.front().seq, static_cast<uint32_t>(batch.size()),
                     static_cast<uint32_t>(body.size()), Crc32c(body.data(), body.size())};
  std::string frame = EncodeFrameHeader(kFrameMagic, header) + body;
  REEF_RETURN_IF_ERROR(WriteAll(fd_, frame, path_));
  if (::fdatasync(fd_) != 0) return Status::Unavailable(Errno("cannot sync", path_));
  file_bytes_ += frame.size();
  MutexLock lock(mu_);
  stats_.bytes += frame.size();
  return Status::Ok();
}

}  // namespace reef::actor
