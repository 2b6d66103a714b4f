// storage_candidates: measures the candidate engines for the DCB event store (an embedded,
// append-only event log) on this machine's disk, so the engine is chosen by measurement.
//
// Every write counts only once it is durable (fdatasync; SQLite WAL with synchronous=FULL;
// LMDB with its default sync). The candidates, each on the same ~200-byte event (position,
// type, 2 tags, ~100 bytes of JSON, 16-byte id):
//
//   fdatasync         the disk's floor: 4 KiB append + fdatasync; p50/p99 and max syncs/s
//   sqlite_wal        events(position INTEGER PRIMARY KEY, type, data, id) + tags(position, tag)
//                     indexed on (tag, position); prepared statements
//   sqlite_wal_plain  the events table alone: plain SQLite inserts of the same rows (the anchor)
//   lmdb              events db (big-endian position -> encoded event) + tags db (MDB_DUPSORT,
//                     tag -> big-endian position)
//   segment_log       one file; a commit is one pwrite of CRC32C-checked frames + fdatasync
//
// Cases: append_1 (one event per commit), append_100 (100 events per commit), and scan (read
// all events of a store of --scan-events events, built untimed with big unsynced commits and
// then synced; warm page cache). The SQLite scan reads the events table (tags are in the tags
// table); the LMDB and segment scans decode the whole event, tags included. An append figure's
// seconds are the sum of its commit calls (events are made beforehand); p50/p99 are per commit,
// in microseconds. fdatasync is probed again after the candidates (4k_recheck, a quarter of the
// samples) and the run warns when its p50 moved more than 2x: on a VM the sync cost can change
// mid-run, and then only figures from the same regime compare.
//
// Run (the directory decides the filesystem, and so the numbers; tmpfs makes fdatasync free):
//
//   build/bench/storage_candidates [--dir DIR] [--syncs N] [--commits N] [--batch-commits N]
//                                  [--scan-events N]
//
// It works in a fresh directory under DIR (default $TMPDIR, else /tmp), removed at exit. Output:
// one table for people, and one machine-readable line per figure, e.g.
//
//   bench storage=fdatasync case=4k_append samples=2000 p50_us=... p99_us=... max_syncs_per_s=...
//   bench storage=lmdb case=append_1 events=... commits=... seconds=... events_per_s=...
//         commits_per_s=... commit_p50_us=... commit_p99_us=...
//   bench storage=segment_log case=scan events=... seconds=... events_per_s=...
#include <fcntl.h>
#include <fmt/format.h>
#include <lmdb.h>
#include <sqlite3.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bench_flags.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// ---------------------------------------------------------------------------------------------
// Sizes, flags and failure

/// Run sizes, all counts. The defaults run in ~45 s where fdatasync takes ~4 ms (LMDB syncs
/// twice per commit); the nominal --commits 3000 adds ~35 s there.
struct Sizes {
  int64_t syncs = 2000;           // 4 KiB append + fdatasync samples (the recheck: a quarter)
  int64_t commits = 1500;         // 1-event commits per candidate (case append_1)
  int64_t batch_commits = 300;    // kBatchEvents-event commits per candidate (case append_100)
  int64_t scan_events = 1000000;  // events in each scanned store (case scan)
};

constexpr int kBatchEvents = 100;                  // events per commit in case append_100
constexpr int64_t kBuildCommitEvents = 100000;     // events per untimed commit building scan stores
constexpr size_t kLmdbMapBytes = size_t{8} << 30;  // LMDB address space reserved (sparse), bytes

/// The count flags; --help is generated from these rows (bench_flags.h).
using Flag = reef::bench::CountFlag<Sizes>;
constexpr Flag kFlags[] = {
    {"--syncs", &Sizes::syncs, 1, "fdatasync samples (4 KiB appends)"},
    {"--commits", &Sizes::commits, 1, "1-event commits per candidate (append_1)"},
    {"--batch-commits", &Sizes::batch_commits, 1, "100-event commits per candidate (append_100)"},
    {"--scan-events", &Sizes::scan_events, 1, "events in each scanned store (scan)"},
};

template <typename... Args>
[[noreturn]] void Die(fmt::format_string<Args...> format, Args&&... args) {
  fmt::print(stderr, "storage_candidates: {}\n", fmt::format(format, std::forward<Args>(args)...));
  std::exit(1);
}

