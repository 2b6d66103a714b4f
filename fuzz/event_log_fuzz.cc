// Fuzzes the event store's recovery (OpenEventStore, events/event_store.h; the segment format
// in events/detail/log_format.h): whatever bytes a segment file holds, opening the store either
// fails with DataLoss or recovers a store whose events sit at positions 1..head with no gap,
// whose index finds each of them, that takes one more (conditional) append, and that reopens
// with head + 1 events. Nothing may crash: no SIGBUS from the mappings, no ASan report.
//
// Input: one mode byte, then the segment bytes, written as segment-00000000000000000001.log:
//   bit 0 clear  the bytes are the whole file
//   bit 0 set    a valid file header (EncodeFileHeader(1)) comes first, so inputs reach frames
//   bits 0+1     and the bytes are cut into frames whose headers get the magic and both CRCs
//                (and, unless bit 2 is set, the next position) fixed, so inputs get past the
//                checksums to the event records
//
// Each input runs in a fixed directory per process, <tmp>/reef-event-log-fuzz-<pid>, cleared
// first. <tmp> is $TMPDIR, else /dev/shm (appends fdatasync: tmpfs keeps that fast), else /tmp.
//
// Seeds: REEF_EVENT_LOG_FUZZ_SEEDS=DIR event_log_fuzz writes seed inputs built from segments
// that the store itself wrote into DIR, then exits (fuzz/seeds/event_log_fuzz holds them).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/utf8.h"
#include "events/detail/log_format.h"
#include "events/event.h"
#include "events/event_store.h"
#include "fuzz_check.h"

namespace {

namespace events = reef::events;
namespace detail = reef::events::detail;
namespace fs = std::filesystem;

constexpr uint8_t kWithHeader = 1;
constexpr uint8_t kFixFrames = 2;
constexpr uint8_t kKeepPositions = 4;
constexpr std::string_view kSegmentName = "segment-00000000000000000001.log";

fs::path TempRoot() {
  if (const char* tmp = std::getenv("TMPDIR"); tmp != nullptr && *tmp != '\0') return tmp;
  std::error_code ec;
  if (fs::is_directory("/dev/shm", ec)) return "/dev/shm";
  return "/tmp";
}

const fs::path& FuzzDir() {
  static const fs::path* dir = [] {
    auto* path = new fs::path(TempRoot() / ("reef-event-log-fuzz-" + std::to_string(::getpid())));
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(FuzzDir(), ec);
    });
    return path;
  }();
  return *dir;
}

void ResetDir(const fs::path& dir) {
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::create_directories(dir, ec);
  FUZZ_CHECK(!ec);
}

