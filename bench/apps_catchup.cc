// apps_bench's second part: the projector catch-up and its SQLite anchors (the header comment
// of bench/apps_bench.cc describes both parts and the output lines).
#include "apps_catchup.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <vector>

#include "apps/module_runtime.h"
#include "apps_bench_support.h"
#include "events/event_store.h"

namespace reef::bench::apps {

namespace fs = std::filesystem;
namespace ev = reef::events;
using json = nlohmann::json;
using reef::store::ModuleKind;

// ---------------------------------------------------------------------------------------------
// Projector catch-up and its SQLite anchors

namespace {

constexpr int kFillBatch = 1000;  // Tick events per append, untimed fill
constexpr int kFillThreads = 4;
constexpr auto kPoll = std::chrono::milliseconds(2);  // projector position polling
constexpr auto kCatchupDeadline = std::chrono::minutes(20);

/// Appends `events` Tick events {"n": i} to `store` untimed, kFillBatch per append.
void FillTicks(ev::EventStore& store, int64_t events) {
  const Clock::time_point start = Clock::now();
  std::atomic<int64_t> next{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kFillThreads; ++t) {
    threads.emplace_back([&] {
      for (;;) {
        const int64_t first = next.fetch_add(kFillBatch);
        if (first >= events) return;
        std::vector<ev::Event> batch;
        for (int64_t n = first; n < std::min<int64_t>(first + kFillBatch, events); ++n) {
          ev::Event e;
          e.type = "Tick";
          e.tags = {"tick"};
          e.data = fmt::format(R"({{"n":{}}})", n);
          batch.push_back(std::move(e));
        }
        Check(store.Append(std::move(batch)), "fill");
      }
    });
  }
  for (std::thread& t : threads) t.join();
  fmt::print("apps_bench: store filled: {} Tick events in {:.1f} s (untimed)\n", store.Head(),
             Seconds(Clock::now() - start));
  std::fflush(stdout);
}

}  // namespace

void RunCatchup(const std::string& work_dir, int64_t events) {
  const fs::path dir = fs::path(work_dir) / "catchup";
  std::unique_ptr<ev::EventStore> store = Check(ev::OpenEventStore(dir / "events"), "open store");
  FillTicks(*store, events);
  const ev::Position head = store->Head();
  reef::apps::RuntimeOptions runtime_options;
  runtime_options.data_dir = dir;
  const uint32_t batch = runtime_options.projector_batch_events;
  std::unique_ptr<reef::apps::ModuleRuntime> runtime =
      Check(reef::apps::ModuleRuntime::Open(*store, runtime_options), "open runtime");
  Check(runtime->Upload(ModuleKind::kProjector, "ticks", "1.0.0", GuestBytes("test_projector_v1"),
                        false),
        "upload projector");

  const double cpu_before = ProcessCpuSeconds();
  const Clock::time_point start = Clock::now();
  Check(runtime->Activate(ModuleKind::kProjector, "ticks", "1.0.0"), "activate projector");
  for (;;) {
    std::optional<reef::apps::ModuleStatus> status =
        runtime->StatusOf(ModuleKind::kProjector, "ticks");
    if (status && status->position >= head) break;
    if (status && !status->error.empty()) Die("projector failed: {}", status->error);
    if (Clock::now() - start > kCatchupDeadline) Die("projector did not catch up in time");
    std::this_thread::sleep_for(kPoll);
  }
  const double seconds = Seconds(Clock::now() - start);
  const double cpu = ProcessCpuSeconds() - cpu_before;
  json rows =
      Check(runtime->QueryProjector("ticks", "SELECT count(*) AS n FROM ticks", json::array()),
            "count rows");
  if (rows.size() != 1 || rows[0]["n"].get<int64_t>() != static_cast<int64_t>(head)) {
    Die("projector: {} rows for {} events", rows.dump(), head);
  }
  fmt::print(
      "bench apps=catchup events={} batch_events={} seconds={:.3f} events_per_s={:.0f} "
      "cpu_us_per_event={:.1f}\n",
      head, batch, seconds, PerSecond(static_cast<double>(head), seconds),
      cpu * 1e6 / static_cast<double>(head));
  std::fflush(stdout);
  runtime.reset();
  store.reset();
  fs::remove_all(dir);
}

namespace {

void Exec(sqlite3* db, const char* sql) {
  char* error = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &error) != SQLITE_OK) {
    Die("sqlite: {}: {}", sql, error != nullptr ? error : sqlite3_errmsg(db));
  }
}

}  // namespace

/// Inserts `rows` rows into ticks in transactions of `batch`; `like_runner`: per row a
/// savepoint and a freshly prepared statement, as the projector runner and sql_exec do.
void RunSqlite(const std::string& work_dir, int64_t rows, uint32_t batch, bool like_runner) {
  const fs::path path = fs::path(work_dir) / "anchor.sqlite";
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
      SQLITE_OK) {
    Die("sqlite open {}", path.string());
  }
  Exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;");
  Exec(db, "CREATE TABLE ticks (position INTEGER, version INTEGER, n INTEGER)");
  const char* kInsert = "INSERT INTO ticks (position, version, n) VALUES (?1, ?2, ?3)";
  sqlite3_stmt* insert = nullptr;
  const auto step = [&](sqlite3_stmt* s, int64_t i) {
    sqlite3_bind_int64(s, 1, i + 1);
    sqlite3_bind_int64(s, 2, 1);
    sqlite3_bind_int64(s, 3, i);
    if (sqlite3_step(s) != SQLITE_DONE) Die("sqlite insert: {}", sqlite3_errmsg(db));
  };
  const Clock::time_point start = Clock::now();
  if (!like_runner) sqlite3_prepare_v2(db, kInsert, -1, &insert, nullptr);
  for (int64_t i = 0; i < rows;) {
    Exec(db, "BEGIN IMMEDIATE");
    for (uint32_t k = 0; k < batch && i < rows; ++k, ++i) {
      if (like_runner) {
        Exec(db, "SAVEPOINT reef_event");
        sqlite3_stmt* s = nullptr;
        sqlite3_prepare_v2(db, kInsert, -1, &s, nullptr);
        step(s, i);
        sqlite3_finalize(s);
        Exec(db, "RELEASE reef_event");
      } else {
        step(insert, i);
        sqlite3_reset(insert);
      }
    }
    Exec(db, "COMMIT");
  }
  sqlite3_finalize(insert);
  const double seconds = Seconds(Clock::now() - start);
  sqlite3_close_v2(db);
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(path.string() + suffix);
  fmt::print("bench apps={} rows={} batch_rows={} seconds={:.3f} rows_per_s={:.0f}\n",
             like_runner ? "sqlite_stmt" : "sqlite", rows, batch, seconds,
             PerSecond(static_cast<double>(rows), seconds));
  std::fflush(stdout);
}

}  // namespace reef::bench::apps
