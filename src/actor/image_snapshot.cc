#include "actor/image_snapshot.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "core/crc32c.h"
#include "core/files.h"
#include "core/frame.h"

namespace reef::actor {

namespace {

constexpr std::string_view kSnapshotMagic = "REEF-IMAGE-SNAP1";
constexpr size_t kSnapshotHeaderBytes = 32;
constexpr uint32_t kSnapshotFrameMagic = 0x50414e53;  // "SNAP" in file order
constexpr size_t kSnapshotFrameBytes = 1u << 20;  // a frame is written once its body passes this

std::filesystem::path SnapshotPath(const std::filesystem::path& dir, uint64_t seq) {
  return dir / fmt::format("snapshot-{:020}.img", seq);
}

// The record number of a snapshot file's name, or 0 when it is not one.
uint64_t SnapshotSeq(const std::filesystem::path& path) {
  const std::string name = path.filename().string();
  if (!name.starts_with("snapshot-") || !name.ends_with(".img") || name.size() != 33) return 0;
  uint64_t seq = 0;
  for (char c : name.substr(9, 20)) {
    if (c < '0' || c > '9') return 0;
    seq = seq * 10 + static_cast<uint64_t>(c - '0');
  }
  return seq;
}

// Frames of records written to one file as they fill.
class FrameWriter {
 public:
  FrameWriter(int fd, const std::filesystem::path& path) : fd_(fd), path_(path) {}

  Status Add(std::string_view record) {
    AppendRecord(body_, record);
    ++count_;
    return body_.size() >= kSnapshotFrameBytes ? Flush() : Status::Ok();
  }
  // Writes what is left, then the empty frame that ends the file.
  Status Finish() {
    REEF_RETURN_IF_ERROR(Flush());
    return Flush(/*end=*/true);
  }
  uint64_t bytes() const { return bytes_; }

 private:
  Status Flush(bool end = false) {
    if (count_ == 0 && !end) return Status::Ok();
    FrameHeader header{next_, count_, static_cast<uint32_t>(body_.size()),
                       Crc32c(reinterpret_cast<const uint8_t*>(body_.data()), body_.size())};
    std::string frame = EncodeFrameHeader(kSnapshotFrameMagic, header);
    frame += body_;
    REEF_RETURN_IF_ERROR(WriteFully(fd_, frame, path_, "image snapshot"));
    bytes_ += frame.size();
    next_ += count_;
    count_ = 0;
    body_.clear();
    return Status::Ok();
  }

  int fd_;
  const std::filesystem::path& path_;
  std::string body_;
  uint32_t count_ = 0;
  uint64_t next_ = 1;
  uint64_t bytes_ = 0;
};

Status WriteRecords(FrameWriter& out, const RecoveredImage& image) {
  std::string record;
  for (const auto& [id, implementation] : image.implementations()) {
    EncodeImplementationRecord(implementation, &record);
    REEF_RETURN_IF_ERROR(out.Add(record));
  }
  for (const auto& [ref, actor] : image.actors()) {
    // The header as a spawn, its messages after: the spawn holds none.
    EncodeActorRecord(actor, /*spawned=*/true, /*dropped_first=*/false, &record);
    REEF_RETURN_IF_ERROR(out.Add(record));
    if (!actor.messages.empty()) {
      EncodeMessagesRecord(ref, actor.reserved, nullptr, actor.messages, &record);
      REEF_RETURN_IF_ERROR(out.Add(record));
    }
  }
  // After the actors they go to.
  for (const auto& [origin, sent] : image.in_flight()) {
    EncodeInFlightRecord(sent.target, origin, sent.envelope, &record);
    REEF_RETURN_IF_ERROR(out.Add(record));
  }
  return out.Finish();
}

// Reads exactly `n` bytes; false at the end of the file (or an error: errno set).
bool ReadExactly(int fd, char* into, size_t n, bool* short_read) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = ::read(fd, into + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return false;
    if (r == 0) {
      *short_read = true;
      return false;
    }
    got += static_cast<size_t>(r);
  }
  return true;
}

Status ApplySnapshot(int fd, const std::filesystem::path& path, uint64_t seq, uint64_t file_bytes,
                     RecoveredImage* image) {
  auto damaged = [&](std::string why) {
    return Status::DataLoss(fmt::format("image snapshot damaged: {}: {}", path.string(), why));
  };
  auto unreadable = [&] {
    return Status::Unavailable("image snapshot: " + ErrnoText("cannot read", path));
  };
  std::string header(kSnapshotHeaderBytes, '\0');
  bool short_read = false;
  if (!ReadExactly(fd, header.data(), header.size(), &short_read)) {
    return short_read ? damaged("its header is cut short") : unreadable();
  }
  if (std::string_view(header).substr(0, kSnapshotMagic.size()) != kSnapshotMagic ||
      GetLe<uint64_t>(reinterpret_cast<const uint8_t*>(header.data()) + kSnapshotMagic.size()) !=
          seq) {
    return damaged("not the header of the snapshot of record " + std::to_string(seq));
  }
  uint64_t next = 1, offset = kSnapshotHeaderBytes;
  std::string frame_header(kFrameHeaderBytes, '\0'), body;
  std::vector<std::string_view> records;
  for (;;) {
    if (!ReadExactly(fd, frame_header.data(), frame_header.size(), &short_read)) {
      return short_read ? damaged(fmt::format("it ends at byte {} without its end frame", offset))
                        : unreadable();
    }
    auto frame = DecodeFrameHeader(kSnapshotFrameMagic,
                                   reinterpret_cast<const uint8_t*>(frame_header.data()));
    if (!frame || frame->first != next) {
      return damaged(fmt::format("a bad frame header at byte {}", offset));
    }
    if (frame->body_bytes > file_bytes - offset - kFrameHeaderBytes) {
      return damaged(
          fmt::format("a frame at byte {} claims more bytes than the file holds", offset));
    }
    body.resize(frame->body_bytes);
    if (!ReadExactly(fd, body.data(), body.size(), &short_read)) {
      return short_read ? damaged(fmt::format("a frame body at byte {} is cut short", offset))
                        : unreadable();
    }
    if (Crc32c(reinterpret_cast<const uint8_t*>(body.data()), body.size()) != frame->body_crc) {
      return damaged(fmt::format("a frame body at byte {} fails its checksum", offset));
    }
    if (frame->count == 0) {
      char extra = 0;
      if (!body.empty() || ReadExactly(fd, &extra, 1, &short_read)) {
        return damaged("bytes follow its end frame");
      }
      return Status::Ok();
    }
    records.clear();
    if (std::string problem = SplitRecords(body, frame->count, &records); !problem.empty()) {
      return damaged(fmt::format("{} at byte {}", problem, offset));
    }
    for (std::string_view record : records) {
      Status applied = image->Apply(record);
      if (!applied.ok()) return damaged(applied.message());
    }
    next += frame->count;
    offset += kFrameHeaderBytes + body.size();
  }
}

std::vector<std::filesystem::path> Listing(const std::filesystem::path& dir, std::error_code& ec) {
  std::vector<std::filesystem::path> paths;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    paths.push_back(entry.path());
  }
  return paths;
}

}  // namespace

