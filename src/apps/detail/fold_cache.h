// FoldCache: decision states of command executions, kept so that the next execution with the
// same query folds only the events appended since (issue 15, docs/abi.md "The fold cache").
//
// An entry says: folding every event that matches the query, up to position `folded_to`, from
// the initial state gave `state`. The key is a SHA-256 of everything that fold result depends
// on (ModuleRuntime::Impl::ExecuteOnce builds it: the module's bytes, the command's lifecycle
// generation, the query, the initial state and, unless the module declares that its fold
// ignores the input, the input). Bounded by bytes, least recently used out first.
//
// Thread ownership: any thread; one mutex inside.
#pragma once

#include <array>
#include <cstdint>
#include <list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/mutex.h"
#include "core/value.h"
#include "events/event.h"

namespace reef::apps::detail {

class FoldCache {
 public:
  using Key = std::array<uint8_t, 32>;
  struct Entry {
    Value state;
    events::Position folded_to = 0;
  };
  struct Stats {
    uint64_t hits = 0, misses = 0, entries = 0, bytes = 0;
  };

  // `max_bytes` 0 disables the cache (Find always misses, Put keeps nothing).
  explicit FoldCache(uint64_t max_bytes) : max_bytes_(max_bytes) {}

  // The entry under `key`, or nullopt (counted as a hit or a miss).
  std::optional<Entry> Find(const Key& key);
  // Keeps `state` under `key` for `command`, charged its size in memory (ValueBytes) plus the
  // entry's own: replaces an entry folded to an earlier position, never a later one. Entries
  // go, least recently used first, until the cache fits in max_bytes; a state larger than
  // that is not kept. Nothing is kept when Clear ran since `epoch` was read: the fold may have
  // read what Clear was for.
  void Put(const Key& key, std::string_view command, Value state, events::Position folded_to,
           uint64_t epoch);
  // Drops every entry of `command` (a lifecycle change: their keys can no longer be built).
  void ForgetCommand(std::string_view command);
  // Drops every entry and advances the epoch (crypto-shredding changes what a fold sees, also
  // for folds running now: they read the epoch before reading events, and Put refuses them).
  void Clear();
  // Read before a fold reads its events; given back to Put.
  uint64_t epoch();
  Stats stats();

  // About how many bytes `value` takes in memory as a Value tree (nodes, strings, record
  // keys): what the bound counts.
  static uint64_t ValueBytes(const Value& value);

 private:
  struct KeyHash {
    size_t operator()(const Key& key) const;
  };
  struct Slot {
    Key key;
    std::string command;
    Entry entry;
    uint64_t bytes = 0;
  };
  using Lru = std::list<Slot>;  // most recently used first

  void EraseLocked(Lru::iterator it) REQUIRES(mu_);

  const uint64_t max_bytes_;
  Mutex mu_;
  Lru lru_ GUARDED_BY(mu_);
  std::unordered_map<Key, Lru::iterator, KeyHash> by_key_ GUARDED_BY(mu_);
  uint64_t bytes_ GUARDED_BY(mu_) = 0;
  uint64_t epoch_ GUARDED_BY(mu_) = 0;  // Clear calls so far
  uint64_t hits_ GUARDED_BY(mu_) = 0;
  uint64_t misses_ GUARDED_BY(mu_) = 0;
};

}  // namespace reef::apps::detail
