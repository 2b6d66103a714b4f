// SerialQueue: work that must run one item at a time and in order (the statements of one
// SQLite connection), on the threads of a shared IoPool, so that many such queues (every
// projector, every effect worker) share a few threads instead of holding one each.
//
// Bounded like the pool: at most `max_waiting` items wait in the queue; past that, or when
// the pool refuses, TrySubmit refuses. A queue that has work takes one pool thread and runs
// its items back to back, giving the thread back after kBatch items when more wait, so one
// busy queue (a projector catching up) cannot hold a pool thread away from the others.
//
// Thread ownership: TrySubmit from any thread. The destructor waits for the item running now
// (unless it runs inside that item); items still waiting are destroyed unrun, on the
// destroying thread, so whatever they captured must answer its waiter when destroyed.
// REQUIRES: the pool outlives the queue.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>

#include "core/io_pool.h"
#include "core/mutex.h"

namespace reef {

class SerialQueue {
 public:
  // Items one pool task runs before it gives its thread back (when more items wait).
  static constexpr uint32_t kBatch = 16;

  SerialQueue(IoPool& pool, uint32_t max_waiting);
  ~SerialQueue();
  SerialQueue(const SerialQueue&) = delete;
  SerialQueue& operator=(const SerialQueue&) = delete;

  // Queues `work` behind the items before it; false (nothing queued) when `max_waiting` items
  // wait already, the queue is closing, or the pool refused to run it.
  bool TrySubmit(std::function<void()> work);

 private:
  // What the pool's tasks share with the queue: it outlives the queue while a task runs.
  struct Shared {
    Mutex mu;
    CondVar idle;  // signalled when `running` goes false
    std::deque<std::function<void()>> waiting GUARDED_BY(mu);
    bool running GUARDED_BY(mu) = false;  // a pool task owns the queue
    bool closed GUARDED_BY(mu) = false;
  };
  // A pool task: runs up to kBatch items, then submits itself again if more wait (or goes on
  // here when the pool is full).
  static void Drain(IoPool& pool, const std::shared_ptr<Shared>& shared);

  IoPool& pool_;
  const uint32_t max_waiting_;
  std::shared_ptr<Shared> shared_;
};

}  // namespace reef
