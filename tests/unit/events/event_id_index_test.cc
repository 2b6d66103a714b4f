// The event id index under ids a client picked: ids that all collide under an unkeyed hash
// must not pile up in one probe run (review of issue 13: 46k such ids made opening the store
// take 31.5 s instead of 0.19 s).
#include "events/detail/event_id_index.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace reef::events::detail {
namespace {

// Ids whose halves satisfy a ^ b * K == X for one X: every one of them had the same hash (so
// the same slot and fingerprint) under the index's former unkeyed hash, fmix64(a ^ b * K).
std::vector<EventId> IdsCollidingUnderTheUnkeyedHash(size_t count) {
  constexpr uint64_t kK = 0x9e3779b97f4a7c15ULL, kX = 0x123456789abcdef0ULL;
  std::vector<EventId> ids(count);
  for (uint64_t b = 1; b <= count; ++b) {
    uint64_t a = kX ^ (b * kK);
    std::memcpy(ids[b - 1].data(), &a, 8);
    std::memcpy(ids[b - 1].data() + 8, &b, 8);
  }
  return ids;
}

TEST(EventIdIndexTest, IdsPickedToCollideUnderAnUnkeyedHashDoNotShareAProbeRun) {
  const auto ids = IdsCollidingUnderTheUnkeyedHash(20'001);
  EventIdIndex index;
  auto id_at = [&ids](Position position) { return ids[position - 1]; };
  for (Position position = 1; position <= 20'000; ++position) {
    if (index.NeedsGrowth(1)) index.Adopt(index.Grown(1, id_at));
    index.Add(ids[position - 1], position);
  }
  // Every stored id is found, each among few candidates.
  size_t most_candidates = 0;
  for (Position position = 1; position <= 20'000; position += 97) {
    size_t candidates = 0;
    bool found = false;
    index.ForEachCandidate(ids[position - 1], [&](Position p) {
      ++candidates;
      found = p == position;
      return found;
    });
    EXPECT_TRUE(found) << position;
    most_candidates = std::max(most_candidates, candidates);
  }
  EXPECT_LE(most_candidates, 2u);
  // An id not stored meets a fingerprint match rarely, not once per stored id.
  size_t candidates = 0;
  index.ForEachCandidate(ids[20'000], [&](Position) { return ++candidates, false; });
  EXPECT_LE(candidates, 2u);
}

}  // namespace
}  // namespace reef::events::detail
