// events_bench: the embedded DCB event store (src/events/event_store.h) under load, for the
// event-store table of `make bench` (docs/benchmarks.md, "Event store"). scripts/bench.sh runs
// it right after storage_candidates, whose fdatasync and plain SQLite figures are the anchors.
//
// Every event is a row like storage_candidates' (~200 bytes stored): a ~15-byte type, 2 tags
// of ~15 bytes, ~100 bytes of JSON data, and an id the store assigns. Cases:
//
//   fdatasync        the disk's floor in the store's directory: 4 KiB append + fdatasync
//   append_cond      W writers (threads) each loop: Append(M events, AppendCondition{its own
//                    tag "writer:i", after = the last position it appended}); the condition
//                    always passes (only writer i writes that tag)
//   append_plain     the same appends without a condition (the condition's overhead)
//   scan             one ReadEach(Query{}) over a store of --scan-events events (the whole
//                    store), built untimed by 16 threads appending 100 events at a time
//   tag_query        ReadEach of one tag carried by ~1% of the events (course:cNNNNNN, 100
//                    courses), every course once
//   tag_query_limit  Read(one course tag, from a random position, limit 100), repeated
//   journal_append   the image journal (src/actor/journal.h, issue 16) under 64 writers, each
//                    looping Append(a 200-byte record) + WaitDurable: the storage a durable
//                    transition will cost, next to append_cond with 64 writers
//
// W is 1, 16 and 64, M is 1 and 100. Each (W, M) gets a fresh store; one warm-up append per
// writer (untimed) creates its tag, then --rounds rounds alternate append_plain and
// append_cond, --millis / --rounds each (fine slices, so a change in the disk's sync speed
// falls on both modes alike). A writer copies a prepared batch for each append (counted: a
// client builds its events too). appends_per_s = appends / wall time from each slice's start
// until its last writer's last append returned, summed over slices; p50/p99 are per Append
// call. syncs is the store's Stats().syncs during the case (group commits), appends_per_sync =
// appends/syncs. cpu_us_per_append is the process's CPU time (all threads) per append.
// condition_overhead_pct = (plain - cond) / plain appends/s, in percent; cpu_overhead_pct is
// the same on CPU per append (the condition's cost without the disk's noise).
//
//   build/bench/events_bench [--dir DIR] [--millis N] [--rounds N] [--scan-events N]
//                            [--syncs N] [--queries N] [--writers W] [--events-per-append M]
//                            [--reads 0|1]        (--help lists them)
//
// Output: one machine-readable line per figure, e.g.
//
//   bench events=fdatasync case=probe samples=300 p50_us=... p99_us=...
//   bench events=append_cond writers=16 events_per_append=1 appends=... seconds=...
//         appends_per_s=... events_per_s=... p50_us=... p99_us=... syncs=... appends_per_sync=...
//         cpu_us_per_append=...
//   bench events=condition_overhead writers=16 events_per_append=1 condition_overhead_pct=...
//         cpu_overhead_pct=...
//   bench events=scan events_read=... seconds=... events_per_s=...
//   bench events=reopen events_read=... seconds=... events_per_s=...   (open = read + check +
//   index) bench events=tag_query queries=... events_read=... seconds=... queries_per_s=...
//         events_per_s=... p50_us=... p99_us=...
//
// An error from the store (a conflict included: none can happen here) ends the run with exit 1.
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <latch>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "actor/journal.h"
#include "bench_die.h"
#include "bench_flags.h"
#include "events/detail/event_id_index.h"
#include "events/event.h"
#include "events/event_store.h"

