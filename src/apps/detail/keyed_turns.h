// KeyedTurns: callers naming the same key take turns; callers with other keys never wait on
// each other. Nobody blocks: Take hands over a continuation that runs when the key is free,
// so a turn can last across hops between reactors and I/O threads. Command executions use it
// twice: executions sharing an idempotency key run one at a time (the second finds the first's
// record), and executions with the same query take turns from read to append (they never
// conflict with each other). Entries exist only while some caller holds or awaits them.
//
// Thread ownership: any thread. A queued `go` runs on the thread of the Release that hands it
// the key, without the lock held; it must not block.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <string>
#include <utility>

#include "core/mutex.h"

namespace reef::apps::detail {

class KeyedTurns {
 public:
  // True when `key` is free: the caller holds it now, and `go` is dropped unrun. Otherwise
  // false, and `go` runs once every earlier taker of `key` has released it, in order (the
  // key is then held for it). The holder must call Release(key) exactly once.
  bool Take(const std::string& key, std::function<void()> go) EXCLUDES(mu_) {
    MutexLock lock(mu_);
    auto [it, free] = waiting_.try_emplace(key);
    if (!free) it->second.push_back(std::move(go));
    return free;
  }

  // Ends the holder's turn: the next taker of `key`, if any, goes.
  void Release(const std::string& key) EXCLUDES(mu_) {
    std::function<void()> next;
    {
      MutexLock lock(mu_);
      auto it = waiting_.find(key);
      if (it == waiting_.end()) return;
      if (it->second.empty()) {
        waiting_.erase(it);
        return;
      }
      next = std::move(it->second.front());
      it->second.pop_front();
    }
    next();
  }

  // Keys held now (diagnostics and tests).
  size_t held() const EXCLUDES(mu_) {
    MutexLock lock(mu_);
    return waiting_.size();
  }

 private:
  mutable Mutex mu_;
  // A key is held while it has an entry; the entry queues its waiting takers.
  std::map<std::string, std::deque<std::function<void()>>> waiting_ GUARDED_BY(mu_);
};

}  // namespace reef::apps::detail
