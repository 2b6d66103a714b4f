// KeyedTurns: callers naming the same key take turns; callers with other keys never wait on
// each other. Used so that executions sharing an idempotency key run one at a time (the
// second finds the first's record). Entries exist only while some caller holds or awaits them.
//
// Thread ownership: any thread.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "core/mutex.h"

namespace reef::apps::detail {

class KeyedTurns {
  struct Entry {
    Mutex mu;          // held for the whole of a turn (no data of its own)
    size_t users = 0;  // holders and waiters; guarded by KeyedTurns::mu_ (not expressible
                       // as GUARDED_BY: the analysis cannot name the owner's lock from here)
  };

 public:
  // Held while its owner's turn lasts; destroying it lets the next caller of the same key go.
  class Turn {
   public:
    Turn(KeyedTurns& owner, std::string key) : owner_(owner), key_(std::move(key)) {
      entry_ = owner_.Join(key_);
      entry_->mu.lock();
    }
    ~Turn() {
      entry_->mu.unlock();
      owner_.Leave(key_);
    }
    Turn(const Turn&) = delete;
    Turn& operator=(const Turn&) = delete;

   private:
    KeyedTurns& owner_;
    std::string key_;
    std::shared_ptr<Entry> entry_;
  };

  // Waits (no timeout: a turn lasts one execution, which has its own budget) until `key` is
  // free, then holds it.
  std::unique_ptr<Turn> Take(std::string key) {
    return std::make_unique<Turn>(*this, std::move(key));
  }

 private:
  std::shared_ptr<Entry> Join(const std::string& key) {
    MutexLock lock(mu_);
    auto& entry = entries_[key];
    if (!entry) entry = std::make_shared<Entry>();
    ++entry->users;
    return entry;
  }
  void Leave(const std::string& key) {
    MutexLock lock(mu_);
    auto it = entries_.find(key);
    if (it != entries_.end() && --it->second->users == 0) entries_.erase(it);
  }

  Mutex mu_;
  std::map<std::string, std::shared_ptr<Entry>> entries_ GUARDED_BY(mu_);
};

}  // namespace reef::apps::detail
