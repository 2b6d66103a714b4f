// The fixture of the ModuleRuntime tests (module_runtime_test.cc, command_execution_test.cc):
// a real event store and module runtime in a temporary directory, the guests built from
// tests/modules and examples, and helpers to feed and read them.
//
// Thread ownership: caller synchronizes (one test thread drives the fixture).
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <thread>

#include "../events/event_store_test_support.h"
#include "apps/module_runtime.h"

namespace reef::apps::testing {

using events::testing::MakeEvent;
using events::testing::TempDir;
using json = nlohmann::json;
using store::ModuleKind;

inline std::vector<uint8_t> GuestBytes(const std::string& name) {
  std::ifstream in(std::string(REEF_GUEST_DIR) + "/" + name + ".wasm", std::ios::binary);
  EXPECT_TRUE(in.good()) << "missing guest " << name;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

template <typename Pred>
inline bool WaitFor(Pred pred, std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return pred();
}

inline Value Input(const json& j) {
  auto v = ValueFromJsonPlain(j);
  EXPECT_TRUE(v.ok()) << v.status().ToString();
  return v.ok() ? *v : Value::Null();
}

// Rows of a read-only query on any SQLite file, as JSON objects (integers and text).
inline json SqliteRows(const std::filesystem::path& path, const std::string& sql) {
  sqlite3* db = nullptr;
  json rows = json::array();
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    sqlite3_close_v2(db);
    return rows;
  }
  sqlite3_busy_timeout(db, 5000);
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) == SQLITE_OK) {
    while (sqlite3_step(s) == SQLITE_ROW) {
      json row = json::object();
      for (int c = 0; c < sqlite3_column_count(s); ++c) {
        if (sqlite3_column_type(s, c) == SQLITE_INTEGER) {
          row[sqlite3_column_name(s, c)] = sqlite3_column_int64(s, c);
        } else if (sqlite3_column_type(s, c) == SQLITE_TEXT) {
          row[sqlite3_column_name(s, c)] =
              std::string(reinterpret_cast<const char*>(sqlite3_column_text(s, c)));
        } else {
          row[sqlite3_column_name(s, c)] = nullptr;
        }
      }
      rows.push_back(std::move(row));
    }
  }
  sqlite3_finalize(s);
  sqlite3_close_v2(db);
  return rows;
}

class ModuleRuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override { Open(); }
  void TearDown() override { Close(); }

  void Open(RuntimeOptions options = {}) {
    auto opened = events::OpenEventStore(dir_.path() / "events");
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    events_ = std::move(*opened);
    options.data_dir = dir_.path();
    if (options.effect_backoff_initial == std::chrono::milliseconds(1000)) {
      options.effect_backoff_initial = std::chrono::milliseconds(40);
    }
    auto runtime = ModuleRuntime::Open(*events_, options);
    ASSERT_TRUE(runtime.ok()) << runtime.status().ToString();
    runtime_ = std::move(*runtime);
  }

  void Close() {
    runtime_.reset();
    events_.reset();
  }

  // Reopens the runtime with `options`, the test_command guest active as command "count".
  // Options for a fleet of one reactor and one command I/O thread.
  static RuntimeOptions OneReactorOneIoThread() {
    RuntimeOptions options;
    options.reactors = 1;
    options.io_threads = 1;
    return options;
  }

  void ReopenWithCount(const RuntimeOptions& options) {
    Close();
    Open(options);
    Upload(ModuleKind::kCommand, "count", "1.0.0", "test_command");
  }

  void Upload(ModuleKind kind, const std::string& name, const std::string& version,
              const std::string& guest, bool activate = true) {
    auto bytes = GuestBytes(guest);
    auto uploaded = runtime_->Upload(kind, name, version, bytes, activate);
    ASSERT_TRUE(uploaded.ok()) << uploaded.status().ToString();
  }

  void AppendTicks(int count, int first_n = 0) {
    std::vector<events::Event> batch;
    for (int i = 0; i < count; ++i) {
      batch.push_back(MakeEvent("Tick", {"tick"}, fmt::format("{{\"n\":{}}}", first_n + i)));
    }
    ASSERT_TRUE(events_->Append(std::move(batch), std::nullopt).ok());
  }

  json Ticks() {
    auto rows = runtime_->QueryProjector(
        "ticks", "SELECT position, version, n FROM ticks ORDER BY position", json::array());
    EXPECT_TRUE(rows.ok()) << rows.status().ToString();
    return rows.ok() ? *rows : json::array();
  }

  std::string Describe(ModuleKind kind, const std::string& name) {
    auto s = runtime_->StatusOf(kind, name);
    if (!s) return "no status";
    return fmt::format("state {} position {} failures {} error '{}'", s->state, s->position,
                       s->failures, s->error);
  }

  uint64_t Position(ModuleKind kind, const std::string& name) {
    auto s = runtime_->StatusOf(kind, name);
    return s ? s->position : 0;
  }

  TempDir dir_;
  std::unique_ptr<events::EventStore> events_;
  std::unique_ptr<ModuleRuntime> runtime_;
};

}  // namespace reef::apps::testing
