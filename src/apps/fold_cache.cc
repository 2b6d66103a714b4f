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
  MutexLock lock(mu_);
  auto it = by_key_.find(key);
  if (it == by_key_.end()) {
    ++misses_;
    return std::nullopt;
  }
  ++hits_;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->entry;
}

uint64_t FoldCache::ValueBytes(const Value& value) {
  uint64_t bytes = sizeof(Value);
  if (value.is_string()) {
    bytes += value.as_string().capacity();
  } else if (value.is_list()) {
    for (const Value& item : value.as_list()) bytes += ValueBytes(item);
  } else if (value.is_record()) {
    // A std::map node: its links and colour, the key string and the value.
    constexpr uint64_t kNodeBytes = 32 + sizeof(std::string);
    for (const auto& [name, field] : value.as_record()) {
      bytes += kNodeBytes + name.capacity() + ValueBytes(field);
    }
  }
  return bytes;
}

void FoldCache::Put(const Key& key, std::string_view command, Value state,
                    events::Position folded_to, uint64_t epoch) {
  if (max_bytes_ == 0) return;
  const uint64_t bytes = kEntryOverheadBytes + command.size() + ValueBytes(state);
  MutexLock lock(mu_);
  if (epoch != epoch_) return;  // cleared since the fold began
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
  MutexLock lock(mu_);
  for (auto it = lru_.begin(); it != lru_.end();) {
    auto next = std::next(it);
    if (it->command == command) EraseLocked(it);
    it = next;
  }
}

uint64_t FoldCache::epoch() {
  MutexLock lock(mu_);
  return epoch_;
}

void FoldCache::Clear() {
  MutexLock lock(mu_);
  ++epoch_;
  lru_.clear();
  by_key_.clear();
  bytes_ = 0;
}

FoldCache::Stats FoldCache::stats() {
  MutexLock lock(mu_);
  return {hits_, misses_, by_key_.size(), bytes_};
}

void FoldCache::EraseLocked(Lru::iterator it) {
  bytes_ -= it->bytes;
  by_key_.erase(it->key);
  lru_.erase(it);
}

}  // namespace reef::apps::detail
