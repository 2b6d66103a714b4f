#include "core/serial_queue.h"

#include <utility>

namespace reef {

namespace {
// The queue whose work this thread is running now, if any.
thread_local const void* tls_draining = nullptr;
}  // namespace

SerialQueue::SerialQueue(IoPool& pool, uint32_t max_waiting)
    : pool_(pool), max_waiting_(max_waiting), shared_(std::make_shared<Shared>()) {}

SerialQueue::~SerialQueue() {
  std::deque<std::function<void()>> dropped;
  MutexLock lock(shared_->mu);
  shared_->closed = true;
  dropped.swap(shared_->waiting);
  // From inside one of its own items (the item held the last reference to the queue's owner)
  // there is nothing to wait for: the item ends, and Drain then sees the queue closed.
  if (tls_draining != shared_.get()) {
    while (shared_->running) shared_->idle.Wait(shared_->mu);
  }
  lock.Unlock();
  // `dropped` goes here, on this thread, after the running item ended.
}

bool SerialQueue::TrySubmit(std::function<void()> work) {
  MutexLock lock(shared_->mu);
  if (shared_->closed || shared_->waiting.size() >= max_waiting_) return false;
  shared_->waiting.push_back(std::move(work));
  if (shared_->running) return true;
  // Submitted under the lock (the pool never calls back into a queue while it holds its own),
  // so a refusal takes back exactly this item.
  if (!pool_.TrySubmit([&pool = pool_, shared = shared_] { Drain(pool, shared); })) {
    shared_->waiting.pop_back();
    return false;
  }
  shared_->running = true;
  return true;
}

void SerialQueue::Drain(IoPool& pool, const std::shared_ptr<Shared>& shared) {
  struct Marker {
    explicit Marker(const void* queue) { tls_draining = queue; }
    ~Marker() { tls_draining = nullptr; }
  } marker(shared.get());
  for (uint32_t ran = 0;; ++ran) {
    std::function<void()> work;
    {
      MutexLock lock(shared->mu);
      if (shared->closed || shared->waiting.empty()) {
        shared->running = false;
        shared->idle.NotifyAll();
        return;
      }
      if (ran == kBatch) {
        lock.Unlock();
        if (pool.TrySubmit([&pool, shared] { Drain(pool, shared); })) return;
        ran = 0;  // the pool is full: go on here
        continue;
      }
      work = std::move(shared->waiting.front());
      shared->waiting.pop_front();
    }
    work();
  }
}

}  // namespace reef
