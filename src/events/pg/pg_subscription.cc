// Subscriptions of the PostgreSQL event store (pg_core.h). A subscription reads the events
// matching its query between its cursor and the safe head the HeadTracker publishes, and waits
// for the head to move when it has read everything. The safe head makes it wait for a position
// that is drawn but not committed, so it never skips one; it has no buffer to overflow, so it
// never falls back. While the database is unreachable it waits, as if no event came.
//
// Thread ownership: any thread; a subscription's state is protected by its own mutex.
#include <algorithm>
#include <thread>

#include "events/pg/pg_core.h"

namespace reef::events::pg_store {

namespace {

class PgSubscription final : public Subscription {
 public:
  PgSubscription(std::shared_ptr<PgCore> core, Query query, Position after)
      : core_(std::move(core)), query_(std::move(query)), cursor_(after), scanned_(after) {
    core_->tracker().AddSubscriber(+1);
  }
  ~PgSubscription() override { core_->tracker().AddSubscriber(-1); }

  Result<std::vector<SequencedEvent>> Next(size_t max_events,
                                           std::chrono::milliseconds timeout) override {
    max_events = std::clamp<size_t>(max_events, 1, core_->options().read_page_events);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      if (core_->closed() || core_->tracker().stopped()) {
        return Status::Unavailable(core_->ClosedMessage());
      }
      const Position head = core_->tracker().published();
      Position scanned = this->scanned();
      if (head > scanned) {
        auto read = core_->ReadRange(query_, scanned, head, static_cast<uint32_t>(max_events));
        if (!read.ok()) {
          // The database is unreachable for now: wait for it, as for new events (the pool
          // reconnects); other errors end the subscription.
          if (read.status().code() != Code::kUnavailable) return read.status();
          if (std::chrono::steady_clock::now() >= deadline) return std::vector<SequencedEvent>();
          std::this_thread::sleep_for(
              std::min<std::chrono::milliseconds>(std::chrono::milliseconds(100), timeout));
          continue;
        }
        std::vector<SequencedEvent> events = std::move(*read);
        MutexLock lock(mu_);
        if (events.size() < max_events) {
          scanned_ = head;
        } else {
          scanned_ = events.back().position;
        }
        if (!events.empty()) {
          cursor_ = events.back().position;
          return events;
        }
        continue;
      }
      if (std::chrono::steady_clock::now() >= deadline) return std::vector<SequencedEvent>();
      core_->tracker().WaitPast(head, deadline);
    }
  }

  Position position() const override {
    MutexLock lock(mu_);
    return cursor_;
  }
  bool live() const override { return scanned() >= core_->tracker().published(); }
  uint64_t fallbacks() const override { return 0; }

 private:
  Position scanned() const {
    MutexLock lock(mu_);
    return scanned_;
  }

  const std::shared_ptr<PgCore> core_;
  const Query query_;
  mutable Mutex mu_;
  Position cursor_ GUARDED_BY(mu_);   // the last event delivered
  Position scanned_ GUARDED_BY(mu_);  // every matching event up to here was delivered
};

}  // namespace

std::unique_ptr<Subscription> NewPgSubscription(std::shared_ptr<PgCore> core, Query query,
                                                Position after) {
  return std::make_unique<PgSubscription>(std::move(core), std::move(query), after);
}

}  // namespace reef::events::pg_store
