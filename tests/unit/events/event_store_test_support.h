// Helpers for the event store tests: a fresh store in a temporary directory, and short ways to
// write events and queries.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "events/event_store.h"

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

class EventStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { Reopen(); }

  void Reopen(const EventStoreOptions& options = {}) {
    store_.reset();
    auto opened = OpenEventStore(dir_.path() / "events", options);
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
  std::unique_ptr<EventStore> store_;
};

}  // namespace reef::events::testing
