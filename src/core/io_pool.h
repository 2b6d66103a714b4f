// GuestWorkPool: threads of its own for the HTTP routes whose work runs guest code and waits
// on stores (command executions, projector queries), so a slow guest never holds one of the
// server's handler threads: /health, /metrics and the control routes keep answering however
// many executions are in progress. The work is bounded twice: `threads` run at once and at
// most `max_waiting` more wait; past that a route answers 503 at once.
//
// This is a step of issue 15: the end state runs these executions as tasks on the reactor
// fleet, with store I/O on I/O threads.
//
// Thread ownership: TrySubmit from any thread. The destructor (any thread but a pool thread)
// waits for the work that is running; work still waiting is destroyed unrun, so whatever it
// captured (an HttpResponder) answers as it does when dropped.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "core/mutex.h"

namespace reef::apps::http {

class GuestWorkPool {
 public:
  // `name` names the threads in errors ("commands"). REQUIRES: threads >= 1.
  GuestWorkPool(std::string name, uint32_t threads, uint32_t max_waiting);
  ~GuestWorkPool();
  GuestWorkPool(const GuestWorkPool&) = delete;
  GuestWorkPool& operator=(const GuestWorkPool&) = delete;

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
  std::vector<std::thread> threads_;
};

}  // namespace reef::apps::http