void CheckErrno(bool ok, std::string_view what) {
  if (!ok) Die("{}: {}", what, std::strerror(errno));
}

// The work directory, removed at exit (also after Die).
std::string g_work_dir;
void RemoveWorkDir() {
  std::error_code ignored;
  if (!g_work_dir.empty()) fs::remove_all(g_work_dir, ignored);
}

// ---------------------------------------------------------------------------------------------
// The event, its encoding, CRC32C

/// One DCB event as the store holds it (~200 bytes).
struct Event {
  uint64_t position = 0;            // 1-based, gapless
  std::string type;                 // ~16 bytes, e.g. "CourseDefined"
  std::array<std::string, 2> tags;  // ~15 bytes each, e.g. "course:c000123"
  std::string data;                 // ~100 bytes of JSON
  std::array<uint8_t, 16> id{};     // random
};

uint64_t Mix(uint64_t x) {  // splitmix64's finalizer: a deterministic "random" per position
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// Fills `out` with the event at `position`; the same position always gives the same event.
void MakeEvent(uint64_t position, Event& out) {
  static constexpr std::string_view kTypes[] = {"CourseDefined", "CourseRenamed", "StudentEnrolled",
                                                "StudentUnenrolled", "CapacityChanged"};
  const uint64_t r = Mix(position);
  const uint64_t course = (r >> 8) % 1000;
  const uint64_t student = (r >> 20) % 100000;
  out.position = position;
  out.type = kTypes[r % std::size(kTypes)];
  out.tags[0].clear();
  out.tags[1].clear();
  out.data.clear();
  fmt::format_to(std::back_inserter(out.tags[0]), "course:c{:06}", course);
  fmt::format_to(std::back_inserter(out.tags[1]), "student:s{:06}", student);
  fmt::format_to(
      std::back_inserter(out.data),
      R"({{"course":"c{:06}","student":"s{:06}","seats":{},"at":{},"note":"via the web portal"}})",
      course, student, r % 90 + 10, 1714560000000 + position);
  const uint64_t id[2] = {Mix(r), Mix(r ^ 0xA5A5A5A5A5A5A5A5ull)};
  std::memcpy(out.id.data(), id, sizeof id);
}

/// A decoded event whose fields point into the bytes it was decoded from.
struct EventView {
  std::string_view type;
  std::string_view data;
  std::string_view id;  // 16 bytes
};

template <typename T>
void PutLe(std::string& out, T v) {
  static_assert(std::endian::native == std::endian::little);
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}
template <typename T>
T GetLe(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

/// Appends the encoded event (no position) to `out`: type_len u8 | type | tag_count u8 |
/// (tag_len u8 | tag)* | data_len u16 LE | data | id (16 bytes). The LMDB value and the segment
/// frame payload both use it.
void EncodeEvent(const Event& e, std::string& out) {
  out.push_back(static_cast<char>(e.type.size()));
  out += e.type;
  out.push_back(static_cast<char>(e.tags.size()));
  for (const std::string& tag : e.tags) {
    out.push_back(static_cast<char>(tag.size()));
    out += tag;
  }
  PutLe<uint16_t>(out, static_cast<uint16_t>(e.data.size()));
  out += e.data;
  out.append(reinterpret_cast<const char*>(e.id.data()), e.id.size());
}

/// Decodes what EncodeEvent wrote; false when `in` is truncated or malformed.
bool DecodeEvent(std::string_view in, EventView& out) {
  size_t at = 0;
  auto take = [&](size_t n, std::string_view& field) {
    if (in.size() - at < n) return false;
    field = in.substr(at, n);
    at += n;
    return true;
  };
  std::string_view b;
  if (!take(1, b) || !take(static_cast<uint8_t>(b[0]), out.type) || !take(1, b)) return false;
  for (int tags = static_cast<uint8_t>(b[0]); tags > 0; --tags) {
    std::string_view tag;
    if (!take(1, b) || !take(static_cast<uint8_t>(b[0]), tag)) return false;
  }
  if (!take(2, b) || !take(GetLe<uint16_t>(b.data()), out.data)) return false;
  return take(16, out.id) && at == in.size();
}

/// CRC32C (Castagnoli, reflected polynomial 0x82F63B78, as in iSCSI and LevelDB), in software
/// with slicing-by-8 tables. Returns the CRC of `n` bytes at `p`.
uint32_t Crc32c(const void* data, size_t n) {
  struct Tables {
    uint32_t t[8][256];
  };
  static const Tables tables = [] {
    Tables c{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t crc = i;
      for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
      c.t[0][i] = crc;
    }
    for (uint32_t i = 0; i < 256; ++i) {
      for (int s = 1; s < 8; ++s) c.t[s][i] = (c.t[s - 1][i] >> 8) ^ c.t[0][c.t[s - 1][i] & 0xFF];
    }
    return c;
  }();
  const auto& t = tables.t;
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t crc = 0xFFFFFFFFu;
  for (; n >= 8; p += 8, n -= 8) {
    const uint64_t w = GetLe<uint64_t>(reinterpret_cast<const char*>(p)) ^ crc;
    crc = t[7][w & 0xFF] ^ t[6][(w >> 8) & 0xFF] ^ t[5][(w >> 16) & 0xFF] ^ t[4][(w >> 24) & 0xFF] ^
          t[3][(w >> 32) & 0xFF] ^ t[2][(w >> 40) & 0xFF] ^ t[1][(w >> 48) & 0xFF] ^ t[0][w >> 56];
  }
  for (; n > 0; ++p, --n) crc = (crc >> 8) ^ t[0][(crc ^ *p) & 0xFF];
  return ~crc;
}

/// Checks a scan saw positions 1..n in order, and folds the fields into a digest so the reads
/// cannot be optimized away.
class ScanCheck {
 public:
  void See(uint64_t position, const EventView& e) {
    if (position != ++last_) Die("scan: expected position {}, got {}", last_, position);
    digest_ += e.type.size() + e.data.size() + static_cast<uint8_t>(e.id[0]);
  }
  uint64_t count() const { return last_; }
  uint64_t digest() const { return digest_; }

 private:
  uint64_t last_ = 0;
  uint64_t digest_ = 0;
};

// ---------------------------------------------------------------------------------------------
// The candidates, behind one interface

/// kDurable: every commit is on disk when Commit returns. kBuild: unsynced until Settle (used
/// only to build the scanned stores, untimed).
enum class Durability { kDurable, kBuild };

/// One candidate engine, opened on an empty directory it owns. Single-threaded.
class Store {
 public:
  virtual ~Store() = default;
  /// Appends `events` (positions continue the log) in one commit.
  virtual void Commit(std::span<const Event> events) = 0;
  /// Makes everything committed durable and quiescent (a checkpoint, a sync). Untimed.
  virtual void Settle() = 0;
  /// Reads every event in position order into `check`.
  virtual void Scan(ScanCheck& check) = 0;
};

// --- SQLite, WAL mode --------------------------------------------------------------------------

/// events(position INTEGER PRIMARY KEY, type TEXT, data BLOB, id BLOB) and, with_tags, a
/// tags(position, tag) table indexed on (tag, position); one BEGIN IMMEDIATE..COMMIT per Commit.
class SqliteStore final : public Store {
 public:
  SqliteStore(const fs::path& dir, Durability durability, bool with_tags) : with_tags_(with_tags) {
    Check(
        sqlite3_open_v2((dir / "events.sqlite").c_str(), &db_,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr),
        "open");
    sqlite3_stmt* mode = Prepare("PRAGMA journal_mode=WAL");
    if (sqlite3_step(mode) != SQLITE_ROW ||
        std::string_view(reinterpret_cast<const char*>(sqlite3_column_text(mode, 0))) != "wal") {
      Die("sqlite: WAL mode refused");
    }
    sqlite3_finalize(mode);
    Exec(durability == Durability::kDurable ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=OFF");
    Exec("CREATE TABLE events(position INTEGER PRIMARY KEY, type TEXT, data BLOB, id BLOB)");
    begin_ = Prepare("BEGIN IMMEDIATE");
    commit_ = Prepare("COMMIT");
    insert_event_ = Prepare("INSERT INTO events(position, type, data, id) VALUES(?, ?, ?, ?)");
    if (with_tags_) {
      Exec("CREATE TABLE tags(position INTEGER NOT NULL, tag TEXT NOT NULL)");
      Exec("CREATE INDEX tags_by_tag ON tags(tag, position)");
      insert_tag_ = Prepare("INSERT INTO tags(position, tag) VALUES(?, ?)");
    }
  }
  ~SqliteStore() override {
    for (sqlite3_stmt* s : {begin_, commit_, insert_event_, insert_tag_}) sqlite3_finalize(s);
    sqlite3_close(db_);
  }

  void Commit(std::span<const Event> events) override {
    Step(begin_);
    for (const Event& e : events) {
      const auto position = static_cast<sqlite3_int64>(e.position);
      sqlite3_bind_int64(insert_event_, 1, position);
      sqlite3_bind_text(insert_event_, 2, e.type.data(), Size(e.type), SQLITE_STATIC);
      sqlite3_bind_blob(insert_event_, 3, e.data.data(), Size(e.data), SQLITE_STATIC);
      sqlite3_bind_blob(insert_event_, 4, e.id.data(), Size(e.id), SQLITE_STATIC);
      Step(insert_event_);
      for (const std::string& tag : with_tags_ ? e.tags : std::span<const std::string>{}) {
        sqlite3_bind_int64(insert_tag_, 1, position);
        sqlite3_bind_text(insert_tag_, 2, tag.data(), Size(tag), SQLITE_STATIC);
        Step(insert_tag_);
      }
    }
    Step(commit_);
  }

  void Settle() override { Exec("PRAGMA wal_checkpoint(TRUNCATE)"); }

  void Scan(ScanCheck& check) override {
    sqlite3_stmt* select = Prepare("SELECT position, type, data, id FROM events ORDER BY position");
    int rc;
    while ((rc = sqlite3_step(select)) == SQLITE_ROW) {
      EventView e;
      e.type = Column(select, 1, sqlite3_column_text(select, 1));
      e.data = Column(select, 2, sqlite3_column_blob(select, 2));
      e.id = Column(select, 3, sqlite3_column_blob(select, 3));
      check.See(static_cast<uint64_t>(sqlite3_column_int64(select, 0)), e);
    }
    Check(rc == SQLITE_DONE ? SQLITE_OK : rc, "scan");
    sqlite3_finalize(select);
  }

 private:
  void Check(int rc, std::string_view what) {
    if (rc != SQLITE_OK) Die("sqlite {}: {}", what, db_ ? sqlite3_errmsg(db_) : "out of memory");
  }
  sqlite3_stmt* Prepare(const char* sql) {
    sqlite3_stmt* s = nullptr;
    Check(sqlite3_prepare_v2(db_, sql, -1, &s, nullptr), sql);
    return s;
  }
  void Exec(const char* sql) { Check(sqlite3_exec(db_, sql, nullptr, nullptr, nullptr), sql); }
  void Step(sqlite3_stmt* s) {
    Check(sqlite3_step(s) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db_), sqlite3_sql(s));
    sqlite3_reset(s);
  }
  static int Size(const auto& bytes) { return static_cast<int>(bytes.size()); }
  static std::string_view Column(sqlite3_stmt* s, int column, const void* bytes) {
    return {static_cast<const char*>(bytes), static_cast<size_t>(sqlite3_column_bytes(s, column))};
  }

  const bool with_tags_;
  sqlite3* db_ = nullptr;
  sqlite3_stmt* begin_ = nullptr;
  sqlite3_stmt* commit_ = nullptr;
  sqlite3_stmt* insert_event_ = nullptr;
  sqlite3_stmt* insert_tag_ = nullptr;
};

// --- LMDB --------------------------------------------------------------------------------------

/// "events" db: big-endian position -> EncodeEvent bytes (MDB_APPEND); with_tags, a "tags" db
/// (MDB_DUPSORT): tag -> big-endian position. One write transaction per Commit; kDurable keeps
/// LMDB's default sync (data pages, then the meta page: two fdatasyncs per commit).
class LmdbStore final : public Store {
 public:
  LmdbStore(const fs::path& dir, Durability durability, bool with_tags) : with_tags_(with_tags) {
    Check(mdb_env_create(&env_), "env_create");
    Check(mdb_env_set_mapsize(env_, kLmdbMapBytes), "set_mapsize");
    Check(mdb_env_set_maxdbs(env_, 2), "set_maxdbs");
    Check(
        mdb_env_open(env_, dir.c_str(), durability == Durability::kDurable ? 0 : MDB_NOSYNC, 0644),
        "env_open");
    MDB_txn* txn = nullptr;
    Check(mdb_txn_begin(env_, nullptr, 0, &txn), "txn_begin");
    Check(mdb_dbi_open(txn, "events", MDB_CREATE, &events_), "dbi_open events");
    Check(mdb_dbi_open(txn, "tags", MDB_CREATE | MDB_DUPSORT | MDB_DUPFIXED, &tags_),
          "dbi_open tags");
    Check(mdb_txn_commit(txn), "txn_commit");
  }
  ~LmdbStore() override { mdb_env_close(env_); }

  void Commit(std::span<const Event> events) override {
    MDB_txn* txn = nullptr;
    Check(mdb_txn_begin(env_, nullptr, 0, &txn), "txn_begin");
    for (const Event& e : events) {
      const uint64_t key_be = BigEndian(e.position);
      value_.clear();
      EncodeEvent(e, value_);
      MDB_val key{sizeof key_be, const_cast<uint64_t*>(&key_be)};
      MDB_val value{value_.size(), value_.data()};
      Check(mdb_put(txn, events_, &key, &value, MDB_APPEND), "put event");
      for (const std::string& tag : with_tags_ ? e.tags : std::span<const std::string>{}) {
        MDB_val tag_key{tag.size(), const_cast<char*>(tag.data())};
        MDB_val position{sizeof key_be, const_cast<uint64_t*>(&key_be)};
        Check(mdb_put(txn, tags_, &tag_key, &position, 0), "put tag");
      }
    }
    Check(mdb_txn_commit(txn), "txn_commit");
  }

  void Settle() override { Check(mdb_env_sync(env_, 1), "env_sync"); }

  void Scan(ScanCheck& check) override {
    MDB_txn* txn = nullptr;
    MDB_cursor* cursor = nullptr;
    Check(mdb_txn_begin(env_, nullptr, MDB_RDONLY, &txn), "txn_begin");
    Check(mdb_cursor_open(txn, events_, &cursor), "cursor_open");
    MDB_val key, value;
    int rc = mdb_cursor_get(cursor, &key, &value, MDB_FIRST);
    for (; rc == MDB_SUCCESS; rc = mdb_cursor_get(cursor, &key, &value, MDB_NEXT)) {
      EventView e;
      if (key.mv_size != 8 ||
          !DecodeEvent({static_cast<const char*>(value.mv_data), value.mv_size}, e)) {
        Die("lmdb scan: malformed event");
      }
      check.See(BigEndian(GetLe<uint64_t>(static_cast<const char*>(key.mv_data))), e);
    }
    if (rc != MDB_NOTFOUND) Check(rc, "cursor_get");
    mdb_cursor_close(cursor);
    mdb_txn_abort(txn);
  }

 private:
  static void Check(int rc, std::string_view what) {
    if (rc != MDB_SUCCESS) Die("lmdb {}: {}", what, mdb_strerror(rc));
  }
  // Big-endian keys sort in position order under LMDB's default memcmp comparison.
  static uint64_t BigEndian(uint64_t v) { return std::byteswap(v); }

  const bool with_tags_;
  MDB_env* env_ = nullptr;
  MDB_dbi events_ = 0;
  MDB_dbi tags_ = 0;
  std::string value_;
};

// --- Segment log -------------------------------------------------------------------------------

/// One append-only file of frames: payload_len u32 LE | crc32c(payload) u32 LE | payload, where
/// payload = position u64 LE | EncodeEvent bytes. A commit is one pwrite (+ fdatasync).
class SegmentLog final : public Store {
 public:
  SegmentLog(const fs::path& dir, Durability durability)
      : path_(dir / "segment.log"), durable_(durability == Durability::kDurable) {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    CheckErrno(fd_ >= 0, "segment open");
  }
  ~SegmentLog() override { ::close(fd_); }

  void Commit(std::span<const Event> events) override {
    frames_.clear();
    for (const Event& e : events) {
      const size_t header = frames_.size();
      frames_.append(8, '\0');
      PutLe<uint64_t>(frames_, e.position);
      EncodeEvent(e, frames_);
      const size_t payload = header + 8;
      const uint32_t len = static_cast<uint32_t>(frames_.size() - payload);
      const uint32_t crc = Crc32c(frames_.data() + payload, len);
      std::memcpy(frames_.data() + header, &len, 4);
      std::memcpy(frames_.data() + header + 4, &crc, 4);
    }
    for (size_t done = 0; done < frames_.size();) {
      const ssize_t n = ::pwrite(fd_, frames_.data() + done, frames_.size() - done,
                                 static_cast<off_t>(end_ + done));
      CheckErrno(n > 0, "segment pwrite");
      done += static_cast<size_t>(n);
    }
    end_ += frames_.size();
    if (durable_) CheckErrno(::fdatasync(fd_) == 0, "segment fdatasync");
  }

  void Settle() override { CheckErrno(::fdatasync(fd_) == 0, "segment fdatasync"); }

  void Scan(ScanCheck& check) override {
    const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    CheckErrno(fd >= 0, "segment open for scan");
    struct stat st {};
    CheckErrno(::fstat(fd, &st) == 0, "segment fstat");
    const size_t size = static_cast<size_t>(st.st_size);
    void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    CheckErrno(map != MAP_FAILED, "segment mmap");
    ::madvise(map, size, MADV_SEQUENTIAL);
    const char* p = static_cast<const char*>(map);
    for (size_t at = 0; at < size;) {
      if (size - at < 8) Die("segment scan: torn frame header at byte {}", at);
      const uint32_t len = GetLe<uint32_t>(p + at);
      const char* payload = p + at + 8;
      EventView e;
      if (size - at - 8 < len || len < 8) Die("segment scan: torn frame at byte {}", at);
      if (Crc32c(payload, len) != GetLe<uint32_t>(p + at + 4)) {
        Die("segment scan: CRC mismatch at byte {}", at);
      }
      if (!DecodeEvent({payload + 8, len - 8}, e)) Die("segment scan: bad event at byte {}", at);
      check.See(GetLe<uint64_t>(payload), e);
      at += 8 + len;
    }
    ::munmap(map, size);
    ::close(fd);
  }

 private:
  const fs::path path_;
  const bool durable_;
  int fd_ = -1;
  uint64_t end_ = 0;  // bytes written
  std::string frames_;
};

// ---------------------------------------------------------------------------------------------
// Cases and report

/// Opens a candidate of type S (constructor args: dir, durability, then Args) on an empty
/// directory `dir` it then owns.
using OpenFn = std::unique_ptr<Store> (*)(const fs::path& dir, Durability durability);
template <typename S, auto... Args>
std::unique_ptr<Store> Open(const fs::path& dir, Durability durability) {
  return std::make_unique<S>(dir, durability, Args...);
}

/// One row of the candidate table. `open_for_scan` builds the scanned store (the SQLite and
/// LMDB scans read only the events table/db, so it is built without the tag index).
struct Candidate {
  std::string_view storage;
  OpenFn open;
  OpenFn open_for_scan;  // nullptr: no scan case
};
constexpr Candidate kCandidates[] = {
    {"sqlite_wal", Open<SqliteStore, true>, Open<SqliteStore, false>},
    {"sqlite_wal_plain", Open<SqliteStore, false>, nullptr},
    {"lmdb", Open<LmdbStore, true>, Open<LmdbStore, false>},
    {"segment_log", Open<SegmentLog>, Open<SegmentLog>},
};

/// One measured figure. Latencies in microseconds; seconds is the timed total.
struct Row {
  std::string storage;
  std::string name;  // the case: append_1, append_100, scan
  int64_t events = 0;
  int64_t commits = 0;  // 0 for scans
  double seconds = 0;
  double p50_us = 0;
  double p99_us = 0;
};

/// The q-quantile (0..1) of `samples` (microseconds), nearest rank.
double Quantile(std::vector<double> samples, double q) {
  if (samples.empty()) return 0;
  std::sort(samples.begin(), samples.end());
  const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(samples.size())));
  return samples[std::clamp<size_t>(rank, 1, samples.size()) - 1];
}

