// SubscriptionState: what one subscription of the embedded store shares with the writer.
// While `live`, the writer appends the positions of matching events to `buffer`; when the
// buffer is full it calls FallBack and the subscriber catches up from `cursor` by reading.
//
// Thread ownership: every field is protected by `mu` (the writer takes it under the store's
// subscription lock; the subscriber takes it alone).
#pragma once

#include <cstdint>
#include <deque>

#include "core/mutex.h"
#include "events/event.h"

namespace reef::events::detail {

struct SubscriptionState {
  // Constant after construction.
  Query query;
  Position floor = 0;  // the `after` it was created with: never deliver at or below it

  // Protected by mu.
  mutable Mutex mu;
  CondVar cv;
  Position cursor GUARDED_BY(mu) = 0;  // the last position taken from the buffer or read
  bool live GUARDED_BY(mu) = false;    // following appends through `buffer`
  std::deque<Position> buffer
      GUARDED_BY(mu);                     // positions of matching durable events after `cursor`
  uint64_t fallbacks GUARDED_BY(mu) = 0;  // times the buffer overflowed

  // Drops the buffer and returns to catching up from `cursor`.
  void FallBack() REQUIRES(mu) {
    live = false;
    buffer.clear();
    ++fallbacks;
  }
};

}  // namespace reef::events::detail