Result<uint64_t> WriteImageSnapshot(const std::filesystem::path& dir, uint64_t seq,
                                    const RecoveredImage& image) {
  const std::filesystem::path path = SnapshotPath(dir, seq);
  std::filesystem::path tmp = path;
  tmp += ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Status::Unavailable("image snapshot: " + ErrnoText("cannot create", tmp));
  std::string header(kSnapshotMagic);
  PutLe<uint64_t>(header, seq);
  PutLe<uint64_t>(header, 0);
  FrameWriter frames(fd, tmp);
  Status written = WriteFully(fd, header, tmp, "image snapshot");
  if (written.ok()) written = WriteRecords(frames, image);
  if (written.ok() && ::fdatasync(fd) != 0) {
    written = Status::Unavailable("image snapshot: " + ErrnoText("cannot sync", tmp));
  }
  ::close(fd);
  if (written.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    written = Status::Unavailable("image snapshot: " + ErrnoText("cannot rename", tmp));
  }
  if (written.ok()) written = SyncDirectory(dir);
  if (!written.ok()) {
    ::unlink(tmp.c_str());
    return written;
  }
  return kSnapshotHeaderBytes + frames.bytes();
}

Result<uint64_t> LoadImageSnapshot(const std::filesystem::path& dir, RecoveredImage* image) {
  std::error_code ec;
  uint64_t newest = 0;
  for (const auto& path : Listing(dir, ec)) newest = std::max(newest, SnapshotSeq(path));
  if (ec) return Status::Unavailable(fmt::format("image snapshot: cannot list {}", dir.string()));
  if (newest == 0) return uint64_t{0};
  const std::filesystem::path path = SnapshotPath(dir, newest);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::Unavailable("image snapshot: " + ErrnoText("cannot open", path));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return Status::Unavailable("image snapshot: " + ErrnoText("cannot stat", path));
  }
  Status applied = ApplySnapshot(fd, path, newest, static_cast<uint64_t>(st.st_size), image);
  ::close(fd);
  REEF_RETURN_IF_ERROR(applied);
  return newest;
}

Status RemoveOldSnapshots(const std::filesystem::path& dir, uint64_t seq) {
  std::error_code ec;
  bool removed = false;
  for (const auto& path : Listing(dir, ec)) {
    const std::string name = path.filename().string();
    const uint64_t of = SnapshotSeq(path);
    const bool stale =
        (of != 0 && of < seq) || (name.starts_with("snapshot-") && name.ends_with(".img.tmp"));
    if (!stale) continue;
    std::error_code removing;
    std::filesystem::remove(path, removing);
    if (removing) {
      return Status::Unavailable(
          fmt::format("image snapshot: cannot remove {}: {}", path.string(), removing.message()));
    }
    removed = true;
  }
  if (ec) return Status::Unavailable(fmt::format("image snapshot: cannot list {}", dir.string()));
  return removed ? SyncDirectory(dir) : Status::Ok();
}

}  // namespace reef::actor