namespace {

namespace fs = std::filesystem;
namespace ev = reef::events;
using Clock = std::chrono::steady_clock;

// ---------------------------------------------------------------------------------------------
// Sizes, flags and failure

/// Run sizes. The defaults take ~40 s where fdatasync takes ~4 ms.
struct Sizes {
  int64_t millis = 2000;          // per append case (each of append_cond, append_plain), ms
  int64_t rounds = 20;            // alternations of append_plain / append_cond per (W, M)
  int64_t scan_events = 1000000;  // events in the read store (scan, tag queries)
  int64_t syncs = 300;            // fdatasync probe samples
  int64_t queries = 5000;         // tag_query_limit queries
  int64_t writers = 0;            // only the append cases with this many writers (0: 1, 16, 64)
  int64_t events_per_append = 0;  // only the append cases with this many events (0: 1, 100)
  int64_t reads = 1;              // 0: skip the read cases
};

constexpr int kWriters[] = {1, 16, 64};
constexpr int kEventsPerAppend[] = {1, 100};
constexpr int kCourses = 100;          // course tags in the read store: each on ~1% of events
constexpr int kPrefillThreads = 16;    // writers building the read store
constexpr int kPrefillBatch = 100;     // events per append building the read store
constexpr int kScanRepeats = 3;        // full scans; the median is reported
constexpr uint64_t kQueryLimit = 100;  // events per tag_query_limit read

/// The count flags; --help is generated from these rows (bench_flags.h).
using Flag = reef::bench::CountFlag<Sizes>;
constexpr Flag kFlags[] = {
    {"--millis", &Sizes::millis, 1, "milliseconds per append case (append_cond, append_plain)"},
    {"--rounds", &Sizes::rounds, 1, "alternations of append_plain and append_cond"},
    {"--scan-events", &Sizes::scan_events, 1, "events in the read store (scan, tag queries)"},
    {"--syncs", &Sizes::syncs, 1, "fdatasync probe samples (4 KiB appends)"},
    {"--queries", &Sizes::queries, 1, "tag_query_limit reads"},
    {"--writers", &Sizes::writers, 0, "run only the append cases with N writers (0: all)"},
    {"--events-per-append", &Sizes::events_per_append, 0,
     "run only the append cases with N events per append (0: all)"},
    {"--reads", &Sizes::reads, 0, "1: run the read cases, 0: skip them"},
};

using reef::bench::Check;
using reef::bench::Die;

// The work directory, removed at exit.
std::string g_work_dir;
void RemoveWorkDir() {
  std::error_code ignored;
  if (!g_work_dir.empty()) fs::remove_all(g_work_dir, ignored);
}

/// A fresh, empty directory `name` under the work directory.
fs::path FreshDir(std::string_view name) {
  fs::path dir = fs::path(g_work_dir) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

/// CPU seconds used so far by every thread of this process.
double ProcessCpuSeconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

double Micros(Clock::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}
double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}
double PerSecond(double n, double seconds) {
  return seconds > 0 ? n / seconds : 0;
}

/// The q-quantile (0..1) of `samples`, nearest rank.
double Quantile(std::vector<double> samples, double q) {
  if (samples.empty()) return 0;
  std::sort(samples.begin(), samples.end());
  const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(samples.size())));
  return samples[std::clamp<size_t>(rank, 1, samples.size()) - 1];
}

// ---------------------------------------------------------------------------------------------
// Events

