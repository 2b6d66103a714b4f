// Subscriptions of the embedded event store (LogCore, detail/log_core.h). A LogSubscription
// catches up by reading from its cursor; when nothing is left it goes live (GoLive) and takes
// the positions the writer pushes to its bounded buffer (Publish, log_writer.cc); a full
// buffer sends it back to catching up.
//
// Thread ownership: any thread. A subscription's state is protected by its own mutex
// (detail/subscription_state.h); the store's list of subscriptions by subs_mu_.
#include <algorithm>
#include <chrono>

#include "events/detail/log_core.h"

namespace reef::events::detail {

bool LogCore::GoLive(const std::shared_ptr<SubscriptionState>& sub, Position read_head) {
  MutexLock lock(subs_mu_);
  if (closed_flag_.load() || head_.load() != read_head) return false;
  {
    MutexLock sub_lock(sub->mu);
    sub->live = true;
  }
  if (std::find(subs_.begin(), subs_.end(), sub) == subs_.end()) subs_.push_back(sub);
  return true;
}

void LogCore::Unsubscribe(const std::shared_ptr<SubscriptionState>& sub) {
  MutexLock lock(subs_mu_);
  std::erase(subs_, sub);
}

void LogCore::WakeSubscribers() {
  for (auto& sub : subs_) {
    MutexLock sub_lock(sub->mu);
    sub->cv.NotifyAll();
  }
}

namespace {

class LogSubscription final : public Subscription {
 public:
  LogSubscription(std::shared_ptr<LogCore> core, Query query, Position after)
      : core_(std::move(core)), state_(std::make_shared<SubscriptionState>()) {
    state_->query = std::move(query);
    state_->floor = after;
    state_->cursor = after;
  }
  ~LogSubscription() override { core_->Unsubscribe(state_); }

  Result<std::vector<SequencedEvent>> Next(size_t max_events,
                                           std::chrono::milliseconds timeout) override {
    max_events = std::max<size_t>(max_events, 1);
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      if (core_->ended()) return Status::Unavailable(core_->ClosedMessage());
      std::vector<Position> positions;
      bool live;
      {
        MutexLock lock(state_->mu);
        if (state_->live) {
          while (state_->buffer.empty() && state_->live && !core_->ended()) {
            if (state_->cv.WaitUntil(state_->mu, deadline) == std::cv_status::timeout) break;
          }
          while (!state_->buffer.empty() && positions.size() < max_events) {
            positions.push_back(state_->buffer.front());
            state_->buffer.pop_front();
          }
          if (!positions.empty()) state_->cursor = positions.back();
        }
        live = state_->live;
      }
      if (!positions.empty()) return core_->EventsAt(positions);
      if (live) {
        if (core_->ended()) continue;
        if (std::chrono::steady_clock::now() >= deadline) return std::vector<SequencedEvent>();
        continue;
      }
      // Catching up: read from the cursor; when nothing is left, try to go live.
      std::vector<SequencedEvent> events;
      ReadOptions options;
      options.from = position() + 1;
      options.limit = max_events;
      REEF_ASSIGN_OR_RETURN(Position head,
                            core_->ReadEach(state_->query, options, [&](const EventView& view) {
                              events.push_back(view.ToEvent());
                              return true;
                            }));
      if (!events.empty()) {
        MutexLock lock(state_->mu);
        state_->cursor = events.back().position;
        return events;
      }
      if (!core_->GoLive(state_, head) && core_->ended()) {
        return Status::Unavailable(core_->ClosedMessage());
      }
    }
  }

  Position position() const override {
    MutexLock lock(state_->mu);
    return state_->cursor;
  }
  bool live() const override {
    MutexLock lock(state_->mu);
    return state_->live;
  }
  uint64_t fallbacks() const override {
    MutexLock lock(state_->mu);
    return state_->fallbacks;
  }

 private:
  std::shared_ptr<LogCore> core_;
  std::shared_ptr<SubscriptionState> state_;
};

}  // namespace

std::unique_ptr<Subscription> NewLogSubscription(std::shared_ptr<LogCore> core, Query query,
                                                 Position after) {
  return std::make_unique<LogSubscription>(std::move(core), std::move(query), after);
}

}  // namespace reef::events::detail
