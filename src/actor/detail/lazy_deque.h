// LazyDeque: a FIFO that allocates nothing until it first holds an element.
//
// libstdc++'s std::deque allocates its map and a 512-byte node when it is constructed, so an
// idle actor's empty mailbox cost ~600 bytes of its ~1,700 (actor_bench `memory`). Most actors
// of a large image are idle and many never receive a message; this keeps their mailbox at one
// pointer. Once used, the deque stays (freeing it whenever it empties would add two
// allocations to every message of a ping-pong).
//
// Thread ownership: none of its own; its owner's (an Actor: its reactor's thread).
#pragma once

#include <cstddef>
#include <deque>
#include <memory>
#include <utility>

namespace reef::actor::detail {

template <typename T>
class LazyDeque {
 public:
  using const_iterator = typename std::deque<T>::const_iterator;

  LazyDeque() = default;
  LazyDeque(LazyDeque&&) noexcept = default;
  LazyDeque& operator=(LazyDeque&&) noexcept = default;
  LazyDeque(const LazyDeque& other)
      : items_(other.items_ ? std::make_unique<std::deque<T>>(*other.items_) : nullptr) {}
  LazyDeque& operator=(const LazyDeque& other) {
    if (this != &other) *this = LazyDeque(other);
    return *this;
  }
  // Replaces the contents (set-messages).
  LazyDeque& operator=(std::deque<T> items) {
    items_ = std::make_unique<std::deque<T>>(std::move(items));
    return *this;
  }

  bool empty() const { return !items_ || items_->empty(); }
  size_t size() const { return items_ ? items_->size() : 0; }
  // REQUIRES: !empty() (front, pop_front); i < size() (operator[]).
  T& front() { return items_->front(); }
  const T& operator[](size_t i) const { return (*items_)[i]; }
  void pop_front() { items_->pop_front(); }
  void push_back(T item) { Items().push_back(std::move(item)); }
  void push_front(T item) { Items().push_front(std::move(item)); }

  const_iterator begin() const { return items_ ? items_->cbegin() : Empty().cbegin(); }
  const_iterator end() const { return items_ ? items_->cend() : Empty().cend(); }

 private:
  std::deque<T>& Items() {
    if (!items_) items_ = std::make_unique<std::deque<T>>();
    return *items_;
  }
  static const std::deque<T>& Empty() {
    static const std::deque<T> empty;
    return empty;
  }

  std::unique_ptr<std::deque<T>> items_;
};

}  // namespace reef::actor::detail
