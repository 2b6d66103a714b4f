// Crash safety of the embedded store: a child process appends with conditions from several
// threads and reports every acknowledged event through a pipe; the test SIGKILLs it at a
// random moment, reopens the store and checks that every acknowledged event is there at its
// position, that positions are gapless, and that no event is partial. 24 rounds on one store.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <random>
#include <sstream>
#include <thread>

#include "event_store_test_support.h"
#include "events/event_store.h"

namespace reef::events {
namespace {

using namespace std::chrono_literals;

// The data of an event is derived from its id, so a partial or mixed-up event shows.
std::string DataFor(const EventId& id, size_t size) {
  std::string data(size, static_cast<char>(id[0]));
  for (size_t i = 0; i < size; i += 97) data[i] = static_cast<char>(id[i % 16]);
  return data;
}

// The child: appends until killed, writing "position id\n" per acknowledged event.
[[noreturn]] void RunWriter(const std::filesystem::path& dir, int ack_fd, unsigned seed) {
  auto opened = OpenEventStore(dir);
  if (!opened.ok()) {
    std::string line = "open-failed " + opened.status().ToString() + "\n";
    (void)!::write(ack_fd, line.data(), line.size());
    ::_exit(2);
  }
  std::unique_ptr<EventStore> store = std::move(*opened);
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(seed * 31 + t);
      Query mine = testing::QueryOf({testing::Item({}, {"writer:" + std::to_string(t)})});
      for (;;) {
        auto read = store->Read(mine, {.from = std::nullopt, .backwards = true, .limit = 1});
        if (!read.ok()) ::_exit(3);
        std::vector<Event> events(1 + rng() % 4);
        for (Event& e : events) {
          e = testing::MakeEvent("Wrote", {"writer:" + std::to_string(t), "any"});
          e.id = *NewEventId();
          e.data = DataFor(e.id, rng() % 3 == 0 ? 20'000 + rng() % 40'000 : rng() % 300);
        }
        std::vector<EventId> ids;
        for (const Event& e : events) ids.push_back(e.id);
        auto appended = store->Append(std::move(events), testing::FailIf(mine, read->head));
        if (!appended.ok()) ::_exit(4);  // no one else writes this tag: never a conflict
        std::ostringstream lines;
        for (size_t i = 0; i < ids.size(); ++i) {
          lines << (*appended - ids.size() + 1 + i) << ' ' << FormatEventId(ids[i]) << '\n';
        }
        std::string text = lines.str();  // < PIPE_BUF: one atomic write
        if (::write(ack_fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
          ::_exit(5);
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  ::_exit(0);
}

// Reads everything the child wrote until it is gone.
std::string DrainUntilKilled(int fd, pid_t child, std::chrono::milliseconds kill_after) {
  std::string text;
  char buffer[4096];
  auto kill_at = std::chrono::steady_clock::now() + kill_after;
  bool killed = false;
  for (;;) {
    if (!killed && std::chrono::steady_clock::now() >= kill_at) {
      ::kill(child, SIGKILL);
      killed = true;
    }
    pollfd p{fd, POLLIN, 0};
    int ready = ::poll(&p, 1, 5);
    if (ready > 0) {
      ssize_t n = ::read(fd, buffer, sizeof buffer);
      if (n > 0) {
        text.append(buffer, static_cast<size_t>(n));
        continue;
      }
      if (n == 0) break;  // the child is gone and the pipe is drained
    }
  }
  return text;
}

TEST(EventStoreCrashTest, SigkillAtRandomPointsLosesNoAcknowledgedEvent) {
  testing::TempDir dir;
  auto store_dir = dir.path() / "events";
  std::mt19937 rng(20261201);
  std::map<Position, EventId> acknowledged;
  constexpr int kRounds = 24;
  for (int round = 0; round < kRounds; ++round) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      ::close(fds[0]);
      RunWriter(store_dir, fds[1], static_cast<unsigned>(round));
    }
    ::close(fds[1]);
    std::string acks = DrainUntilKilled(fds[0], child, std::chrono::milliseconds(20 + rng() % 180));
    ::close(fds[0]);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "round " << round << ": the writer stopped on its own: " << acks.substr(0, 200);
    std::istringstream lines(acks);
    Position position;
    std::string id;
    while (lines >> position >> id) {
      auto parsed = ParseEventId(id);
      ASSERT_TRUE(parsed.ok()) << id;
      acknowledged[position] = *parsed;
    }

    // After the restart: every acknowledged event at its position, gapless, none partial.
    auto reopened = OpenEventStore(store_dir);
    ASSERT_TRUE(reopened.ok()) << "round " << round << ": " << reopened.status().ToString();
    auto all = (*reopened)->Read(Query{});
    ASSERT_TRUE(all.ok()) << all.status().ToString();
    ASSERT_EQ(all->events.size(), all->head) << "round " << round;
    for (size_t i = 0; i < all->events.size(); ++i) {
      const SequencedEvent& e = all->events[i];
      ASSERT_EQ(e.position, i + 1) << "round " << round;
      ASSERT_EQ(e.event.data, DataFor(e.event.id, e.event.data.size()))
          << "round " << round << ": event " << e.position << " is not whole";
    }
    for (const auto& [p, expected] : acknowledged) {
      ASSERT_LE(p, all->head) << "round " << round << ": acknowledged event " << p << " is lost";
      ASSERT_EQ(all->events[p - 1].event.id, expected) << "round " << round << ", position " << p;
    }
  }
  EXPECT_GT(acknowledged.size(), size_t{kRounds});
}

}  // namespace
}  // namespace reef::events
