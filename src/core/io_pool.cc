#include "core/io_pool.h"

#include <utility>

#include "core/spin_wait.h"

namespace reef {

IoPool::IoPool(std::string name, uint32_t threads, uint32_t max_waiting)
    : name_(std::move(name)), max_waiting_(max_waiting) {
  threads_.reserve(threads);
  for (uint32_t i = 0; i < threads; ++i) threads_.emplace_back([this] { Run(); });
}

IoPool::~IoPool() {
  std::deque<std::function<void()>> dropped;
  {
    MutexLock lock(mu_);
    stopping_ = true;
    dropped.swap(waiting_);
  }
  ready_.NotifyAll();
  for (auto& thread : threads_) thread.join();
  // `dropped` goes here, on this thread, after the running work ended.
}

bool IoPool::TrySubmit(std::function<void()> work) {
  {
    MutexLock lock(mu_);
    if (stopping_ || waiting_.size() >= max_waiting_) return false;
    waiting_.push_back(std::move(work));
    queued_.store(waiting_.size(), std::memory_order_release);
  }
  ready_.NotifyOne();
  return true;
}

void IoPool::Run() {
  for (;;) {
    std::function<void()> work;
    SpinBriefly([this] { return queued_.load(std::memory_order_acquire) != 0; });
    {
      MutexLock lock(mu_);
      while (!stopping_ && waiting_.empty()) ready_.Wait(mu_);
      if (stopping_) return;
      work = std::move(waiting_.front());
      waiting_.pop_front();
      queued_.store(waiting_.size(), std::memory_order_release);
    }
    work();
  }
}

}  // namespace reef
