#include "events/detail/event_index.h"

#include <algorithm>

namespace reef::events::detail {

uint32_t EventIndex::Intern(Names& names, std::vector<Postings>& postings, std::string_view name) {
  auto it = names.find(name);
  if (it != names.end()) return it->second;
  auto number = static_cast<uint32_t>(postings.size());
  names.emplace(std::string(name), number);
  postings.emplace_back();
  return number;
}

void EventIndex::Add(Position position, Location location, std::string_view type,
                     const std::vector<std::string_view>& tags) {
  uint32_t type_number = Intern(type_numbers_, type_postings_, type);
  locations_.push_back(location);
  type_of_.push_back(type_number);
  type_postings_[type_number].push_back(position);
  for (std::string_view tag : tags) {
    tag_postings_[Intern(tag_numbers_, tag_postings_, tag)].push_back(position);
  }
}

void EventIndex::TruncateAfter(Position head) {
  if (head >= last()) return;
  auto trim = [head](Postings& list) {
    while (!list.empty() && list.back() > head) list.pop_back();
  };
  for (Position p = last(); p > head; --p) trim(type_postings_[type_of_[p - 1]]);
  // Tags are not kept per position; a failed write is rare, so trim every list.
  for (Postings& list : tag_postings_) trim(list);
  locations_.resize(head);
  type_of_.resize(head);
}

CompiledQuery EventIndex::Compile(const Query& query) const {
  CompiledQuery compiled;
  compiled.all = query.items.empty();
  for (const QueryItem& item : query.items) {
    CompiledQuery::Item out;
    out.any_type = item.types.empty();
    for (const std::string& type : item.types) {
      if (auto it = type_numbers_.find(type); it != type_numbers_.end()) {
        out.types.push_back(it->second);
      }
    }
    if (!out.any_type && out.types.empty()) continue;  // no stored event has any of its types
    std::sort(out.types.begin(), out.types.end());
    bool unknown_tag = false;
    for (const std::string& tag : item.tags) {
      auto it = tag_numbers_.find(tag);
      if (it == tag_numbers_.end()) {
        unknown_tag = true;
        break;
      }
      out.tags.push_back(it->second);
    }
    if (unknown_tag) continue;  // no stored event carries that tag
    std::sort(out.tags.begin(), out.tags.end());
    out.tags.erase(std::unique(out.tags.begin(), out.tags.end()), out.tags.end());
    compiled.items.push_back(std::move(out));
  }
  return compiled;
}

bool EventIndex::TypeMatches(const CompiledQuery::Item& item, Position position) const {
  return item.any_type ||
         std::binary_search(item.types.begin(), item.types.end(), type_of_[position - 1]);
}

bool EventIndex::HasTags(const CompiledQuery::Item& item, size_t except, Position position) const {
  for (size_t i = 0; i < item.tags.size(); ++i) {
    if (i == except) continue;
    const Postings& list = tag_postings_[item.tags[i]];
    if (!std::binary_search(list.begin(), list.end(), position)) return false;
  }
  return true;
}

std::optional<Position> EventIndex::NextInItem(const CompiledQuery::Item& item, Position from,
                                               Position bound) const {
  if (item.tags.empty()) {
    // Types only: the smallest next position over the item's type lists.
    std::optional<Position> best;
    for (uint32_t type : item.types) {
      const Postings& list = type_postings_[type];
      auto it = std::lower_bound(list.begin(), list.end(), from);
      if (it != list.end() && *it <= bound && (!best || *it < *best)) best = *it;
    }
    return best;
  }
  // Walk the shortest tag list; check the other tags and the type of each candidate.
  size_t driver = 0;
  for (size_t i = 1; i < item.tags.size(); ++i) {
    if (tag_postings_[item.tags[i]].size() < tag_postings_[item.tags[driver]].size()) driver = i;
  }
  const Postings& list = tag_postings_[item.tags[driver]];
  for (auto it = std::lower_bound(list.begin(), list.end(), from); it != list.end() && *it <= bound;
       ++it) {
    if (TypeMatches(item, *it) && HasTags(item, driver, *it)) return *it;
  }
  return std::nullopt;
}

std::optional<Position> EventIndex::PrevInItem(const CompiledQuery::Item& item, Position from,
                                               Position floor) const {
  if (item.tags.empty()) {
    std::optional<Position> best;
    for (uint32_t type : item.types) {
      const Postings& list = type_postings_[type];
      auto it = std::upper_bound(list.begin(), list.end(), from);
      if (it == list.begin() || *std::prev(it) < floor) continue;
      if (!best || *std::prev(it) > *best) best = *std::prev(it);
    }
    return best;
  }
  size_t driver = 0;
  for (size_t i = 1; i < item.tags.size(); ++i) {
    if (tag_postings_[item.tags[i]].size() < tag_postings_[item.tags[driver]].size()) driver = i;
  }
  const Postings& list = tag_postings_[item.tags[driver]];
  for (auto it = std::upper_bound(list.begin(), list.end(), from); it != list.begin();) {
    --it;
    if (*it < floor) break;
    if (TypeMatches(item, *it) && HasTags(item, driver, *it)) return *it;
  }
  return std::nullopt;
}

std::optional<Position> EventIndex::Next(const CompiledQuery& query, Position from,
                                         Position bound) const {
  from = std::max<Position>(from, 1);
  bound = std::min(bound, last());
  if (from > bound) return std::nullopt;
  if (query.all) return from;
  std::optional<Position> best;
  for (const CompiledQuery::Item& item : query.items) {
    // Once a match is known, later items only need to look below it.
    auto found = NextInItem(item, from, best ? *best - 1 : bound);
    if (found) best = found;
  }
  return best;
}

std::optional<Position> EventIndex::Prev(const CompiledQuery& query, Position from,
                                         Position floor) const {
  from = std::min(from, last());
  floor = std::max<Position>(floor, 1);
  if (from < floor) return std::nullopt;
  if (query.all) return from;
  std::optional<Position> best;
  for (const CompiledQuery::Item& item : query.items) {
    auto found = PrevInItem(item, from, best ? std::max(floor, *best + 1) : floor);
    if (found && (!best || *found > *best)) best = found;
  }
  return best;
}

}  // namespace reef::events::detail
