// HeadTracker (pg_core.h): the PostgreSQL event store's read barrier. One thread with its own
// connection computes the safe head in rounds: reef_safe_head takes the barrier key
// exclusively, which waits for the appends in flight (they hold it shared from before they
// draw a position until they commit), and reads the sequence: every position up to that value
// is then committed or abandoned. Appends arriving during the round wait for it, about as long
// as one append takes; a writer that stalls holding the key makes the round give up after
// lock_timeout (50 ms), so writers keep going and the head waits.
// A round runs when a read asks for a fresh head, after this process appends (when it has
// subscribers), when another process NOTIFYs reef_events, and every poll_interval regardless;
// rounds are at least kMinRoundGap apart, so under load many appends share one. After this
// process appends, the thread NOTIFYs the others (at most once per kMinNotifyGap). A NOTIFY
// commits a transaction of its own; the thread's session does not wait for that commit to
// reach disk (synchronous_commit off): a lost notification only delays a poll.
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

constexpr auto kMinRoundGap = std::chrono::microseconds(1'000);
constexpr auto kMinNotifyGap = std::chrono::microseconds(2'000);
// After a round gave up on a stalled writer, the next waits this long (writers go first).
constexpr auto kStalledRetry = std::chrono::milliseconds(20);
// lock_not_available: reef_safe_head's lock_timeout passed.
constexpr std::string_view kLockTimeout = "55P03";

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
  REEF_RETURN_IF_ERROR(conn->ExecScript(
      fmt::format("SET synchronous_commit = off; LISTEN {}", kEventsChannel), "LISTEN"));
  REEF_ASSIGN_OR_RETURN(std::optional<Position> head, Round(*conn));
  {
    MutexLock lock(mu_);
    published_ = head.value_or(0);
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
  bool wake;
  {
    MutexLock lock(mu_);
    // Wanted already: the thread knows and waits for its gap; waking it at every append would
    // cost a context switch each (on a small machine, a good part of an append's time).
    wake = !notify_wanted_ || (subscribers_ > 0 && !round_wanted_);
    notify_wanted_ = true;
    if (subscribers_ > 0) round_wanted_ = true;
  }
  if (wake) Wake();
}

void HeadTracker::AddSubscriber(int delta) {
  MutexLock lock(mu_);
  subscribers_ += delta;
}

Result<Position> HeadTracker::FreshHead(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  MutexLock lock(mu_);
  if (stopping_) return Status::Unavailable("the event store is closed");
  const uint64_t want = started_ + 1;  // a round that starts after this call
  round_wanted_ = true;
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

Result<std::optional<Position>> HeadTracker::Round(pg::Connection& conn) {
  pg::Params barrier;
  barrier.Int8(kBarrierKey);
  rounds_.fetch_add(1);
  REEF_ASSIGN_OR_RETURN(pg::PgResult head, conn.RunPrepared("SELECT reef_safe_head($1)", barrier));
  if (!head.ok()) {
    if (head.sqlstate() == kLockTimeout) {  // a writer holds its position for long
      waits_.fetch_add(1);
      return std::optional<Position>();
    }
    return Status(head.ToStatus().code(),
                  fmt::format("reading the head: {}", head.ToStatus().message()));
  }
  REEF_ASSIGN_OR_RETURN(int64_t value, head.Int(0, 0));
  return std::optional<Position>(static_cast<Position>(value));
}

void HeadTracker::WaitForWork(pg::Connection& conn, std::chrono::microseconds timeout) {
  pollfd fds[2] = {{wake_fd_, POLLIN, 0}, {conn.socket(), POLLIN, 0}};
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count();
  (void)poll(fds, 2, static_cast<int>(std::max<int64_t>(ms, timeout.count() > 0 ? 1 : 0)));
  uint64_t count;
  (void)!read(wake_fd_, &count, sizeof count);
}

void HeadTracker::Loop(std::unique_ptr<pg::Connection> conn) {
  using Clock = std::chrono::steady_clock;
  auto backoff = std::chrono::milliseconds(100);
  Clock::time_point last_round = Clock::now(), last_notify{}, not_before{};
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
          opened.ok() ? (*opened)->ExecScript(
                            fmt::format("SET synchronous_commit = off; LISTEN {}", kEventsChannel),
                            "LISTEN")
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
      MutexLock lock(mu_);
      round_wanted_ = true;  // appends may have happened while not listening
    }
    // Wait for work: a wake-up, a notification, the next allowed round or notify, or the poll.
    auto now = Clock::now();
    std::chrono::microseconds timeout =
        poll_interval_ - std::chrono::duration_cast<std::chrono::microseconds>(now - last_round);
    {
      MutexLock lock(mu_);
      auto until = [&](Clock::time_point t) {
        return std::chrono::duration_cast<std::chrono::microseconds>(t - now);
      };
      if (round_wanted_) {
        timeout = std::min(timeout, std::max(until(last_round + kMinRoundGap), until(not_before)));
      }
      if (notify_wanted_) timeout = std::min(timeout, until(last_notify + kMinNotifyGap));
    }
    // A notification libpq read while a round or a NOTIFY ran sits in its queue, not on the
    // socket: look there before sleeping on the socket.
    auto received = conn->TakeNotifications();
    if (!received.ok()) continue;  // broken: reconnect above
    if (received->empty() && timeout > std::chrono::microseconds(0)) {
      WaitForWork(*conn, timeout);
      received = conn->TakeNotifications();
    }
    if (!received.ok()) continue;  // broken: reconnect above
    now = Clock::now();
    bool round = false, notify = false;
    uint64_t number = 0;
    {
      MutexLock lock(mu_);
      if (stopping_) break;
      if (!received->empty() || now - last_round >= poll_interval_) round_wanted_ = true;
      if (round_wanted_ && now - last_round >= kMinRoundGap && now >= not_before) {
        round = true;
        round_wanted_ = false;
        number = ++started_;
      }
      if (notify_wanted_ && now - last_notify >= kMinNotifyGap) {
        notify = true;
        notify_wanted_ = false;
      }
    }
    if (round) {
      last_round = now;
      auto head = Round(*conn);
      MutexLock lock(mu_);
      if (!head.ok()) {
        last_error_ = head.status().message();
        round_wanted_ = true;
        if (conn->healthy()) not_before = Clock::now() + backoff;  // a failing statement
      } else if (!head->has_value()) {
        last_error_ = "an append holds its position without committing";
        round_wanted_ = true;
        not_before = Clock::now() + kStalledRetry;
      } else {
        completed_ = number;
        published_ = std::max(published_, **head);
        last_error_.clear();
        cv_.NotifyAll();
      }
    }
    if (notify && conn->healthy()) {
      last_notify = now;
      (void)conn->ExecScript(fmt::format("NOTIFY {}", kEventsChannel), "NOTIFY");
    }
  }
}

}  // namespace reef::events::pg_store
