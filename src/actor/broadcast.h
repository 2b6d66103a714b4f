// Broadcast<T>: bounded publish/subscribe for live streams (log follow, lifecycle events).
//
// Every subscription has its own bounded buffer and a server-side filter. Publish never
// blocks the publisher: it appends the item to the buffer of every subscription whose filter
// matches. A subscription whose buffer is full when an item arrives LAGS: it fails explicitly
// (DESIGN.md "every stream is bounded and fails loudly when a consumer lags"; spec 001 "Actor
// repair and logging": lagging subscriptions fail rather than silently losing entries). Its
// buffered items are discarded, its next Poll/Wait returns Unavailable naming the number of
// entries dropped and the capacity, and it receives nothing more. A subscriber never sees a
// gap followed by later items.
//
// Ordering: Publish calls are serialized, so every subscription sees the items it matches in
// the same order, which is the order of the Publish calls.
//
// Thread ownership: any thread. Broadcast and Subscription are safe to use concurrently from
// any number of threads. Lock order: Broadcast::mu_ before detail::Channel::mu_.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/mutex.h"
#include "core/status.h"

namespace reef::actor {

// Server-side filter: true when a subscription wants the item. An empty filter matches
// everything. REQUIRES: cheap, non-blocking, and never calls back into the Broadcast (it runs
// inside Publish, under the broadcaster's lock).
template <typename T>
using BroadcastFilter = std::function<bool(const T&)>;

// Items one subscription buffers before it lags, unless Subscribe is told otherwise.
inline constexpr std::size_t kDefaultSubscriberBuffer = 1024;

namespace detail {

// The state one subscription shares with its broadcaster. Use Subscription<T>, not this.
template <typename T>
class Channel {
 public:
  enum class State { kOpen, kLagged, kClosed, kEnded };
  // Longest single wait; longer timeouts are clamped (avoids deadline overflow).
  static constexpr std::chrono::milliseconds kMaxWait = std::chrono::hours(24);

  Channel(BroadcastFilter<T> filter, std::size_t capacity)
      : filter_(std::move(filter)), capacity_(capacity < 1 ? 1 : capacity) {}

  bool Matches(const T& item) const { return !filter_ || filter_(item); }

  // Appends `item`, or fails the channel when its buffer is full. False when the channel no
  // longer takes items (lagged, closed or ended): the broadcaster then drops it.
  bool Offer(const T& item) {
    MutexLock lock(mu_);
    if (state_ != State::kOpen) return false;
    if (buffer_.size() >= capacity_) {
      dropped_ = buffer_.size() + 1;  // the buffered items and the one that did not fit
      buffer_.clear();
      state_ = State::kLagged;
      cv_.NotifyAll();
      return false;
    }
    buffer_.push_back(item);
    cv_.NotifyOne();
    return true;
  }

  // True when the broadcaster should keep delivering to this channel.
  bool open() const {
    MutexLock lock(mu_);
    return state_ == State::kOpen;
  }

  // The subscriber unsubscribed: discard the buffer. A lagged channel keeps its failure.
  void Close() {
    MutexLock lock(mu_);
    if (state_ == State::kLagged || state_ == State::kClosed) return;
    state_ = State::kClosed;
    buffer_.clear();
    cv_.NotifyAll();
  }

  // The broadcaster is gone: the buffer stays readable, nothing more arrives.
  void End() {
    MutexLock lock(mu_);
    if (state_ != State::kOpen) return;
    state_ = State::kEnded;
    cv_.NotifyAll();
  }

  Result<std::vector<T>> Wait(std::size_t max, std::chrono::milliseconds timeout) {
    MutexLock lock(mu_);
    if (timeout.count() > 0) {
      const auto deadline = std::chrono::steady_clock::now() + std::min(timeout, kMaxWait);
      while (buffer_.empty() && state_ == State::kOpen) {
        if (cv_.WaitUntil(mu_, deadline) == std::cv_status::timeout) break;
      }
    }
    if (state_ == State::kLagged) {
      return Status::Unavailable("subscription lagged: " + std::to_string(dropped_) +
                                 " entries dropped because its buffer (capacity " +
                                 std::to_string(capacity_) +
                                 ") was full; it receives nothing more, subscribe again");
    }
    if (state_ == State::kClosed) {
      return Status::FailedPrecondition("subscription is closed (unsubscribed)");
    }
    if (state_ == State::kEnded && buffer_.empty()) {
      return Status::Unavailable("subscription ended: its broadcaster was destroyed");
    }
    std::vector<T> items;
    const std::size_t n = std::min(max, buffer_.size());
    items.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      items.push_back(std::move(buffer_.front()));
      buffer_.pop_front();
    }
    return items;
  }

  State state() const {
    MutexLock lock(mu_);
    return state_;
  }
  std::uint64_t dropped() const {
    MutexLock lock(mu_);
    return dropped_;
  }
  std::size_t capacity() const { return capacity_; }

