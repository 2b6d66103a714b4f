#include "actor/log_store.h"

#include <algorithm>
#include <chrono>
#include <queue>
#include <utility>

#include "core/clock.h"
#include "core/utf8.h"

namespace reef::actor {
namespace {

bool AtLeast(LogLevel level, LogLevel min_level) {
  return static_cast<int>(level) >= static_cast<int>(min_level);
}

// A read position in one actor's retained tail, for the k-way merge in History.
struct Cursor {
  const std::deque<LogEntry>* entries;
  std::size_t index;
  std::uint64_t seq() const { return (*entries)[index].seq; }
};

// Heap order: the cursor with the smallest next seq on top.
struct LaterSeq {
  bool operator()(const Cursor& a, const Cursor& b) const { return a.seq() > b.seq(); }
};

// Moves `cursor` to its first entry at or above `min_level`; false when none is left.
bool SkipBelow(Cursor& cursor, LogLevel min_level) {
  while (cursor.index < cursor.entries->size() &&
         !AtLeast((*cursor.entries)[cursor.index].level, min_level)) {
    ++cursor.index;
  }
  return cursor.index < cursor.entries->size();
}

std::vector<ActorRef> SortedUnique(std::vector<ActorRef> actors) {
  std::sort(actors.begin(), actors.end());
  actors.erase(std::unique(actors.begin(), actors.end()), actors.end());
  return actors;
}

}  // namespace

bool LogFilter::Matches(const LogEntry& entry) const {
  if (!AtLeast(entry.level, min_level)) return false;
  return actors.empty() || std::find(actors.begin(), actors.end(), entry.actor) != actors.end();
}

LogStore::LogStore(LogStoreOptions options) : options_(options) {}

Result<std::uint64_t> LogStore::Append(ActorRef actor, std::uint32_t incarnation, LogLevel level,
                                       std::string message) {
  if (message.size() > options_.max_message_bytes) {
    return Status::LimitExceeded(
        "log message is " + std::to_string(message.size()) + " bytes; the limit is " +
        std::to_string(options_.max_message_bytes) + " UTF-8 bytes (max_log_message_bytes)");
  }
  if (auto bad = FindInvalidUtf8(message)) {
    return Status::InvalidArgument("log message is not valid UTF-8 (ill-formed sequence at byte " +
                                   std::to_string(*bad) + ")");
  }
  const std::int64_t now = UnixNowMs();

  WriterLock lock(mu_);
  LogEntry entry{++last_seq_, actor, incarnation, level, std::move(message), now};
  followers_.Publish(entry);
  std::deque<LogEntry>& tail = by_actor_[actor];
  tail.push_back(std::move(entry));
  while (tail.size() > options_.retained_per_actor) tail.pop_front();
  return last_seq_;
}

void LogStore::Forget(ActorRef actor) {
  WriterLock lock(mu_);
  by_actor_.erase(actor);
}

Result<LogPage> LogStore::History(const LogFilter& filter, std::uint64_t after_seq,
                                  std::size_t limit) const {
  if (limit == 0 || limit > options_.max_page_entries) {
    return Status::InvalidArgument("log history page limit is " + std::to_string(limit) +
                                   "; it must be 1.." + std::to_string(options_.max_page_entries) +
                                   " entries");
  }
  ReaderLock lock(mu_);

  // One cursor per selected actor, at its first entry with seq > after_seq.
  std::vector<Cursor> cursors;
  auto add_cursor = [&](const std::deque<LogEntry>& entries) {
    auto first =
        std::upper_bound(entries.begin(), entries.end(), after_seq,
                         [](std::uint64_t seq, const LogEntry& entry) { return seq < entry.seq; });
    Cursor cursor{&entries, static_cast<std::size_t>(first - entries.begin())};
    if (SkipBelow(cursor, filter.min_level)) cursors.push_back(cursor);
  };
  if (filter.actors.empty()) {
    cursors.reserve(by_actor_.size());
    for (const auto& [ref, entries] : by_actor_) add_cursor(entries);
  } else {
    for (const ActorRef& ref : SortedUnique(filter.actors)) {
      if (auto it = by_actor_.find(ref); it != by_actor_.end()) add_cursor(it->second);
    }
  }

  // k-way merge by seq.
  std::priority_queue<Cursor, std::vector<Cursor>, LaterSeq> heap(LaterSeq{}, std::move(cursors));
  LogPage page;
  page.next_after = after_seq;
  page.entries.reserve(std::min(limit, heap.size() * options_.retained_per_actor));
  while (!heap.empty() && page.entries.size() < limit) {
    Cursor cursor = heap.top();
    heap.pop();
    page.entries.push_back((*cursor.entries)[cursor.index]);
    ++cursor.index;
    if (SkipBelow(cursor, filter.min_level)) heap.push(cursor);
  }
  if (!page.entries.empty()) page.next_after = page.entries.back().seq;
  page.more = !heap.empty();
  return page;
}

std::shared_ptr<Subscription<LogEntry>> LogStore::Follow(const LogFilter& filter) {
  // Sorted actors: the filter runs on every Append, so it binary-searches instead of scanning.
  return followers_.Subscribe(
      [actors = SortedUnique(filter.actors), min_level = filter.min_level](const LogEntry& entry) {
        return AtLeast(entry.level, min_level) &&
               (actors.empty() || std::binary_search(actors.begin(), actors.end(), entry.actor));
      },
      options_.subscriber_buffer);
}

std::uint64_t LogStore::last_seq() const {
  ReaderLock lock(mu_);
  return last_seq_;
}

std::size_t LogStore::retained(const ActorRef& actor) const {
  ReaderLock lock(mu_);
  auto it = by_actor_.find(actor);
  return it == by_actor_.end() ? 0 : it->second.size();
}

}  // namespace reef::actor