uint64_t Mix(uint64_t x) {  // splitmix64's finalizer: a deterministic "random" per number
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

std::string CourseTag(uint64_t course) {
  return fmt::format("course:c{:06}", course);
}

/// The event numbered `n`, like storage_candidates' rows: its course tag is one of kCourses,
/// its second tag `second_tag` (the writer's tag), or a student tag when empty. The id is left
/// nil, so the store assigns one.
ev::Event MakeEvent(uint64_t n, const std::string& second_tag) {
  static constexpr std::string_view kTypes[] = {"CourseDefined", "CourseRenamed", "StudentEnrolled",
                                                "StudentUnenrolled", "CapacityChanged"};
  const uint64_t r = Mix(n);
  const uint64_t course = (r >> 8) % kCourses;
  const uint64_t student = (r >> 20) % 100000;
  ev::Event e;
  e.type = kTypes[r % std::size(kTypes)];
  e.tags = {CourseTag(course),
            second_tag.empty() ? fmt::format("student:s{:06}", student) : second_tag};
  e.data = fmt::format(
      R"({{"course":"c{:06}","student":"s{:06}","seats":{},"at":{},"note":"via the web portal"}})",
      course, student, r % 90 + 10, 1714560000000 + n);
  return e;
}

std::vector<ev::Event> MakeBatch(uint64_t first, int count, const std::string& second_tag) {
  std::vector<ev::Event> batch;
  for (int i = 0; i < count; ++i)
    batch.push_back(MakeEvent(first + static_cast<uint64_t>(i), second_tag));
  return batch;
}

ev::Query TagQuery(std::string tag) {
  return ev::Query{{ev::QueryItem{{}, {std::move(tag)}}}};
}

// ---------------------------------------------------------------------------------------------
// The disk's floor

/// `samples` 4 KiB appends to a fresh file in `dir`, each followed by fdatasync.
/// `name` tells the probe before the cases (probe) from the recheck after them (recheck).
void RunFdatasync(std::string_view name, const fs::path& dir, int64_t samples) {
  const fs::path path = dir / "sync.bin";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) Die("open {}: {}", path.string(), std::strerror(errno));
  std::array<char, 4096> block;
  block.fill('x');
  std::vector<double> latencies_us;
  for (int64_t i = 0; i < samples; ++i) {
    const Clock::time_point start = Clock::now();
    if (::pwrite(fd, block.data(), block.size(), static_cast<off_t>(i) * 4096) != 4096 ||
        ::fdatasync(fd) != 0) {
      Die("fdatasync probe: {}", std::strerror(errno));
    }
    latencies_us.push_back(Micros(Clock::now() - start));
  }
  ::close(fd);
  fs::remove(path);
  fmt::print("bench events=fdatasync case={} samples={} p50_us={:.0f} p99_us={:.0f}\n", name,
             samples, Quantile(latencies_us, 0.5), Quantile(latencies_us, 0.99));
  std::fflush(stdout);
}

// ---------------------------------------------------------------------------------------------
// Appends

/// What one mode (append_cond or append_plain) of one (W, M) measured, summed over rounds.
struct AppendFigures {
  int64_t appends = 0;
  double seconds = 0;
  uint64_t syncs = 0;
  double cpu_seconds = 0;  // the whole process's CPU time (writers and the store's writer thread)
  std::vector<double> latencies_us;
};

/// One writer's state across the rounds of a (W, M) case.
struct Writer {
  std::string tag;               // "writer:i"
  ev::Query query;               // its tag: the condition's query
  std::vector<ev::Event> batch;  // copied for every append
  ev::Position last = 0;         // the last position it appended
  std::vector<double> latencies_us;
  int64_t appends = 0;
  Clock::time_point finished;
};

/// Runs `writers` concurrently for `duration`, each appending its batch in a loop, with its
/// condition when `conditional`; adds what they measured to `out`.
void RunRound(ev::EventStore& store, std::vector<Writer>& writers, bool conditional,
              Clock::duration duration, AppendFigures& out) {
  const uint64_t syncs_before = store.Stats().syncs;
  std::latch go(1);
  Clock::time_point start, deadline;
  std::vector<std::thread> threads;
  for (Writer& w : writers) {
    w.latencies_us.clear();
    w.appends = 0;
    threads.emplace_back([&store, &w, &go, &deadline, conditional] {
      go.wait();
      while (Clock::now() < deadline) {
        std::vector<ev::Event> events = w.batch;
        std::optional<ev::AppendCondition> condition;
        if (conditional) condition = ev::AppendCondition{w.query, w.last};
        const Clock::time_point t0 = Clock::now();
        w.last = Check(store.Append(std::move(events), std::move(condition)), "append");
        w.finished = Clock::now();
        w.latencies_us.push_back(Micros(w.finished - t0));
        ++w.appends;
      }
    });
  }
  const double cpu_before = ProcessCpuSeconds();
  start = Clock::now();
  deadline = start + duration;
  go.count_down();
  for (std::thread& t : threads) t.join();
  out.cpu_seconds += ProcessCpuSeconds() - cpu_before;
  Clock::time_point end = start;
  for (const Writer& w : writers) {
    end = std::max(end, w.finished);
    out.appends += w.appends;
    out.latencies_us.insert(out.latencies_us.end(), w.latencies_us.begin(), w.latencies_us.end());
  }
  out.seconds += Seconds(end - start);
  out.syncs += store.Stats().syncs - syncs_before;
}

