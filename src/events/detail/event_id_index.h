// EventIdIndex: the embedded store's index of event ids, so that an id is stored at most once
// (docs/http-api.md "Event ids are unique"). An open-addressing hash table of 8-byte slots,
// each holding a position (low 40 bits) and a 24-bit fingerprint of the id's hash; the ids
// themselves stay in the log. A lookup yields the positions whose fingerprint matches, and the
// caller compares the stored id, so the table costs 8 bytes per slot at a load of at most 3/4
// (10.7 to 21.3 bytes per event) and never a copy of an id.
//
// Thread ownership: caller synchronizes (the store's writer mutates it under the index lock's
// exclusive hold; lookups from other threads hold it shared).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "events/event.h"

namespace reef::events::detail {

class EventIdIndex {
 public:
  // The id stored at `position` (REQUIRES: a position added before); used to place entries
  // again when the table grows.
  using IdAt = std::function<EventId(Position)>;

  // An empty table whose hash is keyed with fresh random keys (std::random_device).
  EventIdIndex();

  // Records that `id` is stored at `position` (REQUIRES: 1 <= position < 2^40, no entry for
  // `id` yet, and room: NeedsGrowth(1) is false).
  void Add(const EventId& id, Position position);

  // True when adding `more` entries would load the table past 3/4.
  bool NeedsGrowth(size_t more) const;
  // A table with room for `more` entries besides the present ones, built from this one without
  // changing it (so lookups may go on meanwhile); `id_at` is called once per entry. Install it
  // with Adopt.
  std::vector<uint64_t> Grown(size_t more, const IdAt& id_at) const;
  void Adopt(std::vector<uint64_t> slots) { slots_ = std::move(slots); }

  // Calls `visit(position)` for every entry whose fingerprint matches `id`'s, in probe order,
  // until it returns true. Every entry for `id` is among them; the caller checks the stored id.
  void ForEachCandidate(const EventId& id, const std::function<bool(Position)>& visit) const;

  // Forgets every entry at a position after `head` (a failed write's staged events).
  void TruncateAfter(Position head, const IdAt& id_at);

  size_t size() const { return size_; }
  // Bytes the table takes (its slots).
  size_t bytes() const { return slots_.size() * sizeof(uint64_t); }

 private:
  uint64_t Hash(const EventId& id) const;
  static void Place(std::vector<uint64_t>& slots, uint64_t hash, Position position);
  std::vector<uint64_t> Rebuilt(size_t capacity, const IdAt& id_at) const;

  std::vector<uint64_t> slots_;  // 0 = empty; else fingerprint << 40 | position
  size_t size_ = 0;
  uint64_t key0_ = 0, key1_ = 0;  // the hash's keys, fixed for the table's life
};

}  // namespace reef::events::detail
