// IoPool: threads for work that waits (event-store reads and appends, SQLite), so it never
// runs on a reactor or an HTTP handler thread. Work is bounded twice: `threads` run at once and
// at most `max_waiting` more wait; past that TrySubmit refuses, and the caller answers
// "unavailable" (HTTP 503) at once. Guest code never runs here: the work hands its result back
// to a reactor (actor::Runtime::Post) or to a waiter.
//
// Thread ownership: TrySubmit from any thread. The destructor (any thread but a pool thread)
// waits for the work that is running; work still waiting is destroyed unrun, so whatever it
// captured must answer its waiter when destroyed.
#pragma once

#include <fmt/format.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "core/mutex.h"
#include "core/status.h"

namespace reef {

class IoPool {
 public:
  // `name` names the pool in errors ("command I/O"). REQUIRES: threads >= 1.
  IoPool(std::string name, uint32_t threads, uint32_t max_waiting);
  ~IoPool();
  IoPool(const IoPool&) = delete;
  IoPool& operator=(const IoPool&) = delete;

  // Queues `work` to run on a pool thread; false (nothing queued) when `max_waiting` items
  // already wait or the pool is stopping.
  bool TrySubmit(std::function<void()> work);

  const std::string& name() const { return name_; }
  uint32_t max_waiting() const { return max_waiting_; }

 private:
  void Run();

  const std::string name_;
  const uint32_t max_waiting_;
  Mutex mu_;
  CondVar ready_;
  std::deque<std::function<void()>> waiting_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  // waiting_.size(), readable without the lock (SpinBriefly).
  std::atomic<size_t> queued_{0};
  std::vector<std::thread> threads_;
};

// Runs `work` on `pool` and hands its result to `done` on that pool thread; an exception
// from `work` becomes Internal("<what> failed: ..."). When the pool refuses the item (full or
// stopping), `done` runs at once, on this thread, with Unavailable(`refusal`). Either way
// `done` runs exactly once, unless the pool is destroyed with the item still waiting (then
// neither runs: both are destroyed).
template <typename T>
void SubmitForResult(IoPool& pool, std::string_view what, std::function<Result<T>()> work,
                     std::function<void(Result<T>)> done, std::string refusal) {
  auto owned =
      std::make_shared<std::pair<std::function<Result<T>()>, std::function<void(Result<T>)>>>(
          std::move(work), std::move(done));
  bool queued = pool.TrySubmit([owned, what = std::string(what)] {
    Result<T> result = [&]() -> Result<T> {
      try {
        return owned->first();
      } catch (const std::exception& e) {
        return Status::Internal(fmt::format("{} failed: {}", what, e.what()));
      }
    }();
    owned->second(std::move(result));
  });
  if (!queued) owned->second(Status::Unavailable(std::move(refusal)));
}

}  // namespace reef