double CpuPerAppendUs(const AppendFigures& f) {
  return f.appends > 0 ? f.cpu_seconds * 1e6 / static_cast<double>(f.appends) : 0;
}

void PrintAppend(std::string_view name, int writers, int per_append, const AppendFigures& f) {
  const double appends_per_s = PerSecond(static_cast<double>(f.appends), f.seconds);
  fmt::print(
      "bench events={} writers={} events_per_append={} appends={} seconds={:.3f} "
      "appends_per_s={:.0f} events_per_s={:.0f} p50_us={:.0f} p99_us={:.0f} syncs={} "
      "appends_per_sync={:.1f} cpu_us_per_append={:.1f}\n",
      name, writers, per_append, f.appends, f.seconds, appends_per_s, appends_per_s * per_append,
      Quantile(f.latencies_us, 0.5), Quantile(f.latencies_us, 0.99), f.syncs,
      f.syncs > 0 ? static_cast<double>(f.appends) / static_cast<double>(f.syncs) : 0.0,
      CpuPerAppendUs(f));
  std::fflush(stdout);
}

/// Case journal_append: `writers` threads append one 200-byte record each and wait until it
/// is durable, in a loop, for sizes.millis, on a fresh journal.
void RunJournalCase(int writers, const Sizes& sizes) {
  reef::actor::JournalOptions options;
  options.dir = FreshDir(fmt::format("journal-{}w", writers));
  auto journal = Check(reef::actor::Journal::Open(
                           options, [](uint64_t, std::string_view) { return reef::Status::Ok(); }),
                       "open the journal");
  const std::string record(200, 'r');
  std::vector<Writer> ws(static_cast<size_t>(writers));
  std::latch go(1);
  Clock::time_point start, deadline;
  std::vector<std::thread> threads;
  for (Writer& w : ws) {
    threads.emplace_back([&] {
      go.wait();
      while (Clock::now() < deadline) {
        const Clock::time_point t0 = Clock::now();
        uint64_t seq = Check(journal->Append(record), "journal append");
        Check(journal->WaitDurable(seq), "journal sync");
        w.finished = Clock::now();
        w.latencies_us.push_back(Micros(w.finished - t0));
        ++w.appends;
      }
    });
  }
  AppendFigures f;
  const double cpu_before = ProcessCpuSeconds();
  start = Clock::now();
  deadline = start + std::chrono::milliseconds(sizes.millis);
  go.count_down();
  for (std::thread& t : threads) t.join();
  f.cpu_seconds = ProcessCpuSeconds() - cpu_before;
  Clock::time_point end = start;
  for (const Writer& w : ws) {
    end = std::max(end, w.finished);
    f.appends += w.appends;
    f.latencies_us.insert(f.latencies_us.end(), w.latencies_us.begin(), w.latencies_us.end());
  }
  f.seconds = Seconds(end - start);
  f.syncs = journal->stats().batches;
  PrintAppend("journal_append", writers, 1, f);
}

