// EventIndex: the embedded store's in-memory index, rebuilt from the log on open. For every
// position it keeps where the event's record lies and its type; for every type and every tag,
// the ascending list of positions carrying it (posting lists). Queries and append conditions
// are answered from these lists — by intersecting a query item's tag lists and filtering by
// type — never by scanning events.
//
// Thread ownership: caller synchronizes (the store's writer mutates it under an exclusive
// lock; readers hold a shared lock).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "events/event.h"

namespace reef::events::detail {

// Where a record lies: segment number in the high 24 bits, byte offset in the low 40.
using Location = uint64_t;
inline constexpr int kOffsetBits = 40;
inline Location MakeLocation(uint32_t segment, uint64_t offset) {
  return (uint64_t{segment} << kOffsetBits) | offset;
}
inline uint32_t SegmentOf(Location location) {
  return static_cast<uint32_t>(location >> kOffsetBits);
}
inline uint64_t OffsetOf(Location location) {
  return location & ((uint64_t{1} << kOffsetBits) - 1);
}

// A query resolved against one index's posting lists: types and tags by number. Valid while
// the index only grows (numbers are never reused); build it under the same lock as its use.
struct CompiledQuery {
  struct Item {
    std::vector<uint32_t> types;  // type numbers (any type when `any_type`)
    std::vector<uint32_t> tags;   // tag numbers the event must all carry
    bool any_type = true;
  };
  bool all = false;         // the query had no items: every event matches
  std::vector<Item> items;  // items that can match something (others are dropped)
};

class EventIndex {
 public:
  // Records the event at `position` (REQUIRES: last() + 1).
  void Add(Position position, Location location, std::string_view type,
           const std::vector<std::string_view>& tags);
  // Forgets every position after `head` (a failed write's staged events).
  void TruncateAfter(Position head);

  Position last() const { return locations_.size(); }
  // REQUIRES: 1 <= position <= last().
  Location location(Position position) const { return locations_[position - 1]; }

  CompiledQuery Compile(const Query& query) const;
  // The smallest position in [from, bound] matching `query`, if any.
  std::optional<Position> Next(const CompiledQuery& query, Position from, Position bound) const;
  // The largest position in [floor, from] matching `query`, if any.
  std::optional<Position> Prev(const CompiledQuery& query, Position from, Position floor = 1) const;

 private:
  using Postings = std::vector<Position>;
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
  };
  using Names = std::unordered_map<std::string, uint32_t, Hash, std::equal_to<>>;

  static uint32_t Intern(Names& names, std::vector<Postings>& postings, std::string_view name);
  bool TypeMatches(const CompiledQuery::Item& item, Position position) const;
  bool HasTags(const CompiledQuery::Item& item, size_t except, Position position) const;
  std::optional<Position> NextInItem(const CompiledQuery::Item& item, Position from,
                                     Position bound) const;
  std::optional<Position> PrevInItem(const CompiledQuery::Item& item, Position from,
                                     Position floor) const;

  std::vector<Location> locations_;  // [position - 1]
  std::vector<uint32_t> type_of_;    // [position - 1] -> type number
  Names type_numbers_;
  Names tag_numbers_;
  std::vector<Postings> type_postings_;  // [type number]
  std::vector<Postings> tag_postings_;   // [tag number]
};

}  // namespace reef::events::detail
