#include "events/detail/event_id_index.h"

#include <algorithm>
#include <cstring>
#include <random>

namespace reef::events::detail {
namespace {

constexpr int kPositionBits = 40;
constexpr uint64_t kPositionMask = (uint64_t{1} << kPositionBits) - 1;
constexpr size_t kInitialSlots = 1024;

}  // namespace

namespace {

uint64_t Mix(uint64_t h) {  // the finalizer of MurmurHash3 (a bijection with full avalanche)
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}

}  // namespace

EventIdIndex::EventIdIndex() {
  std::random_device random;
  key0_ = uint64_t{random()} << 32 | random();
  key1_ = uint64_t{random()} << 32 | random();
}

// Ids may be chosen by clients, so an unkeyed hash would let one pick any number of ids with
// one slot and one fingerprint (each append and every open then scans them all: quadratic).
// Both halves are mixed under this process's random keys, so ids cannot be picked to collide
// without knowing them. Not a MAC; the keys only have to stay unknown to clients.
uint64_t EventIdIndex::Hash(const EventId& id) const {
  uint64_t a = 0, b = 0;
  std::memcpy(&a, id.data(), 8);
  std::memcpy(&b, id.data() + 8, 8);
  return Mix(Mix(a ^ key0_) ^ b ^ key1_);
}

// Slot index from the low bits, fingerprint from the top 24 bits; never 0 as a whole slot
// because positions start at 1.
void EventIdIndex::Place(std::vector<uint64_t>& slots, uint64_t hash, Position position) {
  const size_t mask = slots.size() - 1;
  uint64_t entry = (hash >> kPositionBits) << kPositionBits | position;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    if (slots[i] == 0) {
      slots[i] = entry;
      return;
    }
  }
}

std::vector<uint64_t> EventIdIndex::Rebuilt(size_t capacity, const IdAt& id_at) const {
  std::vector<uint64_t> out(capacity, 0);
  for (uint64_t entry : slots_) {
    if (entry == 0) continue;
    Position position = entry & kPositionMask;
    Place(out, Hash(id_at(position)), position);
  }
  return out;
}

bool EventIdIndex::NeedsGrowth(size_t more) const {
  return (size_ + more) * 4 > slots_.size() * 3;
}

std::vector<uint64_t> EventIdIndex::Grown(size_t more, const IdAt& id_at) const {
  size_t capacity = std::max(slots_.size(), kInitialSlots);
  while ((size_ + more) * 4 > capacity * 3) capacity *= 2;
  return Rebuilt(capacity, id_at);
}

void EventIdIndex::Add(const EventId& id, Position position) {
  Place(slots_, Hash(id), position);
  ++size_;
}

void EventIdIndex::ForEachCandidate(const EventId& id,
                                    const std::function<bool(Position)>& visit) const {
  if (slots_.empty()) return;
  const size_t mask = slots_.size() - 1;
  const uint64_t hash = Hash(id);
  const uint64_t fingerprint = hash >> kPositionBits;
  for (size_t i = hash & mask; slots_[i] != 0; i = (i + 1) & mask) {
    if (slots_[i] >> kPositionBits == fingerprint && visit(slots_[i] & kPositionMask)) return;
  }
}

void EventIdIndex::TruncateAfter(Position head, const IdAt& id_at) {
  size_t kept = 0;
  for (uint64_t& entry : slots_) {
    if (entry == 0) continue;
    if ((entry & kPositionMask) > head) {
      entry = 0;
    } else {
      ++kept;
    }
  }
  size_ = kept;
  // Emptied slots may break probe runs: place every remaining entry again.
  if (!slots_.empty()) slots_ = Rebuilt(slots_.size(), id_at);
}

}  // namespace reef::events::detail
