// HeadTracker (pg_core.h): the PostgreSQL event store's read barrier. One thread with its own
// connection computes the safe head in rounds:
//   1. read the sequence's last value S, then list the transactions holding the barrier key
//      (reef_head_candidate): every append that drew a position <= S took that key first, so
//      it is either listed or already finished;
//   2. wait until none of the listed transactions holds the key (reef_writers_done): then every
//      position <= S is committed or abandoned, and S is safe to read up to.
// Nobody blocks a writer. A round runs when a read asks for a fresh head, after this process
// appends, when another process NOTIFYs reef_events, and every poll_interval regardless.
// After a round that follows this process's appends, the thread NOTIFYs the others.
//
// Thread ownership: the thread owns the connection; the public calls take mu_.
#include <fmt/format.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>

#include "events/pg/pg_core.h"

namespace reef::events::pg_store {

namespace {

// The text form of a text[] of virtual transaction ids ("{3/12,5/7}"; NULL when none): their
// elements never need quoting.
std::vector<std::string> SplitWriters(std::string_view text) {
  std::vector<std::string> out;
  if (text.size() < 2) return out;
  text = text.substr(1, text.size() - 2);
  while (!text.empty()) {
    size_t comma = text.find(',');
    out.emplace_back(text.substr(0, comma));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

}  // namespace

HeadTracker::HeadTracker(pg::ConnectOptions connect, std::chrono::milliseconds poll_interval)
    : connect_(std::move(connect)), poll_interval_(poll_interval) {}

HeadTracker::~HeadTracker() {
  Stop();
  if (wake_fd_ >= 0) close(wake_fd_);
}

Status HeadTracker::Start() {
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) return Status::Unavailable("eventfd failed");
  REEF_ASSIGN_OR_RETURN(std::unique_ptr<pg::Connection> conn, pg::Connection::Open(connect_));
  REEF_RETURN_IF_ERROR(conn->ExecScript(fmt::format("LISTEN {}", kEventsChannel), "LISTEN"));
  REEF_ASSIGN_OR_RETURN(Position head, Round(*conn));
  {
    MutexLock lock(mu_);
    published_ = head;
  }
  connected_.store(true);
  thread_ = std::thread([this, c = std::move(conn)]() mutable { Loop(std::move(c)); });
  return Status::Ok();
}

void HeadTracker::Stop() {
  {
    MutexLock lock(mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
    cv_.NotifyAll();
  }
  Wake();
  if (thread_.joinable()) thread_.join();
}

void HeadTracker::Wake() {
  if (wake_fd_ < 0) return;
  uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof one);
}

bool HeadTracker::stopped() const {
  MutexLock lock(mu_);
  return stopping_;
}

Position HeadTracker::published() const {
  MutexLock lock(mu_);
  return published_;
}

std::string HeadTracker::last_error() const {
  MutexLock lock(mu_);
  return last_error_;
}

void HeadTracker::NoteLocalAppend() {
  {
    MutexLock lock(mu_);
    notify_wanted_ = true;
  }
  Wake();
}

Result<Position> HeadTracker::FreshHead(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  MutexLock lock(mu_);
  if (stopping_) return Status::Unavailable("the event store is closed");
  const uint64_t want = started_ + 1;  // a round that starts after this call
  lock.Unlock();
  Wake();
  lock.Lock();
  while (completed_ < want) {
    if (stopping_) return Status::Unavailable("the event store is closed");
    if (cv_.WaitUntil(mu_, deadline) == std::cv_status::timeout && completed_ < want) {
      return Status::Unavailable(fmt::format(
          "the event store could not settle its head within {} ms (appends in flight did not "
          "finish{}{})",
          timeout.count(), last_error_.empty() ? "" : "; ", last_error_));
    }
  }
  return published_;
}

bool HeadTracker::WaitPast(Position seen, std::chrono::steady_clock::time_point deadline) {
  MutexLock lock(mu_);
  while (published_ <= seen && !stopping_) {
    if (cv_.WaitUntil(mu_, deadline) == std::cv_status::timeout) break;
  }
  return !stopping_;
}

Result<Position> HeadTracker::Round(pg::Connection& conn) {
  pg::Params barrier;
  barrier.Int8(kBarrierKey);
  REEF_ASSIGN_OR_RETURN(
      pg::PgResult candidate,
      conn.Exec("SELECT head, writers FROM reef_head_candidate($1)", barrier, "reading the head"));
  REEF_ASSIGN_OR_RETURN(int64_t head, candidate.Int(0, 0));
  rounds_.fetch_add(1);
  if (candidate.is_null(0, 1)) return static_cast<Position>(head);
  waits_.fetch_add(1);
  std::vector<std::string> writers = SplitWriters(candidate.field(0, 1));
  std::vector<std::string_view> views(writers.begin(), writers.end());
  pg::Params check;
  check.Int8(kBarrierKey).TextArray(views);
  auto pause = std::chrono::microseconds(50);
  for (;;) {
    REEF_ASSIGN_OR_RETURN(pg::PgResult done,
                          conn.Exec("SELECT reef_writers_done($1, $2)", check, {}, true));
    if (done.rows() == 1 && done.field(0, 0) == std::string_view("\x01", 1)) break;
    if (stopped()) return Status::Unavailable("the event store is closed");
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(10'000));
  }
  return static_cast<Position>(head);
}

void HeadTracker::WaitForWork(pg::Connection& conn) {
  pollfd fds[2] = {{wake_fd_, POLLIN, 0}, {conn.socket(), POLLIN, 0}};
  (void)poll(fds, 2, static_cast<int>(poll_interval_.count()));
  uint64_t count;
  (void)!read(wake_fd_, &count, sizeof count);
}

void HeadTracker::Loop(std::unique_ptr<pg::Connection> conn) {
  auto backoff = std::chrono::milliseconds(100);
  for (;;) {
    {
      MutexLock lock(mu_);
      if (stopping_) break;
    }
    if (!conn || !conn->healthy()) {
      conn.reset();
      connected_.store(false);
      auto opened = pg::Connection::Open(connect_);
      Status listened =
          opened.ok() ? (*opened)->ExecScript(fmt::format("LISTEN {}", kEventsChannel), "LISTEN")
                      : opened.status();
      if (!listened.ok()) {
        MutexLock lock(mu_);
        last_error_ = listened.message();
        cv_.WaitFor(mu_, backoff);
        backoff = std::min(backoff * 2, std::chrono::milliseconds(5'000));
        continue;
      }
      conn = std::move(*opened);
      connected_.store(true);
      backoff = std::chrono::milliseconds(100);
    } else {
      WaitForWork(*conn);
      if (!conn->TakeNotifications().ok()) continue;  // broken: reconnect above
    }
    uint64_t round;
    bool notify;
    {
      MutexLock lock(mu_);
      if (stopping_) break;
      round = ++started_;
      notify = std::exchange(notify_wanted_, false);
    }
    auto head = Round(*conn);
    MutexLock lock(mu_);
    if (!head.ok()) {
      last_error_ = head.status().message();
      if (notify) notify_wanted_ = true;
      if (conn->healthy()) cv_.WaitFor(mu_, backoff);  // a failing statement: do not spin
      continue;
    }
    completed_ = round;
    published_ = std::max(published_, *head);
    last_error_.clear();
    cv_.NotifyAll();
    lock.Unlock();
    if (notify) (void)conn->ExecScript(fmt::format("NOTIFY {}", kEventsChannel), "NOTIFY");
  }
}

}  // namespace reef::events::pg_store