 private:
  // Constant after construction.
  const BroadcastFilter<T> filter_;
  const std::size_t capacity_;  // items, at least 1

  // Protected by mu_. cv_ is signalled when an item arrives or the state changes.
  mutable Mutex mu_;
  CondVar cv_;
  std::deque<T> buffer_ GUARDED_BY(mu_);        // at most capacity_ items
  State state_ GUARDED_BY(mu_) = State::kOpen;  // leaves kOpen at most once
  std::uint64_t dropped_ GUARDED_BY(mu_) = 0;   // entries lost when it lagged
};

}  // namespace detail

// One subscriber's end of a Broadcast: a bounded buffer of matching items, read in publish
// order. Destroying the last reference closes it. Thread ownership: any thread.
template <typename T>
class Subscription {
 public:
  // Made by Broadcast::Subscribe; lifetime: shares `channel` with the broadcaster.
  explicit Subscription(std::shared_ptr<detail::Channel<T>> channel)
      : channel_(std::move(channel)) {}
  ~Subscription() { Close(); }
  Subscription(const Subscription&) = delete;
  Subscription& operator=(const Subscription&) = delete;

  // Takes up to `max` buffered items, oldest first, without blocking (possibly none).
  // Errors: Unavailable when the subscription lagged ("subscription lagged: N entries dropped
  // ... capacity C"), or when the broadcaster was destroyed and the buffer is drained;
  // FailedPrecondition after Close.
  Result<std::vector<T>> Poll(std::size_t max) {
    return channel_->Wait(max, std::chrono::milliseconds(0));
  }

  // As Poll, but first blocks up to `timeout` (milliseconds, clamped to 24 hours) until at
  // least one item, a failure, or Close. Returns an empty vector when the timeout passes with
  // nothing buffered.
  Result<std::vector<T>> Wait(std::size_t max, std::chrono::milliseconds timeout) {
    return channel_->Wait(max, timeout);
  }

  // Unsubscribes: discards the buffer, wakes any Wait, and the broadcaster drops the
  // subscription; nothing more is delivered. Idempotent.
  void Close() { channel_->Close(); }

  // True once the subscription lagged; it stays failed.
  bool failed() const { return channel_->state() == detail::Channel<T>::State::kLagged; }
  // True after Close.
  bool closed() const { return channel_->state() == detail::Channel<T>::State::kClosed; }
  // Entries this subscription lost when it lagged (0 while it has not lagged).
  std::uint64_t dropped() const { return channel_->dropped(); }
  // Items the buffer holds before the subscription lags.
  std::size_t capacity() const { return channel_->capacity(); }

 private:
  const std::shared_ptr<detail::Channel<T>> channel_;
};

// The publishing side: a set of subscriptions and the Publish that feeds them.
// Thread ownership: any thread. Destroying the Broadcast ends every subscription (each
// drains its buffer, then reports Unavailable).
template <typename T>
class Broadcast {
 public:
  using Filter = BroadcastFilter<T>;

  Broadcast() = default;
  ~Broadcast() {
    MutexLock lock(mu_);
    for (auto& channel : channels_) channel->End();
  }
  Broadcast(const Broadcast&) = delete;
  Broadcast& operator=(const Broadcast&) = delete;

  // Registers a subscription that receives the items published from now on that `filter`
  // matches (empty filter: all), buffering up to `capacity` items (0 is treated as 1).
  std::shared_ptr<Subscription<T>> Subscribe(Filter filter = {},
                                             std::size_t capacity = kDefaultSubscriberBuffer) {
    auto channel = std::make_shared<detail::Channel<T>>(std::move(filter), capacity);
    MutexLock lock(mu_);
    channels_.push_back(channel);
    return std::make_shared<Subscription<T>>(std::move(channel));
  }

  // Appends `item` to every open subscription whose filter matches; never blocks on a
  // subscriber (a full buffer fails that subscription). Drops closed and failed
  // subscriptions. Returns the number of subscriptions the item was delivered to.
  std::size_t Publish(const T& item) {
    MutexLock lock(mu_);
    std::size_t delivered = 0;
    std::erase_if(channels_, [&](const std::shared_ptr<detail::Channel<T>>& channel) {
      if (!channel->Matches(item)) return !channel->open();
      if (!channel->Offer(item)) return true;
      ++delivered;
      return false;
    });
    return delivered;
  }

  // Subscriptions still registered that have neither closed nor lagged.
  std::size_t subscriber_count() const {
    MutexLock lock(mu_);
    std::size_t count = 0;
    for (const auto& channel : channels_) count += channel->open() ? 1 : 0;
    return count;
  }

 private:
  // Protected by mu_.
  mutable Mutex mu_;
  std::vector<std::shared_ptr<detail::Channel<T>>> channels_ GUARDED_BY(mu_);
};

}  // namespace reef::actor
