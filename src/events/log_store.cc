// The embedded event store: a segment log on disk plus the in-memory EventIndex.
//
// Writes: Append validates and encodes its records on the caller's thread, then queues the
// request for the one writer thread. The writer takes every queued request (up to
// max_batch_bytes), checks each request's condition on its own against the index — which
// already holds the batch's earlier requests, staged but not yet visible — writes all frames
// with one write, calls fdatasync once, and only then makes the batch visible (head_) and
// answers every request in it (group commit).
//
// Reads: the index is read under a shared lock, bounded by the durable head; records are
// decoded straight from the segments' read-only mappings, outside the lock.
#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <future>
#include <mutex>
#include <shared_mutex>
#include <thread>

#include "core/clock.h"
#include "events/detail/event_id_index.h"
#include "events/detail/event_index.h"
#include "events/detail/log_format.h"
#include "events/detail/subscription_state.h"
#include "events/event_store.h"

namespace reef::events {

namespace {

using detail::CompiledQuery;
using detail::EventIndex;
using detail::Location;

constexpr uint32_t kMaxSegments = 1u << 16;

std::string Errno(std::string_view what, const std::filesystem::path& path) {
  return fmt::format("{} {}: {}", what, path.string(), std::strerror(errno));
}

Status SyncDirectory(const std::filesystem::path& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Status::Unavailable(Errno("cannot open directory", dir));
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return Status::Unavailable(Errno("cannot sync directory", dir));
  return Status::Ok();
}

Status WriteAll(int fd, const char* data, size_t size, uint64_t offset,
                const std::filesystem::path& path) {
  while (size > 0) {
    ssize_t n = ::pwrite(fd, data, size, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::Unavailable(Errno("cannot write", path));
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

// An append may not carry one id twice (a store-wide check is not made; see event_store.h).
Status CheckDistinctIds(const std::vector<Event>& events) {
  if (events.size() < 2) return Status::Ok();
  std::vector<std::pair<EventId, size_t>> ids;
  ids.reserve(events.size());
  for (size_t i = 0; i < events.size(); ++i) ids.emplace_back(events[i].id, i);
  std::sort(ids.begin(), ids.end());
  for (size_t i = 1; i < ids.size(); ++i) {
    if (ids[i].first == ids[i - 1].first) {
      return Status::InvalidArgument(fmt::format("events {} and {} have the same id {}",
                                                 ids[i - 1].second, ids[i].second,
                                                 FormatEventId(ids[i].first)));
    }
  }
  return Status::Ok();
}

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

// The same event again: a retry of the append that stored `stored`. Everything the client
// gave must match; the timestamp only when the client gave one (else the store's clock set it).
bool SameEvent(const EventView& stored, const Event& event, bool timestamp_given) {
  return stored.id == event.id && stored.type == event.type && stored.data == event.data &&
         stored.tags.size() == event.tags.size() &&
         std::equal(event.tags.begin(), event.tags.end(), stored.tags.begin()) &&
         stored.correlation_id == event.metadata.correlation_id &&
         stored.causation_id == event.metadata.causation_id &&
         stored.idempotency_key == event.metadata.idempotency_key &&
         stored.user_metadata == event.metadata.user &&
         (!timestamp_given || stored.timestamp_ms == event.metadata.timestamp_ms);
}

}  // namespace

uint64_t EventView::StoredBytes() const {
  return events::StoredBytes(type, tags, data,
                             {correlation_id, causation_id, idempotency_key, user_metadata});
}

EventView EventView::Of(const SequencedEvent& event) {
  EventView view;
  const EventMetadata& m = event.event.metadata;
  view.position = event.position;
  view.type = event.event.type;
  view.tags.assign(event.event.tags.begin(), event.event.tags.end());
  view.data = event.event.data;
  view.id = event.event.id;
  view.timestamp_ms = m.timestamp_ms;
  view.correlation_id = m.correlation_id;
  view.causation_id = m.causation_id;
  view.idempotency_key = m.idempotency_key;
  view.user_metadata = m.user;
  return view;
}

SequencedEvent EventView::ToEvent() const {
  SequencedEvent out;
  out.position = position;
  out.event.type = std::string(type);
  out.event.tags.assign(tags.begin(), tags.end());
  out.event.data = std::string(data);
  out.event.id = id;
  out.event.metadata.timestamp_ms = timestamp_ms;
  out.event.metadata.correlation_id = std::string(correlation_id);
  out.event.metadata.causation_id = std::string(causation_id);
  out.event.metadata.idempotency_key = std::string(idempotency_key);
  out.event.metadata.user = std::string(user_metadata);
  return out;
}

namespace detail {

// The store itself; EventStore handles and subscriptions share it, so a subscription that
// outlives its handle fails cleanly instead of touching freed memory.
class LogCore : public std::enable_shared_from_this<LogCore> {
 public:
  LogCore(std::filesystem::path dir, EventStoreOptions options)
      : dir_(std::move(dir)), options_(std::move(options)), bases_(new Base[kMaxSegments]) {}

  ~LogCore() {
    Close();
    for (Segment& segment : segments_) {
      if (segment.base) ::munmap(const_cast<uint8_t*>(segment.base), segment.mapped);
      if (segment.fd >= 0) ::close(segment.fd);
    }
    if (lock_fd_ >= 0) ::close(lock_fd_);
  }

  // ---- Opening and recovery -----------------------------------------------------------------

  Status Open() {
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    if (ec) {
      return Status::Unavailable(
          fmt::format("cannot create event store directory {}: {}", dir_.string(), ec.message()));
    }
    auto lock_path = dir_ / "LOCK";
    lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lock_fd_ < 0) return Status::Unavailable(Errno("cannot open", lock_path));
    if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
      return Status::Unavailable(
          fmt::format("event store {} is in use by another process (lock {})", dir_.string(),
                      lock_path.string()));
    }
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
      std::string name = entry.path().filename().string();
      if (name.starts_with("segment-") && name.ends_with(".log")) files.push_back(entry.path());
    }
    if (ec) return Status::Unavailable(Errno("cannot list", dir_));
    std::sort(files.begin(), files.end());
    for (size_t i = 0; i < files.size(); ++i) {
      REEF_RETURN_IF_ERROR(Recover(files[i], i + 1 == files.size()));
    }
    if (segments_.empty()) REEF_RETURN_IF_ERROR(StartSegment(1));
    // Whatever recovery changed, and the directory's own entry, are durable before the first
    // append is acknowledged.
    REEF_RETURN_IF_ERROR(SyncDirectory(dir_));
    if (dir_.has_parent_path()) REEF_RETURN_IF_ERROR(SyncDirectory(dir_.parent_path()));
    head_.store(index_.last());
    if (duplicate_ids_recovered_ > 0) {
      spdlog::warn(
          "event store {}: {} events reuse an id an earlier event has (written before "
          "ids were unique); reads by id find the earlier one",
          dir_.string(), duplicate_ids_recovered_);
    }
    writer_ = std::thread([this] { WriterLoop(); });
    return Status::Ok();
  }

  // ---- The EventStore operations ------------------------------------------------------------

  Result<Position> Append(std::vector<Event> events, std::optional<AppendCondition> condition) {
    if (events.empty()) return Status::InvalidArgument("an append needs at least one event");
    const EventLimits& limits = options_.limits;
    if (condition) REEF_RETURN_IF_ERROR(ValidateQuery(condition->fail_if_events_match, limits));
    auto request = std::make_unique<AppendRequest>();
    int64_t now = UnixNowMs();
    REEF_RETURN_IF_ERROR(FillNilEventIds(events));
    REEF_RETURN_IF_ERROR(CheckDistinctIds(events));
    request->timestamp_given.reserve(events.size());
    for (const Event& event : events) {
      request->timestamp_given.push_back(event.metadata.timestamp_ms != 0);
    }
    uint64_t total = 0;
    for (size_t i = 0; i < events.size(); ++i) {
      REEF_RETURN_IF_ERROR(NormalizeEvent(events[i], i, limits, now));
      total += StoredBytes(events[i]);
      if (total > limits.max_append_bytes) {
        return Status::LimitExceeded(fmt::format(
            "the append's events take more than {} bytes (max_append_bytes); {} events reached "
            "{} bytes",
            limits.max_append_bytes, i + 1, total));
      }
    }
    request->body.reserve(total);
    request->record_offsets.reserve(events.size());
    for (const Event& event : events) {
      request->record_offsets.push_back(static_cast<uint32_t>(request->body.size()));
      detail::EncodeRecord(event, request->body);
    }
    request->body_crc = Crc32c(request->body.data(), request->body.size());
    request->events = std::move(events);
    request->condition = std::move(condition);
    std::future<Result<Position>> result = request->done.get_future();
    {
      std::lock_guard lock(queue_mu_);
      if (closing_) return Status::Unavailable(ClosedMessage());
      queue_.push_back(std::move(request));
    }
    queue_cv_.notify_one();
    return result.get();
  }

  Result<Position> ReadEach(const Query& query, const ReadOptions& options,
                            const EventVisitor& visitor) const {
    REEF_RETURN_IF_ERROR(ValidateQuery(query, options_.limits));
    // Nothing read: a forward decision has seen nothing from `from` on.
    if (options.limit && *options.limit == 0)
      return ReadHead(options, std::nullopt, false, head_.load());
    constexpr size_t kChunk = 1024;
    const Position window = options_.read_window_positions;
    std::vector<std::pair<Position, Location>> chunk;
    chunk.reserve(kChunk);
    EventView view;
    uint64_t left = options.limit.value_or(UINT64_MAX);
    Position head = 0;
    std::optional<Position> cursor;  // the next position to look at
    std::optional<Position> last_visited;
    bool finished = false;
    while (!finished) {
      chunk.clear();
      {
        std::shared_lock lock(index_mu_);
        if (!cursor) {
          head = head_.load();
          cursor = options.backwards ? std::min(options.from.value_or(head), head)
                                     : options.from.value_or(1);
        }
        CompiledQuery compiled = index_.Compile(query);
        while (chunk.size() < kChunk && chunk.size() < left) {
          // At most `window` positions per search, then the lock is let go, so a query that
          // matches little never holds the writer off for a whole scan.
          Position edge = options.backwards ? (*cursor > window ? *cursor - window + 1 : 1)
                                            : std::min(head, *cursor + window - 1);
          std::optional<Position> found = options.backwards ? index_.Prev(compiled, *cursor, edge)
                                                            : index_.Next(compiled, *cursor, edge);
          if (!found) {
            bool at_end = options.backwards ? edge <= 1 : edge >= head;
            if (at_end || *cursor == 0 || *cursor > head) {
              finished = true;
            } else {
              cursor = options.backwards ? edge - 1 : edge + 1;
            }
            break;
          }
          chunk.emplace_back(*found, index_.location(*found));
          if (options.backwards) {
            if (*found == 1) {
              finished = true;
              break;
            }
            cursor = *found - 1;
          } else {
            cursor = *found + 1;
          }
        }
      }
      for (const auto& [position, location] : chunk) {
        REEF_RETURN_IF_ERROR(Decode(position, location, view));
        last_visited = position;
        --left;
        if (!visitor(view)) return ReadHead(options, last_visited, false, head);
      }
      if (left == 0) return ReadHead(options, last_visited, false, head);
    }
    return ReadHead(options, last_visited, true, head);
  }

  Position Head() const { return head_.load(); }

  Result<std::optional<SequencedEvent>> ReadById(const EventId& id) const {
    std::optional<Position> found;
    Location location = 0;
    {
      std::shared_lock lock(index_mu_);
      found = FindId(id, head_.load());  // durable events only
      if (found) location = index_.location(*found);
    }
    if (!found) return std::optional<SequencedEvent>();
    EventView view;
    REEF_RETURN_IF_ERROR(Decode(*found, location, view));
    return std::optional<SequencedEvent>(view.ToEvent());
  }

  EventStoreStats Stats() const {
    EventStoreStats stats;
    stats.appends = appends_.load();
    stats.conflicts = conflicts_.load();
    stats.duplicate_ids = duplicates_.load();
    stats.duplicate_ids_recovered = duplicate_ids_recovered_;
    {
      std::shared_lock lock(index_mu_);
      stats.id_index_bytes = ids_.bytes();
    }
    stats.syncs = syncs_.load();
    stats.events_written = events_written_.load();
    stats.torn_bytes_cut = torn_bytes_;
    return stats;
  }

  const EventStoreOptions& options() const { return options_; }

  // Events at the given positions (REQUIRES: each <= Head()), in order.
  Result<std::vector<SequencedEvent>> EventsAt(const std::vector<Position>& positions) const {
    std::vector<Location> locations;
    locations.reserve(positions.size());
    {
      std::shared_lock lock(index_mu_);
      for (Position p : positions) locations.push_back(index_.location(p));
    }
    std::vector<SequencedEvent> out;
    out.reserve(positions.size());
    EventView view;
    for (size_t i = 0; i < positions.size(); ++i) {
      REEF_RETURN_IF_ERROR(Decode(positions[i], locations[i], view));
      out.push_back(view.ToEvent());
    }
    return out;
  }

  // ---- Subscriptions ------------------------------------------------------------------------

  // Makes `sub` live when nothing was appended since the read that ended at `read_head`: from
  // then on the writer pushes every matching event to it. False when the head moved.
  bool GoLive(const std::shared_ptr<SubscriptionState>& sub, Position read_head) {
    std::lock_guard lock(subs_mu_);
    if (closed_flag_.load() || head_.load() != read_head) return false;
    {
      std::lock_guard sub_lock(sub->mu);
      sub->live = true;
    }
    if (std::find(subs_.begin(), subs_.end(), sub) == subs_.end()) subs_.push_back(sub);
    return true;
  }

  void Unsubscribe(const std::shared_ptr<SubscriptionState>& sub) {
    std::lock_guard lock(subs_mu_);
    std::erase(subs_, sub);
  }

  // Closed, or failed after a write error: subscriptions end either way.
  bool ended() const { return closed_flag_.load() || failed_.load(); }
  std::string ClosedMessage() const {
    return failed_.load() ? fmt::format("the event store {} failed after a write error; reopen it",
                                        dir_.string())
                          : fmt::format("the event store {} is closed", dir_.string());
  }

  void Close() {
    {
      std::lock_guard lock(queue_mu_);
      if (closing_) return;
      closing_ = true;
    }
    queue_cv_.notify_all();
    if (writer_.joinable()) writer_.join();
    closed_flag_.store(true);
    std::lock_guard lock(subs_mu_);
    WakeSubscribers();
    subs_.clear();
  }

 private:
  struct Base {
    std::atomic<const uint8_t*> pointer{nullptr};
    std::atomic<uint64_t> mapped{0};
  };

  // ---- Reading helpers ------------------------------------------------------------------

  static Position ReadHead(const ReadOptions& options, std::optional<Position> last_visited,
                           bool reached_end, Position head) {
    if (options.backwards) return std::min(options.from.value_or(head), head);
    if (reached_end) return head;
    return last_visited.value_or(std::max<Position>(options.from.value_or(1), 1) - 1);
  }

  Status Decode(Position position, Location location, EventView& view) const {
    const Base& base = bases_[detail::SegmentOf(location)];
    const uint8_t* segment = base.pointer.load(std::memory_order_acquire);
    uint64_t offset = detail::OffsetOf(location);
    uint64_t mapped = base.mapped.load(std::memory_order_acquire);
    if (!segment || offset >= mapped ||
        detail::DecodeRecord(segment + offset, mapped - offset, view) == 0) {
      return Status::DataLoss(
          fmt::format("event {} in {} cannot be decoded", position, dir_.string()));
    }
    view.position = position;
    return Status::Ok();
  }

  // ---- Segments ---------------------------------------------------------------------------

  uint64_t SegmentCapacity() const {
    return std::max<uint64_t>(
        options_.segment_bytes,
        options_.limits.max_append_bytes + detail::kFrameHeaderBytes + detail::kFileHeaderBytes);
  }

  Status MapSegment(Segment& segment) {
    segment.mapped = std::max(SegmentCapacity(), segment.size);
    void* base = ::mmap(nullptr, segment.mapped, PROT_READ, MAP_SHARED, segment.fd, 0);
    if (base == MAP_FAILED) return Status::Unavailable(Errno("cannot map", segment.path));
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

  Status StartSegment(Position first) {
    Segment segment;
    segment.path = dir_ / SegmentName(first);
    segment.fd = ::open(segment.path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (segment.fd < 0) return Status::Unavailable(Errno("cannot create", segment.path));
    std::string header = detail::EncodeFileHeader(first);
    Status written = WriteAll(segment.fd, header.data(), header.size(), 0, segment.path);
    if (written.ok() && ::fdatasync(segment.fd) != 0) {
      written = Status::Unavailable(Errno("cannot sync", segment.path));
    }
    if (!written.ok()) {
      ::close(segment.fd);
      return written;
    }
    REEF_RETURN_IF_ERROR(SyncDirectory(dir_));
    segment.size = header.size();
    return MapSegment(segment);
  }

  // Reads one segment file into the index. In the last file, a torn frame at the end (an
  // append that was never acknowledged) is cut away; anywhere else, a bad frame is DataLoss.
  Status Recover(const std::filesystem::path& path, bool last_file) {
    Segment segment;
    segment.path = path;
    segment.fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (segment.fd < 0) return Status::Unavailable(Errno("cannot open", path));
    struct stat st {};
    if (::fstat(segment.fd, &st) != 0) {
      ::close(segment.fd);
      return Status::Unavailable(Errno("cannot stat", path));
    }
    segment.size = static_cast<uint64_t>(st.st_size);
    Status mapped = MapSegment(segment);
    if (!mapped.ok()) {
      ::close(segment.fd);
      return mapped;
    }
    uint32_t number = static_cast<uint32_t>(segments_.size() - 1);
    Segment& s = segments_.back();
    auto data_loss = [&](uint64_t offset, std::string_view what) {
      return Status::DataLoss(fmt::format("event store segment {} is unreadable at byte {}: {}",
                                          path.string(), offset, what));
    };
    if (s.size < detail::kFileHeaderBytes || !detail::DecodeFileHeader(s.base)) {
      if (last_file && s.size < detail::kFileHeaderBytes) {
        // Created but its header never synced: start it again.
        return Rewrite(s, index_.last() + 1);
      }
      return data_loss(0, "not an event store segment (bad file header)");
    }
    Position expected = index_.last() + 1;
    if (*detail::DecodeFileHeader(s.base) != expected) {
      return data_loss(0, fmt::format("it starts at position {}, but {} comes next",
                                      *detail::DecodeFileHeader(s.base), expected));
    }
    uint64_t offset = detail::kFileHeaderBytes;
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
          return Status::Unavailable(Errno("cannot cut the torn end of", path));
        }
        s.size = offset;
        break;
      }
      auto header = *detail::DecodeFrameHeader(s.base + offset);
      uint64_t record = offset + detail::kFrameHeaderBytes;
      if (ids_.NeedsGrowth(header.event_count)) {
        ids_.Adopt(ids_.Grown(header.event_count, [this](Position p) { return IdAt(p); }));
      }
      for (uint32_t i = 0; i < header.event_count; ++i) {
        size_t size = detail::DecodeRecord(s.base + record, s.size - record, view);
        const Position position = header.first_position + i;
        index_.Add(position, detail::MakeLocation(number, record), view.type, view.tags);
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

  Status Rewrite(Segment& s, Position first) {
    std::string header = detail::EncodeFileHeader(first);
    REEF_RETURN_IF_ERROR(WriteAll(s.fd, header.data(), header.size(), 0, s.path));
    if (::fdatasync(s.fd) != 0) return Status::Unavailable(Errno("cannot sync", s.path));
    s.size = header.size();
    return Status::Ok();
  }

  // Empty when a whole, intact frame starting at `first` lies at `offset`; else what is wrong.
  static std::string CheckFrame(const Segment& s, uint64_t offset, Position first) {
    if (s.size - offset < detail::kFrameHeaderBytes) return "a frame header is cut short";
    auto header = detail::DecodeFrameHeader(s.base + offset);
    if (!header) return "bad frame header (magic or checksum)";
    if (header->first_position != first) {
      return fmt::format("the frame starts at position {}, but {} comes next",
                         header->first_position, first);
    }
    uint64_t body = offset + detail::kFrameHeaderBytes;
    if (s.size - body < header->body_bytes) return "the frame's events are cut short";
    if (Crc32c(s.base + body, header->body_bytes) != header->body_crc) {
      return "the frame's events fail their checksum";
    }
    EventView view;
    uint64_t record = body;
    for (uint32_t i = 0; i < header->event_count; ++i) {
      size_t size = detail::DecodeRecord(s.base + record, body + header->body_bytes - record, view);
      if (size == 0) return fmt::format("event {} of the frame is malformed", i);
      record += size;
    }
    if (record != body + header->body_bytes) return "the frame has bytes after its events";
    return "";
  }

  // True when a whole frame with intact checksums, starting at position `first` or later,
  // lies at `at`.
  static bool IntactFrameAt(const Segment& s, uint64_t at, Position first) {
    if (at + detail::kFrameHeaderBytes > s.size) return false;
    auto header = detail::DecodeFrameHeader(s.base + at);
    if (!header || header->first_position < first) return false;
    uint64_t body = at + detail::kFrameHeaderBytes;
    return s.size - body >= header->body_bytes &&
           Crc32c(s.base + body, header->body_bytes) == header->body_crc;
  }

  // Whether the bad frame at `offset` (in the last segment, where position `first` comes
  // next) is the torn end of an append that was never acknowledged, rather than damage to
  // acknowledged data. A torn end has no intact frame after it: when its own header is whole,
  // nothing intact where the frame says it ends; when not, nothing intact anywhere after it.
  static bool IsTornEnd(const Segment& s, uint64_t offset, Position first) {
    std::optional<detail::FrameHeader> header;
    if (s.size - offset >= detail::kFrameHeaderBytes) {
      header = detail::DecodeFrameHeader(s.base + offset);
    }
    if (header && header->first_position == first) {
      uint64_t end = offset + detail::kFrameHeaderBytes + header->body_bytes;
      return end >= s.size || !IntactFrameAt(s, end, first + header->event_count);
    }
    for (uint64_t at = offset + 1; at + detail::kFrameHeaderBytes <= s.size; ++at) {
      if (s.base[at] == (detail::kFrameMagic & 0xff) && IntactFrameAt(s, at, first)) return false;
    }
    return true;
  }

  // ---- The writer ----------------------------------------------------------------------------

  void WriterLoop() {
    std::vector<std::unique_ptr<AppendRequest>> batch;
    for (;;) {
      batch.clear();
      {
        std::unique_lock lock(queue_mu_);
        queue_cv_.wait(lock, [this] { return !queue_.empty() || closing_; });
        if (queue_.empty()) return;
        uint64_t bytes = 0;
        while (!queue_.empty() && (batch.empty() || bytes < options_.max_batch_bytes)) {
          bytes += queue_.front()->body.size() + detail::kFrameHeaderBytes;
          batch.push_back(std::move(queue_.front()));
          queue_.pop_front();
        }
      }
      WriteBatch(batch);
      for (auto& request : batch) request->done.set_value(std::move(request->result));
    }
  }

  void WriteBatch(std::vector<std::unique_ptr<AppendRequest>>& batch) {
    if (failed_.load()) {
      for (auto& request : batch) request->result = Status::Unavailable(ClosedMessage());
      return;
    }
    Position durable = head_.load();
    staged_.clear();
    std::string buffer;
    uint64_t buffer_start = segments_.back().size;
    Status status;
    for (auto& request : batch) {
      if (Decide(*request)) {
        request->decided = true;
        continue;
      }
      uint64_t frame_bytes = detail::kFrameHeaderBytes + request->body.size();
      if (buffer_start + buffer.size() + frame_bytes > SegmentCapacity()) {
        status = Flush(buffer, buffer_start);
        if (status.ok()) status = StartSegment(index_.last() + 1);
        if (!status.ok()) break;
        buffer.clear();
        buffer_start = segments_.back().size;
      }
      Stage(*request, buffer_start + buffer.size());
      buffer += detail::EncodeFrameHeader({request->result.value() - request->events.size() + 1,
                                           static_cast<uint32_t>(request->events.size()),
                                           static_cast<uint32_t>(request->body.size()),
                                           request->body_crc});
      buffer += request->body;
    }
    if (status.ok()) status = Flush(buffer, buffer_start);
    if (!status.ok()) {
      Fail(durable);
      // Staged appends, retries that count on them, and those never reached are all lost.
      for (auto& request : batch) {
        if (request->staged || request->needs_this_batch || !request->decided) {
          request->result = Status::Unavailable(status.message());
        }
      }
      return;
    }
    Publish(batch);
  }

  // Settles `request` without writing when it must not be written: a retry of events already
  // stored, an id stored before, or a failed condition. Checks against everything staged so
  // far. True when settled.
  bool Decide(AppendRequest& request) {
    if (DecideIds(request)) return true;
    if (!request.condition) return false;
    const AppendCondition& condition = *request.condition;
    Position after = condition.after.value_or(0);
    if (after >= index_.last()) return false;  // nothing comes after it (and after + 1 may wrap)
    CompiledQuery compiled = index_.Compile(condition.fail_if_events_match);
    std::optional<Position> first = index_.Next(compiled, after + 1, index_.last());
    if (!first) return false;
    conflicts_.fetch_add(1);
    request.result = Status::Conflict(fmt::format(
        "append condition failed: event {} matches fail_if_events_match and comes after {}", *first,
        after));
    return true;
  }

  // Event ids are unique in the store. When every event of `request` is already stored, the
  // same, at consecutive positions in order, it is a retry and gets their last position;
  // otherwise any id stored before refuses it (DuplicateEventId). False when no id is stored.
  bool DecideIds(AppendRequest& request) {
    const std::vector<Event>& events = request.events;
    for (size_t i = 0; i < events.size(); ++i) {
      std::optional<Position> stored = FindId(events[i].id, index_.last());
      if (!stored) continue;
      if (i == 0 && *stored + events.size() - 1 <= index_.last()) {
        bool retry = true;
        EventView view;
        for (size_t k = 0; k < events.size() && retry; ++k) {
          retry =
              ViewAt(*stored + k, view) && SameEvent(view, events[k], request.timestamp_given[k]);
        }
        if (retry) {
          Position end = *stored + events.size() - 1;
          request.result = end;
          request.needs_this_batch = end > head_.load();
          return true;
        }
      }
      duplicates_.fetch_add(1);
      request.result = Status::DuplicateEventId(fmt::format(
          "event {} has id {}, which the store already holds at position {} (event ids are "
          "unique; a retry must resend the whole append unchanged)",
          i, FormatEventId(events[i].id), *stored));
      return true;
    }
    return false;
  }

  // The position at or below `bound` holding `id`. Staged positions count when `bound` passes
  // the head, which only the writer thread may ask; others hold index_mu_ and pass the head.
  std::optional<Position> FindId(const EventId& id, Position bound) const {
    std::optional<Position> found;
    EventView view;
    ids_.ForEachCandidate(id, [&](Position position) {
      if (position <= bound && ViewAt(position, view) && view.id == id) found = position;
      return found.has_value();
    });
    return found;
  }

  // The id at `position`, for growing the id index (writer thread).
  EventId IdAt(Position position) const {
    EventView view;
    return ViewAt(position, view) ? view.id : EventId{};
  }

  // The event at `position` (REQUIRES: <= index_.last()) as the writer sees it: from the log
  // when durable, else from the request staged earlier in this batch (not in the file yet).
  bool ViewAt(Position position, EventView& view) const {
    if (position <= head_.load()) return Decode(position, index_.location(position), view).ok();
    for (const auto& [first, request] : staged_) {
      if (position < first || position >= first + request->events.size()) continue;
      const Event& event = request->events[position - first];
      view.position = position;
      view.type = event.type;
      view.tags.assign(event.tags.begin(), event.tags.end());
      view.data = event.data;
      view.id = event.id;
      view.timestamp_ms = event.metadata.timestamp_ms;
      view.correlation_id = event.metadata.correlation_id;
      view.causation_id = event.metadata.causation_id;
      view.idempotency_key = event.metadata.idempotency_key;
      view.user_metadata = event.metadata.user;
      return true;
    }
    return false;
  }

  // Adds `request`'s events to the index (invisible to readers until Publish) and fixes its
  // positions; its frame starts at byte `frame_offset` of the active segment.
  void Stage(AppendRequest& request, uint64_t frame_offset) {
    auto number = static_cast<uint32_t>(segments_.size() - 1);
    std::vector<std::string_view> tags;
    std::optional<std::vector<uint64_t>> grown;
    if (ids_.NeedsGrowth(request.events.size())) {
      // Built before the lock is taken, so readers are held off only for the swap.
      grown = ids_.Grown(request.events.size(), [this](Position p) { return IdAt(p); });
    }
    std::unique_lock lock(index_mu_);
    if (grown) ids_.Adopt(std::move(*grown));
    Position position = index_.last();
    for (size_t i = 0; i < request.events.size(); ++i) {
      const Event& event = request.events[i];
      tags.assign(event.tags.begin(), event.tags.end());
      uint64_t record = frame_offset + detail::kFrameHeaderBytes + request.record_offsets[i];
      index_.Add(++position, detail::MakeLocation(number, record), event.type, tags);
      ids_.Add(event.id, position);
    }
    request.result = position;
    request.staged = true;
    request.decided = true;
    staged_.emplace_back(position - request.events.size() + 1, &request);
  }

  // Writes `buffer` at `offset` of the active segment and syncs it.
  Status Flush(const std::string& buffer, uint64_t offset) {
    if (buffer.empty()) return Status::Ok();
    Segment& segment = segments_.back();
    REEF_RETURN_IF_ERROR(WriteAll(segment.fd, buffer.data(), buffer.size(), offset, segment.path));
    if (::fdatasync(segment.fd) != 0)
      return Status::Unavailable(Errno("cannot sync", segment.path));
    syncs_.fetch_add(1);
    segment.size = offset + buffer.size();
    return Status::Ok();
  }

  // A write or sync failed: what the kernel holds is unknown, so no further append is
  // accepted until the store is reopened (which recovers from what is really on disk).
  void Fail(Position durable) {
    failed_.store(true);
    {
      std::unique_lock lock(index_mu_);
      index_.TruncateAfter(durable);
      ids_.TruncateAfter(durable, [this](Position p) { return IdAt(p); });
    }
    std::lock_guard lock(subs_mu_);
    WakeSubscribers();
  }

  // Wakes every subscriber waiting for events, so it sees the store closed or failed.
  // REQUIRES: subs_mu_ held.
  void WakeSubscribers() {
    for (auto& sub : subs_) {
      std::lock_guard sub_lock(sub->mu);
      sub->cv.notify_all();
    }
  }

  // Makes the batch visible: the new head, then live subscribers get their events.
  void Publish(const std::vector<std::unique_ptr<AppendRequest>>& batch) {
    Position head = index_.last();
    std::lock_guard lock(subs_mu_);
    head_.store(head);
    for (auto& request : batch) {
      if (!request->staged) continue;
      appends_.fetch_add(1);
      events_written_.fetch_add(request->events.size());
    }
    if (subs_.empty()) return;
    std::vector<std::string_view> tags;
    for (auto& sub : subs_) {
      std::lock_guard sub_lock(sub->mu);
      if (!sub->live) continue;
      bool pushed = false;
      for (auto& request : batch) {
        if (!request->staged || !sub->live) continue;
        Position first = request->result.value() - request->events.size() + 1;
        for (size_t i = 0; i < request->events.size() && sub->live; ++i) {
          const Event& event = request->events[i];
          tags.assign(event.tags.begin(), event.tags.end());
          if (first + i <= sub->floor || !Matches(sub->query, event.type, tags)) continue;
          if (sub->buffer.size() >= options_.subscription_buffer_events) {
            sub->FallBack();
            break;
          }
          sub->buffer.push_back(first + i);
          pushed = true;
        }
      }
      if (pushed || !sub->live) sub->cv.notify_all();
    }
  }

  // ---- State --------------------------------------------------------------------------------

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

  // Protected by index_mu_ (the writer holds it exclusively only to stage or drop entries).
  mutable std::shared_mutex index_mu_;
  EventIndex index_;
  detail::EventIdIndex ids_;
  // The last durable, visible position; written under subs_mu_.
  std::atomic<Position> head_{0};
  std::atomic<bool> failed_{false};
  std::atomic<bool> closed_flag_{false};

  // Protected by queue_mu_.
  std::mutex queue_mu_;
  std::condition_variable queue_cv_;
  std::deque<std::unique_ptr<AppendRequest>> queue_;
  bool closing_ = false;

  // Protected by subs_mu_.
  std::mutex subs_mu_;
  std::vector<std::shared_ptr<SubscriptionState>> subs_;

  std::atomic<uint64_t> appends_{0}, conflicts_{0}, duplicates_{0}, syncs_{0}, events_written_{0};
};

}  // namespace detail

namespace {

// ---- Subscription ---------------------------------------------------------------------------

class LogSubscription final : public Subscription {
 public:
  LogSubscription(std::shared_ptr<detail::LogCore> core, Query query, Position after)
      : core_(std::move(core)), state_(std::make_shared<detail::SubscriptionState>()) {
    state_->query = std::move(query);
    state_->floor = after;
    state_->cursor = after;
  }
  ~LogSubscription() override { core_->Unsubscribe(state_); }

  Result<std::vector<SequencedEvent>> Next(size_t max_events,
                                           std::chrono::milliseconds timeout) override {
    max_events = std::max<size_t>(max_events, 1);
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      if (core_->ended()) return Status::Unavailable(core_->ClosedMessage());
      std::vector<Position> positions;
      bool live;
      {
        std::unique_lock lock(state_->mu);
        if (state_->live) {
          state_->cv.wait_until(lock, deadline, [&] {
            return !state_->buffer.empty() || !state_->live || core_->ended();
          });
          while (!state_->buffer.empty() && positions.size() < max_events) {
            positions.push_back(state_->buffer.front());
            state_->buffer.pop_front();
          }
          if (!positions.empty()) state_->cursor = positions.back();
        }
        live = state_->live;
      }
      if (!positions.empty()) return core_->EventsAt(positions);
      if (live) {
        if (core_->ended()) continue;
        if (std::chrono::steady_clock::now() >= deadline) return std::vector<SequencedEvent>();
        continue;
      }
      // Catching up: read from the cursor; when nothing is left, try to go live.
      std::vector<SequencedEvent> events;
      ReadOptions options;
      options.from = position() + 1;
      options.limit = max_events;
      REEF_ASSIGN_OR_RETURN(Position head,
                            core_->ReadEach(state_->query, options, [&](const EventView& view) {
                              events.push_back(view.ToEvent());
                              return true;
                            }));
      if (!events.empty()) {
        std::lock_guard lock(state_->mu);
        state_->cursor = events.back().position;
        return events;
      }
      if (!core_->GoLive(state_, head) && core_->ended()) {
        return Status::Unavailable(core_->ClosedMessage());
      }
    }
  }

  Position position() const override {
    std::lock_guard lock(state_->mu);
    return state_->cursor;
  }
  bool live() const override {
    std::lock_guard lock(state_->mu);
    return state_->live;
  }
  uint64_t fallbacks() const override {
    std::lock_guard lock(state_->mu);
    return state_->fallbacks;
  }

 private:
  std::shared_ptr<detail::LogCore> core_;
  std::shared_ptr<detail::SubscriptionState> state_;
};

// ---- The handle -----------------------------------------------------------------------------

class LogEventStore final : public EventStore {
 public:
  explicit LogEventStore(std::shared_ptr<detail::LogCore> core) : core_(std::move(core)) {}
  ~LogEventStore() override { core_->Close(); }

  Result<Position> Append(std::vector<Event> events,
                          std::optional<AppendCondition> condition) override {
    return core_->Append(std::move(events), std::move(condition));
  }
  Result<ReadResult> Read(const Query& query, const ReadOptions& options) const override {
    ReadResult result;
    REEF_ASSIGN_OR_RETURN(result.head, core_->ReadEach(query, options, [&](const EventView& view) {
      result.events.push_back(view.ToEvent());
      return true;
    }));
    return result;
  }
  Result<Position> ReadEach(const Query& query, const ReadOptions& options,
                            const EventVisitor& visitor) const override {
    return core_->ReadEach(query, options, visitor);
  }
  Position Head() const override { return core_->Head(); }
  Result<std::optional<SequencedEvent>> ReadById(const EventId& id) const override {
    return core_->ReadById(id);
  }
  Result<std::unique_ptr<Subscription>> Subscribe(const Query& query, Position after) override {
    REEF_RETURN_IF_ERROR(ValidateQuery(query, core_->options().limits));
    if (core_->ended()) return Status::Unavailable(core_->ClosedMessage());
    return std::unique_ptr<Subscription>(std::make_unique<LogSubscription>(core_, query, after));
  }
  EventStoreStats Stats() const override { return core_->Stats(); }
  const EventLimits& limits() const override { return core_->options().limits; }

 private:
  std::shared_ptr<detail::LogCore> core_;
};

Status ValidateOptions(const EventStoreOptions& options) {
  const EventLimits& limits = options.limits;
  if (limits.max_type_bytes > UINT16_MAX || limits.max_tag_bytes > UINT16_MAX ||
      limits.max_metadata_bytes > UINT16_MAX || limits.max_tags_per_event > UINT16_MAX ||
      limits.max_user_metadata_bytes > UINT16_MAX) {
    return Status::InvalidArgument(
        "event limits: types, tags and metadata strings are stored with 16-bit lengths (at most "
        "65535 bytes, 65535 tags)");
  }
  if (limits.max_event_bytes > UINT32_MAX || limits.max_append_bytes > (uint64_t{1} << 31)) {
    return Status::InvalidArgument(
        "event limits: max_event_bytes and max_append_bytes must stay "
        "below 2 GiB");
  }
  if (limits.max_event_bytes == 0 || limits.max_append_bytes == 0) {
    return Status::InvalidArgument(
        "event limits: max_event_bytes and max_append_bytes must be > 0");
  }
  if (options.segment_bytes >= (uint64_t{1} << detail::kOffsetBits)) {
    return Status::InvalidArgument("segment_bytes must stay below 1 TiB");
  }
  if (options.subscription_buffer_events == 0 || options.max_batch_bytes == 0 ||
      options.read_window_positions == 0) {
    return Status::InvalidArgument(
        "subscription_buffer_events, max_batch_bytes and read_window_positions must be > 0");
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<EventStore>> OpenEventStore(const std::filesystem::path& dir,
                                                   const EventStoreOptions& options) {
  REEF_RETURN_IF_ERROR(ValidateOptions(options));
  auto core = std::make_shared<detail::LogCore>(dir, options);
  REEF_RETURN_IF_ERROR(core->Open());
  return std::unique_ptr<EventStore>(std::make_unique<LogEventStore>(std::move(core)));
}

}  // namespace reef::events