/// Runs `commit(i)` for i in [0, commits), timing each call; fills row's commits, seconds
/// (the sum of the calls) and latency quantiles.
template <typename Fn>
void TimeCommits(int64_t commits, Row& row, Fn&& commit) {
  std::vector<double> latencies_us;
  for (int64_t i = 0; i < commits; ++i) {
    const Clock::time_point start = Clock::now();
    commit(i);
    latencies_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
  }
  row.commits = commits;
  for (double us : latencies_us) row.seconds += us / 1e6;
  row.p50_us = Quantile(latencies_us, 0.50);
  row.p99_us = Quantile(latencies_us, 0.99);
}

/// Gives every case a fresh directory under the work dir and removes it afterwards.
fs::path FreshDir(std::string_view storage, std::string_view name) {
  fs::path dir = fs::path(g_work_dir) / fmt::format("{}-{}", storage, name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

/// Case append_N: `commits` durable commits of `per_commit` events each, timed one by one.
Row RunAppend(const Candidate& c, int per_commit, int64_t commits) {
  Row row{std::string(c.storage), fmt::format("append_{}", per_commit)};
  const fs::path dir = FreshDir(c.storage, row.name);
  {
    std::unique_ptr<Store> store = c.open(dir, Durability::kDurable);
    std::vector<std::vector<Event>> batches(static_cast<size_t>(commits));
    uint64_t next = 1;
    for (std::vector<Event>& batch : batches) {
      batch.resize(static_cast<size_t>(per_commit));
      for (Event& e : batch) MakeEvent(next++, e);
    }
    TimeCommits(commits, row, [&](int64_t i) { store->Commit(batches[static_cast<size_t>(i)]); });
  }
  fs::remove_all(dir);
  row.events = commits * per_commit;
  return row;
}

/// Case scan: builds `events` events untimed (big unsynced commits, then Settle), then times
/// one full read in position order.
Row RunScan(const Candidate& c, int64_t events) {
  Row row{std::string(c.storage), "scan"};
  const fs::path dir = FreshDir(c.storage, row.name);
  {
    std::unique_ptr<Store> store = c.open_for_scan(dir, Durability::kBuild);
    std::vector<Event> batch;
    for (int64_t next = 1; next <= events;) {
      batch.resize(static_cast<size_t>(std::min(kBuildCommitEvents, events - next + 1)));
      for (Event& e : batch) MakeEvent(static_cast<uint64_t>(next++), e);
      store->Commit(batch);
    }
    store->Settle();
    ScanCheck check;
    const Clock::time_point start = Clock::now();
    store->Scan(check);
    row.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    // Reading the digest keeps the decoded fields' reads observable.
    if (check.count() != static_cast<uint64_t>(events) || check.digest() == 0) {
      Die("{} scan: read {} of {} events", c.storage, check.count(), events);
    }
  }
  fs::remove_all(dir);
  row.events = events;
  return row;
}

/// Case fdatasync: `samples` 4 KiB appends, each followed by fdatasync, timed together. `name`
/// tells the probe before the candidates (4k_append) from the recheck after them (4k_recheck).
Row RunFdatasync(std::string_view name, int64_t samples) {
  Row row{"fdatasync", std::string(name)};
  const fs::path path = FreshDir(row.storage, row.name) / "sync.bin";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  CheckErrno(fd >= 0, "fdatasync open");
  std::array<char, 4096> block;
  block.fill('x');
  TimeCommits(samples, row, [&](int64_t i) {
    CheckErrno(::pwrite(fd, block.data(), block.size(), static_cast<off_t>(i) * 4096) == 4096,
               "fdatasync pwrite");
    CheckErrno(::fdatasync(fd) == 0, "fdatasync");
  });
  ::close(fd);
  fs::remove_all(path.parent_path());
  return row;
}

/// `n` per second of `seconds`; 0 when no time was measured.
double PerSecond(int64_t n, double seconds) {
  return seconds > 0 ? static_cast<double>(n) / seconds : 0;
}

/// Prints `r` as one `bench storage=... case=...` line (the keys of the top comment).
void PrintMachineLine(const Row& r) {
  if (r.storage == "fdatasync") {
    fmt::print(
        "bench storage=fdatasync case={} samples={} p50_us={:.0f} p99_us={:.0f} "
        "max_syncs_per_s={:.0f}\n",
        r.name, r.commits, r.p50_us, r.p99_us, r.p50_us > 0 ? 1e6 / r.p50_us : 0);
  } else if (r.commits == 0) {
    fmt::print("bench storage={} case={} events={} seconds={:.3f} events_per_s={:.0f}\n", r.storage,
               r.name, r.events, r.seconds, PerSecond(r.events, r.seconds));
  } else {
    fmt::print(
        "bench storage={} case={} events={} commits={} seconds={:.3f} events_per_s={:.0f} "
        "commits_per_s={:.0f} commit_p50_us={:.0f} commit_p99_us={:.0f}\n",
        r.storage, r.name, r.events, r.commits, r.seconds, PerSecond(r.events, r.seconds),
        PerSecond(r.commits, r.seconds), r.p50_us, r.p99_us);
  }
  std::fflush(stdout);
}

/// Prints `rows` as one table; latencies in microseconds, blank where a figure does not apply.
void PrintTable(const std::vector<Row>& rows) {
  auto cell = [](bool shown, double v) { return shown ? fmt::format("{:.0f}", v) : std::string(); };
  fmt::print("\n{:<17} {:<10} {:>9} {:>8} {:>8} {:>10} {:>10} {:>8} {:>8}\n", "storage", "case",
             "events", "commits", "seconds", "events/s", "commits/s", "p50 us", "p99 us");
  for (const Row& r : rows) {
    const bool events = r.events > 0;
    const bool commits = r.commits > 0;
    fmt::print("{:<17} {:<10} {:>9} {:>8} {:>8.2f} {:>10} {:>10} {:>8} {:>8}\n", r.storage, r.name,
               cell(events, static_cast<double>(r.events)),
               cell(commits, static_cast<double>(r.commits)), r.seconds,
               cell(events, PerSecond(r.events, r.seconds)),
               cell(commits, PerSecond(r.commits, r.seconds)), cell(commits, r.p50_us),
               cell(commits, r.p99_us));
  }
}

/// Names the filesystem holding `dir` (its statfs magic), since it decides what fdatasync costs.
std::string FilesystemName(const std::string& dir) {
  struct statfs st {};
  if (::statfs(dir.c_str(), &st) != 0) return "unknown";
  switch (st.f_type) {
    case 0xEF53:
      return "ext4";
    case 0x58465342:
      return "xfs";
    case 0x9123683E:
      return "btrfs";
    case 0x01021994:
      return "tmpfs (fdatasync is a no-op: the numbers say nothing about disks)";
    default:
      return fmt::format("statfs magic 0x{:x}", static_cast<unsigned long>(st.f_type));
  }
}

}  // namespace

int main(int argc, char** argv) {
  Sizes sizes;
  const std::string parent =
      reef::bench::ParseFlags(argc, argv, "storage_candidates", kFlags, sizes);

  if (Crc32c("123456789", 9) != 0xE3069283u) Die("CRC32C self-check failed");
  std::error_code ec;
  fs::create_directories(parent, ec);
  std::string templ = (fs::path(parent) / "reef-storage-XXXXXX").string();
  CheckErrno(::mkdtemp(templ.data()) != nullptr, "mkdtemp");
  g_work_dir = templ;
  std::atexit(RemoveWorkDir);
  fmt::print("storage_candidates: dir={} fs={} sqlite={} lmdb={}\n", g_work_dir,
             FilesystemName(g_work_dir), sqlite3_libversion(), MDB_VERSION_STRING);

  std::vector<Row> rows;
  auto record = [&](Row row) {
    PrintMachineLine(row);
    rows.push_back(std::move(row));
  };
  record(RunFdatasync("4k_append", sizes.syncs));
  for (const Candidate& c : kCandidates) {
    record(RunAppend(c, 1, sizes.commits));
    record(RunAppend(c, kBatchEvents, sizes.batch_commits));
    if (c.open_for_scan != nullptr) record(RunScan(c, sizes.scan_events));
  }
  // The disk's sync cost can change under a run (a VM's host, other I/O); a recheck shows it.
  record(RunFdatasync("4k_recheck", std::max<int64_t>(sizes.syncs / 4, 1)));
  PrintTable(rows);
  const double before = rows.front().p50_us, after = rows.back().p50_us;
  if (std::max(before, after) > 2 * std::min(before, after)) {
    fmt::print(
        "\nwarning: fdatasync p50 moved from {:.0f} us to {:.0f} us during the run; the "
        "disk's sync cost is not stable, so rerun and compare before choosing\n",
        before, after);
  }
  return 0;
}
