// Helpers for the event store tests: a fresh store (embedded in a temporary directory, or
// PostgreSQL in a fresh database), and short ways to write events and queries.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "events/event_store.h"
#include "support/pg_test_database.h"

namespace reef::events::testing {

inline Event MakeEvent(std::string type, std::vector<std::string> tags = {},
                       std::string data = "{}") {
  Event event;
  event.type = std::move(type);
  event.tags = std::move(tags);
  event.data = std::move(data);
  return event;
}

inline QueryItem Item(std::vector<std::string> types, std::vector<std::string> tags = {}) {
  return QueryItem{std::move(types), std::move(tags)};
}

inline Query QueryOf(std::vector<QueryItem> items) {
  return Query{std::move(items)};
}

inline AppendCondition FailIf(Query query, std::optional<Position> after) {
  return AppendCondition{std::move(query), after};
}

inline std::vector<Position> PositionsOf(const std::vector<SequencedEvent>& events) {
  std::vector<Position> out;
  for (const auto& e : events) out.push_back(e.position);
  return out;
}

// A temporary directory removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "reef-events-test-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed";
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// The store under test.
enum class Backend { kEmbedded, kPostgres };

inline std::string BackendName(const ::testing::TestParamInfo<Backend>& info) {
  return info.param == Backend::kEmbedded ? "embedded" : "postgresql";
}

// A fresh store per test: the embedded one in a temporary directory, or the PostgreSQL one in a
// fresh database of the test cluster (tests/support/pg_test_database.h).
template <typename Base>
class StoreFixture : public Base {
 protected:
  virtual Backend backend() const = 0;

  void SetUp() override {
    if (backend() == Backend::kPostgres) db_ = std::make_unique<reef::testing::PgTestDatabase>();
    Reopen();
  }

  // Opens the store again (the embedded one with `options`; the PostgreSQL one with its limits,
  // and pages of at most read_window_positions events).
  void Reopen(const EventStoreOptions& options = {}) {
    store_.reset();
    Result<std::unique_ptr<EventStore>> opened = Status::Internal("unset");
    if (backend() == Backend::kEmbedded) {
      opened = OpenEventStore(dir_.path() / "events", options);
    } else {
      PostgresEventStoreOptions pg;
      pg.limits = options.limits;
      pg.read_page_events =
          static_cast<uint32_t>(std::min<uint64_t>(options.read_window_positions, 1000));
      opened = OpenPostgresEventStore(db_->conninfo(), pg);
    }
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    store_ = std::move(*opened);
  }

  Position MustAppend(std::vector<Event> events,
                      std::optional<AppendCondition> condition = std::nullopt) {
    auto appended = store_->Append(std::move(events), std::move(condition));
    EXPECT_TRUE(appended.ok()) << appended.status().ToString();
    return appended.ok() ? *appended : 0;
  }

  std::vector<Position> ReadPositions(const Query& query, const ReadOptions& options = {}) {
    auto read = store_->Read(query, options);
    EXPECT_TRUE(read.ok()) << read.status().ToString();
    return read.ok() ? PositionsOf(read->events) : std::vector<Position>{};
  }

  TempDir dir_;
  std::unique_ptr<reef::testing::PgTestDatabase> db_;
  std::unique_ptr<EventStore> store_;
};

// Tests of the embedded store alone (its files, its group commit, its buffers).
class EventStoreTest : public StoreFixture<::testing::Test> {
 protected:
  Backend backend() const override { return Backend::kEmbedded; }
};

// Tests every backend must pass (instantiated in dcb_conformance_test.cc).
class AnyStoreTest : public StoreFixture<::testing::TestWithParam<Backend>> {
 protected:
  Backend backend() const override { return GetParam(); }
};

}  // namespace reef::events::testing