void WriteFile(const fs::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  FUZZ_CHECK(out.good());
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

template <typename T>
T Load(const uint8_t* p) {
  T value;
  std::memcpy(&value, p, sizeof(T));
  return value;
}

// The frames of `bytes` with their headers made valid: each 32-byte header keeps its event
// count and body length (its first position too, when `keep_positions`), and gets the magic,
// the next position and both CRCs; the body is what follows, up to its length (a body cut
// short by the input's end gets the CRC of what is there).
std::string FixFrames(const uint8_t* bytes, size_t size, bool keep_positions) {
  std::string out;
  events::Position next = 1;
  size_t at = 0;
  while (size - at >= detail::kFrameHeaderBytes) {
    detail::FrameHeader header;
    header.first_position = keep_positions ? Load<uint64_t>(bytes + at + 8) : next;
    header.event_count = Load<uint32_t>(bytes + at + 16);
    header.body_bytes = Load<uint32_t>(bytes + at + 20);
    at += detail::kFrameHeaderBytes;
    size_t body = std::min<size_t>(header.body_bytes, size - at);
    header.body_crc = detail::Crc32c(bytes + at, body);
    out += detail::EncodeFrameHeader(header);
    out.append(reinterpret_cast<const char*>(bytes + at), body);
    at += body;
    next += header.event_count;
  }
  out.append(reinterpret_cast<const char*>(bytes + at), size - at);
  return out;
}

std::string SegmentFromInput(const uint8_t* data, size_t size) {
  if (size == 0) return std::string();
  uint8_t mode = data[0];
  ++data;
  --size;
  if ((mode & kWithHeader) == 0) return std::string(reinterpret_cast<const char*>(data), size);
  std::string segment = detail::EncodeFileHeader(1);
  if ((mode & kFixFrames) != 0) {
    segment += FixFrames(data, size, (mode & kKeepPositions) != 0);
  } else {
    segment.append(reinterpret_cast<const char*>(data), size);
  }
  return segment;
}

bool IsName(std::string_view name, uint32_t max_bytes) {
  return !name.empty() && name.size() <= max_bytes && reef::IsValidUtf8(name);
}

// The index finds `event` by its type and tags, reading forwards from its position.
void CheckIndexed(const events::EventStore& store, const events::SequencedEvent& event) {
  const events::EventLimits& limits = store.limits();
  events::QueryItem item;
  if (IsName(event.event.type, limits.max_type_bytes)) item.types.push_back(event.event.type);
  for (const std::string& tag : event.event.tags) {
    if (item.tags.size() < limits.max_item_terms && IsName(tag, limits.max_tag_bytes)) {
      item.tags.push_back(tag);
    }
  }
  if (item.types.empty() && item.tags.empty()) return;
  events::ReadOptions options;
  options.from = event.position;
  options.limit = 1;
  auto found = store.Read(events::Query{{item}}, options);
  FUZZ_CHECK(found.ok() && found->events.size() == 1 && found->events[0] == event);
}

events::Event Appended() {
  events::Event event;
  event.type = "FuzzAppended";
  event.tags = {"fuzz:1", "fuzz:2"};
  event.data = "{\"n\":1}";
  event.metadata.correlation_id = "fuzz";
  return event;
}

void Run(const fs::path& dir, std::string_view segment) {
  ResetDir(dir);
  WriteFile(dir / kSegmentName, segment);

  events::Position head = 0;
  {
    auto store = events::OpenEventStore(dir);
    if (!store.ok()) {
      // Bytes are never an I/O error: the only refusal is an unreadable log.
      FUZZ_CHECK(store.status().code() == reef::Code::kDataLoss);
      return;
    }
    head = (*store)->Head();
    auto all = (*store)->Read(events::Query{});
    FUZZ_CHECK(all.ok() && all->head == head && all->events.size() == head);
    for (size_t i = 0; i < all->events.size(); ++i) {
      FUZZ_CHECK(all->events[i].position == i + 1);
      if (i < 16) CheckIndexed(**store, all->events[i]);
    }
    events::AppendCondition condition;
    condition.fail_if_events_match.items.push_back({{"FuzzAppended"}, {}});
    condition.after = head;
    auto position = (*store)->Append({Appended()}, condition);
    FUZZ_CHECK(position.ok() && *position == head + 1 && (*store)->Head() == head + 1);
  }
  auto reopened = events::OpenEventStore(dir);
  FUZZ_CHECK(reopened.ok() && (*reopened)->Head() == head + 1);
  events::ReadOptions last;
  last.from = head + 1;
  auto read = (*reopened)->Read(events::Query{}, last);
  FUZZ_CHECK(read.ok() && read->events.size() == 1 && read->events[0].position == head + 1);
  events::Event expected = Appended();
  expected.id = read->events[0].event.id;
  expected.metadata.timestamp_ms = read->events[0].event.metadata.timestamp_ms;
  FUZZ_CHECK(read->events[0].event == expected);
  CheckIndexed(**reopened, read->events[0]);
}

// ---- Seed generator ---------------------------------------------------------------------------

events::Event SeedEvent(std::string type, std::vector<std::string> tags, std::string data) {
  events::Event event;
  event.type = std::move(type);
  event.tags = std::move(tags);
  event.data = std::move(data);
  return event;
}

// Appends a few events with the store itself and returns the segment it wrote.
std::string RealSegment(const fs::path& dir) {
  ResetDir(dir);
  {
    auto store = events::OpenEventStore(dir);
    FUZZ_CHECK(store.ok());
    events::AppendCondition condition;
    condition.fail_if_events_match.items.push_back({{}, {"course:c1"}});
    condition.after = 0;
    FUZZ_CHECK(
        (*store)
            ->Append({SeedEvent("CourseDefined", {"course:c1"}, "{\"capacity\":10}")}, condition)
            .ok());
    events::Event subscribed =
        SeedEvent("StudentSubscribed", {"course:c1", "student:s1", "course:c1"}, "{}");
    subscribed.metadata = {1764547200000, "req-7", "cmd-3", "k-1"};
    FUZZ_CHECK((*store)
                   ->Append({subscribed, SeedEvent("CourseCapacityChanged", {"course:c1"},
                                                   std::string("\x00\xff\x01", 3))})
                   .ok());
    FUZZ_CHECK((*store)->Append({SeedEvent("Untagged", {}, "")}).ok());
  }
  return ReadFile(dir / kSegmentName);
}

void WriteSeeds(const fs::path& out) {
  fs::path work = FuzzDir();
  std::string empty;
  {
    ResetDir(work);
    FUZZ_CHECK(events::OpenEventStore(work).ok());
    empty = ReadFile(work / kSegmentName);
  }
  std::string real = RealSegment(work);
  FUZZ_CHECK(real.size() > detail::kFileHeaderBytes);
  std::string frames = real.substr(detail::kFileHeaderBytes);
  fs::create_directories(out);
  auto seed = [&](std::string_view name, uint8_t mode, std::string_view bytes) {
    WriteFile(out / name, std::string(1, static_cast<char>(mode)) + std::string(bytes));
  };
  seed("empty_store", 0, empty);
  seed("four_events", 0, real);
  seed("torn_end", 0, real.substr(0, real.size() - 9));
  seed("frames", kWithHeader, frames);
  seed("fixed_frames", kWithHeader | kFixFrames, frames);
  seed("short_header", 0, real.substr(0, 20));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* out = std::getenv("REEF_EVENT_LOG_FUZZ_SEEDS")) {
    WriteSeeds(out);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Run(FuzzDir(), SegmentFromInput(data, size));
  return 0;
}