/// Case append_cond and append_plain for `writers` writers of `per_append` events each, on a
/// fresh store, and the condition's overhead between them.
void RunAppendCase(int writers, int per_append, const Sizes& sizes) {
  const fs::path dir = FreshDir(fmt::format("append-{}w-{}", writers, per_append));
  {
    std::unique_ptr<ev::EventStore> store = Check(ev::OpenEventStore(dir), "open");
    std::vector<Writer> ws(static_cast<size_t>(writers));
    for (size_t i = 0; i < ws.size(); ++i) {
      ws[i].tag = fmt::format("writer:{}", i);
      ws[i].query = TagQuery(ws[i].tag);
      ws[i].batch = MakeBatch(i * 1000, per_append, ws[i].tag);
      // Warm-up: creates the writer's tag, so every timed condition has a posting list to check.
      ws[i].last =
          Check(store->Append(ws[i].batch, ev::AppendCondition{ws[i].query, 0}), "warm-up");
    }
    AppendFigures cond, plain;
    const auto slice = std::chrono::milliseconds(std::max<int64_t>(sizes.millis / sizes.rounds, 1));
    for (int64_t round = 0; round < sizes.rounds; ++round) {
      // Alternate which mode goes first, so a drift in the disk's speed falls on both.
      const bool cond_first = round % 2 == 1;
      RunRound(*store, ws, cond_first, slice, cond_first ? cond : plain);
      RunRound(*store, ws, !cond_first, slice, cond_first ? plain : cond);
    }
    PrintAppend("append_cond", writers, per_append, cond);
    PrintAppend("append_plain", writers, per_append, plain);
    const double with = PerSecond(static_cast<double>(cond.appends), cond.seconds);
    const double without = PerSecond(static_cast<double>(plain.appends), plain.seconds);
    const double cpu_with = CpuPerAppendUs(cond), cpu_without = CpuPerAppendUs(plain);
    fmt::print(
        "bench events=condition_overhead writers={} events_per_append={} "
        "condition_overhead_pct={:.1f} cpu_overhead_pct={:.1f}\n",
        writers, per_append, without > 0 ? (without - with) / without * 100 : 0.0,
        cpu_without > 0 ? (cpu_with - cpu_without) / cpu_without * 100 : 0.0);
    std::fflush(stdout);
  }
  fs::remove_all(dir);
}

// ---------------------------------------------------------------------------------------------
// Reads

/// Builds a store of `events` events untimed: kPrefillThreads threads append kPrefillBatch
/// events at a time without a condition (group commit keeps it to a few hundred syncs).
std::unique_ptr<ev::EventStore> BuildReadStore(const fs::path& dir, int64_t events) {
  std::unique_ptr<ev::EventStore> store = Check(ev::OpenEventStore(dir), "open");
  const Clock::time_point start = Clock::now();
  std::atomic<int64_t> next{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kPrefillThreads; ++t) {
    threads.emplace_back([&] {
      for (;;) {
        const int64_t first = next.fetch_add(kPrefillBatch);
        if (first >= events) return;
        const int count = static_cast<int>(std::min<int64_t>(kPrefillBatch, events - first));
        Check(store->Append(MakeBatch(static_cast<uint64_t>(first), count, "")), "prefill");
      }
    });
  }
  for (std::thread& t : threads) t.join();
  fmt::print("events_bench: read store built: {} events in {:.1f} s, {} syncs (untimed)\n",
             store->Head(), Seconds(Clock::now() - start), store->Stats().syncs);
  return store;
}

/// Case reopen: close the read store and open it again, which reads and checks the whole log
/// and rebuilds the index (the start-up cost of `reef serve` on a store this size).
void RunReopen(const fs::path& dir, std::unique_ptr<ev::EventStore> store) {
  const ev::Position head = store->Head();
  store.reset();
  const auto start = std::chrono::steady_clock::now();
  store = Check(ev::OpenEventStore(dir), "reopen");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (store->Head() != head) Die("reopen: head {} after reopening, {} before", store->Head(), head);
  fmt::print("bench events=reopen events_read={} seconds={:.3f} events_per_s={:.0f}\n", head,
             seconds, static_cast<double>(head) / seconds);
}

