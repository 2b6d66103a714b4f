// Segment files of the embedded event store (LogCore, detail/log_core.h; the format is
// detail/log_format.h): the directory lock, creating and mapping segment files, recovery when
// the store opens (a torn append at the end of the log is cut away; any other bad frame is
// DataLoss), and writing a batch's frames with one write and one fdatasync (Flush).
//
// Thread ownership: Open and recovery run before the writer thread starts; after that the
// writer thread owns the segment files. Readers reach the mappings only through bases_.
#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/files.h"
#include "events/detail/log_core.h"
#include "events/detail/log_format.h"

namespace reef::events::detail {

namespace {

Status WriteAll(int fd, const char* data, size_t size, uint64_t offset,
                const std::filesystem::path& path) {
  while (size > 0) {
    ssize_t n = ::pwrite(fd, data, size, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::Unavailable(ErrnoText("cannot write", path));
    }
    data += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return Status::Ok();
}

std::string SegmentName(Position first) {
  return fmt::format("segment-{:020}.log", first);
}

}  // namespace

LogCore::LogCore(std::filesystem::path dir, EventStoreOptions options)
    : dir_(std::move(dir)), options_(std::move(options)), bases_(new Base[kMaxSegments]) {}

LogCore::~LogCore() {
  Close();
  for (Segment& segment : segments_) {
    if (segment.base) ::munmap(const_cast<uint8_t*>(segment.base), segment.mapped);
    if (segment.fd >= 0) ::close(segment.fd);
  }
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

// ---- Opening ---------------------------------------------------------------------------------

Status LogCore::Open() {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) {
    return Status::Unavailable(
        fmt::format("cannot create event store directory {}: {}", dir_.string(), ec.message()));
  }
  REEF_ASSIGN_OR_RETURN(
      lock_fd_, LockExclusively(dir_ / "LOCK", fmt::format("event store {}", dir_.string())));
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    std::string name = entry.path().filename().string();
    if (name.starts_with("segment-") && name.ends_with(".log")) files.push_back(entry.path());
  }
  if (ec) return Status::Unavailable(ErrnoText("cannot list", dir_));
  std::sort(files.begin(), files.end());
  for (size_t i = 0; i < files.size(); ++i) {
    REEF_RETURN_IF_ERROR(Recover(files[i], i + 1 == files.size()));
  }
  if (segments_.empty()) REEF_RETURN_IF_ERROR(StartSegment(1));
  // Whatever recovery changed, and the directory's own entry, are durable before the first
  // append is acknowledged.
  REEF_RETURN_IF_ERROR(SyncDirectory(dir_));
  if (dir_.has_parent_path()) REEF_RETURN_IF_ERROR(SyncDirectory(dir_.parent_path()));
  head_.store(WriterIndex().last());
  if (duplicate_ids_recovered_ > 0) {
    spdlog::warn(
        "event store {}: {} events reuse an id an earlier event has (written before "
        "ids were unique); reads by id find the earlier one",
        dir_.string(), duplicate_ids_recovered_);
  }
  writer_ = std::thread([this] { WriterLoop(); });
  return Status::Ok();
}

// ---- Segments --------------------------------------------------------------------------------

uint64_t LogCore::SegmentCapacity() const {
  return std::max<uint64_t>(options_.segment_bytes, options_.limits.max_append_bytes +
                                                        kFrameHeaderBytes + kFileHeaderBytes);
}

Status LogCore::MapSegment(Segment& segment) {
  segment.mapped = std::max(SegmentCapacity(), segment.size);
  void* base = ::mmap(nullptr, segment.mapped, PROT_READ, MAP_SHARED, segment.fd, 0);
  if (base == MAP_FAILED) return Status::Unavailable(ErrnoText("cannot map", segment.path));
  segment.base = static_cast<const uint8_t*>(base);
  uint32_t number = static_cast<uint32_t>(segments_.size());
  if (number >= kMaxSegments) {
    return Status::LimitExceeded(
        fmt::format("the event store has {} segments, the most it can "
                    "hold; raise segment_bytes",
                    kMaxSegments));
  }
  bases_[number].mapped.store(segment.mapped, std::memory_order_release);
  bases_[number].pointer.store(segment.base, std::memory_order_release);
  segments_.push_back(segment);
  return Status::Ok();
}

Status LogCore::StartSegment(Position first) {
  Segment segment;
  segment.path = dir_ / SegmentName(first);
  segment.fd = ::open(segment.path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (segment.fd < 0) return Status::Unavailable(ErrnoText("cannot create", segment.path));
  std::string header = EncodeFileHeader(first);
  Status written = WriteAll(segment.fd, header.data(), header.size(), 0, segment.path);
  if (written.ok() && ::fdatasync(segment.fd) != 0) {
    written = Status::Unavailable(ErrnoText("cannot sync", segment.path));
  }
  if (!written.ok()) {
    ::close(segment.fd);
    return written;
  }
  REEF_RETURN_IF_ERROR(SyncDirectory(dir_));
  segment.size = header.size();
  return MapSegment(segment);
}

// ---- Recovery --------------------------------------------------------------------------------

Status LogCore::Recover(const std::filesystem::path& path, bool last_file) {
  Segment segment;
  segment.path = path;
  segment.fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (segment.fd < 0) return Status::Unavailable(ErrnoText("cannot open", path));
  struct stat st {};
  if (::fstat(segment.fd, &st) != 0) {
    ::close(segment.fd);
    return Status::Unavailable(ErrnoText("cannot stat", path));
  }
  segment.size = static_cast<uint64_t>(st.st_size);
  Status mapped = MapSegment(segment);
  if (!mapped.ok()) {
    ::close(segment.fd);
    return mapped;
  }
  uint32_t number = static_cast<uint32_t>(segments_.size() - 1);
  Segment& s = segments_.back();
  // Open runs before the writer starts and any reader exists, so the lock is never waited
  // for; the index changes under it here as everywhere else.
  WriterLock lock(index_mu_);
  auto data_loss = [&](uint64_t offset, std::string_view what) {
    return Status::DataLoss(fmt::format("event store segment {} is unreadable at byte {}: {}",
                                        path.string(), offset, what));
  };
  if (s.size < kFileHeaderBytes || !DecodeFileHeader(s.base)) {
    if (last_file && s.size < kFileHeaderBytes) {
      // Created but its header never synced: start it again.
      return Rewrite(s, index_.last() + 1);
    }
    return data_loss(0, "not an event store segment (bad file header)");
  }
  Position expected = index_.last() + 1;
  if (*DecodeFileHeader(s.base) != expected) {
    return data_loss(0, fmt::format("it starts at position {}, but {} comes next",
                                    *DecodeFileHeader(s.base), expected));
  }
  uint64_t offset = kFileHeaderBytes;
  EventView view;
  while (offset < s.size) {
    std::string problem = CheckFrame(s, offset, index_.last() + 1);
    if (!problem.empty()) {
      if (!last_file || !IsTornEnd(s, offset, index_.last() + 1)) {
        return data_loss(offset, problem);
      }
      torn_bytes_ += s.size - offset;
      // A torn append at the end of the log: it was never acknowledged.
      if (::ftruncate(s.fd, static_cast<off_t>(offset)) != 0 || ::fdatasync(s.fd) != 0) {
        return Status::Unavailable(ErrnoText("cannot cut the torn end of", path));
      }
      s.size = offset;
      break;
    }
    auto header = *DecodeFrameHeader(s.base + offset);
    uint64_t record = offset + kFrameHeaderBytes;
    if (ids_.NeedsGrowth(header.event_count)) {
      ids_.Adopt(ids_.Grown(header.event_count, [this](Position p) { return IdAt(p); }));
    }
    for (uint32_t i = 0; i < header.event_count; ++i) {
      size_t size = DecodeRecord(s.base + record, s.size - record, view);
      const Position position = header.first_position + i;
      index_.Add(position, MakeLocation(number, record), view.type, view.tags);
      EventId id = view.id;
      // A log written before ids were unique may hold one twice: the first keeps the id.
      if (FindId(id, index_.last())) {
        ++duplicate_ids_recovered_;
      } else {
        ids_.Add(id, position);
      }
      record += size;
    }
    offset = record;
    head_.store(index_.last());  // no reader yet; lets IdAt see what was recovered
  }
  return Status::Ok();
}

Status LogCore::Rewrite(Segment& s, Position first) {
  std::string header = EncodeFileHeader(first);
  REEF_RETURN_IF_ERROR(WriteAll(s.fd, header.data(), header.size(), 0, s.path));
  if (::fdatasync(s.fd) != 0) return Status::Unavailable(ErrnoText("cannot sync", s.path));
  s.size = header.size();
  return Status::Ok();
}

std::string LogCore::CheckFrame(const Segment& s, uint64_t offset, Position first) {
  if (s.size - offset < kFrameHeaderBytes) return "a frame header is cut short";
  auto header = DecodeFrameHeader(s.base + offset);
  if (!header) return "bad frame header (magic or checksum)";
  if (header->first_position != first) {
    return fmt::format("the frame starts at position {}, but {} comes next", header->first_position,
                       first);
  }
  uint64_t body = offset + kFrameHeaderBytes;
  if (s.size - body < header->body_bytes) return "the frame's events are cut short";
  if (Crc32c(s.base + body, header->body_bytes) != header->body_crc) {
    return "the frame's events fail their checksum";
  }
  EventView view;
  uint64_t record = body;
  for (uint32_t i = 0; i < header->event_count; ++i) {
    size_t size = DecodeRecord(s.base + record, body + header->body_bytes - record, view);
    if (size == 0) return fmt::format("event {} of the frame is malformed", i);
    record += size;
  }
  if (record != body + header->body_bytes) return "the frame has bytes after its events";
  return "";
}

bool LogCore::IntactFrameAt(const Segment& s, uint64_t at, Position first) {
  if (at + kFrameHeaderBytes > s.size) return false;
  auto header = DecodeFrameHeader(s.base + at);
  if (!header || header->first_position < first) return false;
  uint64_t body = at + kFrameHeaderBytes;
  return s.size - body >= header->body_bytes &&
         Crc32c(s.base + body, header->body_bytes) == header->body_crc;
}

bool LogCore::IsTornEnd(const Segment& s, uint64_t offset, Position first) {
  std::optional<FrameHeader> header;
  if (s.size - offset >= kFrameHeaderBytes) {
    header = DecodeFrameHeader(s.base + offset);
  }
  if (header && header->first_position == first) {
    uint64_t end = offset + kFrameHeaderBytes + header->body_bytes;
    return end >= s.size || !IntactFrameAt(s, end, first + header->event_count);
  }
  for (uint64_t at = offset + 1; at + kFrameHeaderBytes <= s.size; ++at) {
    if (s.base[at] == (kFrameMagic & 0xff) && IntactFrameAt(s, at, first)) return false;
  }
  return true;
}

// ---- Writing frames (the writer thread) ------------------------------------------------------

Status LogCore::Flush(const std::string& buffer, uint64_t offset) {
  if (buffer.empty()) return Status::Ok();
  Segment& segment = segments_.back();
  REEF_RETURN_IF_ERROR(WriteAll(segment.fd, buffer.data(), buffer.size(), offset, segment.path));
  if (::fdatasync(segment.fd) != 0)
    return Status::Unavailable(ErrnoText("cannot sync", segment.path));
  syncs_.fetch_add(1);
  segment.size = offset + buffer.size();
  return Status::Ok();
}

}  // namespace reef::events::detail
