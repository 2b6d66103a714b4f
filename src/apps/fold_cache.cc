#include "apps/detail/fold_cache.h"

#include <cstring>
#include <utility>

namespace reef::apps::detail {

// Each entry also costs its key, list node and map slot.
constexpr uint64_t kEntryOverheadBytes = 160;

size_t FoldCache::KeyHash::operator()(const Key& key) const {
  size_t h;
  std::memcpy(&h, key.data(), sizeof h);  // the key is a SHA-256: any 8 bytes are uniform
  return h;
}

std::optional<FoldCache::Entry> FoldCache::Find(const Key& key) {
  std::lock_guard lock(mu_);
  auto it = by_key_.find(key);
  if (it == by_key_.end()) {
    ++misses_;
    return std::nullopt;
  }
  ++hits_;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->entry;
}

void FoldCache::Put(const Key& key, std::string_view command, Value state,
                    events::Position folded_to, uint64_t bytes) {
  bytes += kEntryOverheadBytes;
  std::lock_guard lock(mu_);
  if (auto it = by_key_.find(key); it != by_key_.end()) {
    if (it->second->entry.folded_to >= folded_to) return;  // a newer fold is kept already
    EraseLocked(it->second);
  }
  if (bytes > max_bytes_) return;
  while (bytes_ + bytes > max_bytes_ && !lru_.empty()) EraseLocked(std::prev(lru_.end()));
  lru_.push_front(Slot{key, std::string(command), Entry{std::move(state), folded_to}, bytes});
  by_key_.emplace(key, lru_.begin());
  bytes_ += bytes;
}

void FoldCache::ForgetCommand(std::string_view command) {
  std::lock_guard lock(mu_);
  for (auto it = lru_.begin(); it != lru_.end();) {
    auto next = std::next(it);
    if (it->command == command) EraseLocked(it);
    it = next;
  }
}

void FoldCache::Clear() {
  std::lock_guard lock(mu_);
  lru_.clear();
  by_key_.clear();
  bytes_ = 0;
}

FoldCache::Stats FoldCache::stats() {
  std::lock_guard lock(mu_);
  return {hits_, misses_, by_key_.size(), bytes_};
}

void FoldCache::EraseLocked(Lru::iterator it) {
  bytes_ -= it->bytes;
  by_key_.erase(it->key);
  lru_.erase(it);
}

}  // namespace reef::apps::detail