/// Case id_index: what unique event ids cost. Memory: the store's id index over the read
/// store, in bytes per event (Stats().id_index_bytes), next to the log's own bytes per event.
/// Time: the index alone, adding `count` random ids (growth included) and then finding each,
/// in ns per id; the store does one add and one lookup per appended event.
void RunIdIndex(const fs::path& dir, const ev::EventStore& store, int64_t count) {
  const double events = static_cast<double>(store.Head());
  uint64_t log_bytes = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == ".log") log_bytes += entry.file_size();
  }
  std::vector<ev::EventId> ids;
  ids.reserve(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) ids.push_back(Check(ev::NewEventId(), "id"));
  ev::detail::EventIdIndex index;
  auto id_at = [&ids](ev::Position p) { return ids[p - 1]; };
  auto start = Clock::now();
  for (int64_t i = 0; i < count; ++i) {
    if (index.NeedsGrowth(1)) index.Adopt(index.Grown(1, id_at));
    index.Add(ids[static_cast<size_t>(i)], static_cast<ev::Position>(i + 1));
  }
  const double add_s = Seconds(Clock::now() - start);
  int64_t found = 0;
  start = Clock::now();
  for (int64_t i = 0; i < count; ++i) {
    index.ForEachCandidate(ids[static_cast<size_t>(i)], [&](ev::Position p) {
      bool hit = ids[p - 1] == ids[static_cast<size_t>(i)];
      found += hit ? 1 : 0;
      return hit;
    });
  }
  const double find_s = Seconds(Clock::now() - start);
  if (found != count) Die("id_index: found {} of {} ids", found, count);
  fmt::print(
      "bench events=id_index events_indexed={} index_bytes_per_event={:.1f} "
      "log_bytes_per_event={:.1f} "
      "ids={} add_ns={:.1f} find_ns={:.1f}\n",
      store.Head(), static_cast<double>(store.Stats().id_index_bytes) / events,
      static_cast<double>(log_bytes) / events, count, add_s * 1e9 / static_cast<double>(count),
      find_s * 1e9 / static_cast<double>(count));
}

/// Case scan: the median of kScanRepeats full ReadEach(Query{}) passes, each checked gapless.
void RunScan(const ev::EventStore& store) {
  std::vector<double> seconds;
  const ev::Position head = store.Head();
  for (int i = 0; i < kScanRepeats; ++i) {
    uint64_t seen = 0, digest = 0;
    const Clock::time_point start = Clock::now();
    Check(store.ReadEach(ev::Query{}, {},
                         [&](const ev::EventView& e) {
                           if (e.position != ++seen)
                             Die("scan: expected position {}, got {}", seen, e.position);
                           digest += e.type.size() + e.data.size() + e.tags.size() + e.id[0];
                           return true;
                         }),
          "scan");
    seconds.push_back(Seconds(Clock::now() - start));
    if (seen != head || digest == 0) Die("scan: read {} of {} events", seen, head);
  }
  const double median = Quantile(seconds, 0.5);
  fmt::print("bench events=scan events_read={} seconds={:.3f} events_per_s={:.0f}\n", head, median,
             PerSecond(static_cast<double>(head), median));
  std::fflush(stdout);
}

void PrintQueries(std::string_view name, int64_t queries, uint64_t events, double seconds,
                  const std::vector<double>& latencies_us) {
  fmt::print(
      "bench events={} queries={} events_read={} seconds={:.3f} queries_per_s={:.0f} "
      "events_per_s={:.0f} p50_us={:.0f} p99_us={:.0f}\n",
      name, queries, events, seconds, PerSecond(static_cast<double>(queries), seconds),
      PerSecond(static_cast<double>(events), seconds), Quantile(latencies_us, 0.5),
      Quantile(latencies_us, 0.99));
  std::fflush(stdout);
}

/// Case tag_query: every course tag read whole with ReadEach (each ~1% of the store).
void RunTagQuery(const ev::EventStore& store) {
  std::vector<double> latencies_us;
  uint64_t events = 0, digest = 0;
  const Clock::time_point start = Clock::now();
  for (int course = 0; course < kCourses; ++course) {
    const std::string tag = CourseTag(static_cast<uint64_t>(course));
    const Clock::time_point t0 = Clock::now();
    Check(store.ReadEach(TagQuery(tag), {},
                         [&](const ev::EventView& e) {
                           if (e.tags.empty() || e.tags[0] != tag)
                             Die("tag query: event {} lacks {}", e.position, tag);
                           ++events;
                           digest += e.data.size();
                           return true;
                         }),
          "tag query");
    latencies_us.push_back(Micros(Clock::now() - t0));
  }
  if (events != store.Head() || digest == 0)
    Die("tag query: {} of {} events", events, store.Head());
  PrintQueries("tag_query", kCourses, events, Seconds(Clock::now() - start), latencies_us);
}

/// Case tag_query_limit: Read(a course tag, from a random position, limit kQueryLimit).
void RunTagQueryLimit(const ev::EventStore& store, int64_t queries) {
  std::vector<ev::Query> tag_queries;
  for (int course = 0; course < kCourses; ++course) {
    tag_queries.push_back(TagQuery(CourseTag(static_cast<uint64_t>(course))));
  }
  const ev::Position head = store.Head();
  std::vector<double> latencies_us;
  uint64_t events = 0;
  const Clock::time_point start = Clock::now();
  for (int64_t i = 0; i < queries; ++i) {
    const uint64_t r = Mix(static_cast<uint64_t>(i) ^ 0x5EEDull);
    ev::ReadOptions options;
    // Start in the first half so most reads find their full kQueryLimit events.
    options.from = 1 + (r >> 16) % std::max<uint64_t>(head / 2, 1);
    options.limit = kQueryLimit;
    const Clock::time_point t0 = Clock::now();
    ev::ReadResult read = Check(store.Read(tag_queries[r % kCourses], options), "tag query");
    latencies_us.push_back(Micros(Clock::now() - t0));
    events += read.events.size();
  }
  PrintQueries("tag_query_limit", queries, events, Seconds(Clock::now() - start), latencies_us);
}

}  // namespace

int main(int argc, char** argv) {
  Sizes sizes;
  const std::string parent = reef::bench::ParseFlags(argc, argv, "events_bench", kFlags, sizes);

  std::error_code ec;
  fs::create_directories(parent, ec);
  std::string templ = (fs::path(parent) / "reef-events-bench-XXXXXX").string();
  if (::mkdtemp(templ.data()) == nullptr) Die("mkdtemp {}: {}", templ, std::strerror(errno));
  g_work_dir = templ;
  std::atexit(RemoveWorkDir);
  fmt::print("events_bench: dir={} millis={} rounds={} scan_events={}\n", g_work_dir, sizes.millis,
             sizes.rounds, sizes.scan_events);

  RunFdatasync("probe", g_work_dir, sizes.syncs);
  for (int per_append : kEventsPerAppend) {
    if (sizes.events_per_append != 0 && sizes.events_per_append != per_append) continue;
    for (int writers : kWriters) {
      if (sizes.writers == 0 || sizes.writers == writers) RunAppendCase(writers, per_append, sizes);
    }
  }
  if (sizes.writers == 0 || sizes.writers == 64) RunJournalCase(64, sizes);
  if (sizes.reads != 0) {
    const fs::path dir = FreshDir("read");
    std::unique_ptr<ev::EventStore> store = BuildReadStore(dir, sizes.scan_events);
    RunScan(*store);
    RunTagQuery(*store);
    RunTagQueryLimit(*store, sizes.queries);
    RunIdIndex(dir, *store, sizes.scan_events);
    RunReopen(dir, std::move(store));
  }
  // The disk's sync cost can change under a run (a VM's host, other I/O); a recheck shows it.
  RunFdatasync("recheck", g_work_dir, std::max<int64_t>(sizes.syncs / 4, 1));
  return 0;
}
