#include "actor/lifecycle_events.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <utility>

#include "core/clock.h"

namespace reef::actor {
namespace {

struct KindRow {
  LifecycleKind kind;
  std::string_view name;
  std::string_view summary;
};

constexpr std::array<KindRow, kLifecycleKindCount> kKinds = {{
#define REEF_X(name, text, summary) {LifecycleKind::name, text, summary},
    REEF_LIFECYCLE_KINDS(REEF_X)
#undef REEF_X
}};

const KindRow& Row(LifecycleKind kind) {
  return kKinds[static_cast<std::size_t>(kind)];
}

template <typename T>
bool EmptyOrContains(const std::vector<T>& values, const T& value) {
  return values.empty() || std::find(values.begin(), values.end(), value) != values.end();
}

}  // namespace

std::string_view LifecycleKindName(LifecycleKind kind) {
  return Row(kind).name;
}

std::string_view LifecycleKindSummary(LifecycleKind kind) {
  return Row(kind).summary;
}

Result<LifecycleKind> ParseLifecycleKind(std::string_view name) {
  for (const KindRow& row : kKinds) {
    if (row.name == name) return row.kind;
  }
  std::string names;
  for (const KindRow& row : kKinds) {
    names += names.empty() ? "" : ", ";
    names += row.name;
  }
  return Status::InvalidArgument("unknown lifecycle event kind \"" + std::string(name) +
                                 "\"; expected one of: " + names);
}

bool LifecycleFilter::Matches(const LifecycleEvent& event) const {
  return EmptyOrContains(kinds, event.kind) && EmptyOrContains(actors, event.actor);
}

LifecycleEvents::LifecycleEvents(LifecycleEventsOptions options) : options_(options) {}

std::uint64_t LifecycleEvents::Publish(LifecycleKind kind, ActorRef actor,
                                       std::uint32_t incarnation, std::string detail) {
  const std::int64_t now = UnixNowMs();
  MutexLock lock(mu_);
  LifecycleEvent event{++last_seq_, kind, actor, incarnation, std::move(detail), now};
  subscribers_.Publish(event);
  recent_.push_back(std::move(event));
  while (recent_.size() > options_.retained) recent_.pop_front();
  return last_seq_;
}

Result<LifecyclePage> LifecycleEvents::Recent(std::uint64_t after_seq, std::size_t limit,
                                              const LifecycleFilter& filter) const {
  if (limit == 0 || limit > options_.max_page_events) {
    return Status::InvalidArgument("lifecycle events page limit is " + std::to_string(limit) +
                                   "; it must be 1.." + std::to_string(options_.max_page_events) +
                                   " events");
  }
  MutexLock lock(mu_);
  LifecyclePage page;
  page.next_after = after_seq;
  page.first_retained = recent_.empty() ? last_seq_ + 1 : recent_.front().seq;
  // Retained seqs are consecutive, so the first event after `after_seq` is found by index.
  std::size_t index = after_seq < page.first_retained
                          ? 0
                          : static_cast<std::size_t>(after_seq - page.first_retained + 1);
  for (; index < recent_.size() && page.events.size() < limit; ++index) {
    const LifecycleEvent& event = recent_[index];
    page.next_after = event.seq;
    if (filter.Matches(event)) page.events.push_back(event);
  }
  page.more = index < recent_.size();
  return page;
}

std::shared_ptr<Subscription<LifecycleEvent>> LifecycleEvents::Subscribe(
    const LifecycleFilter& filter) {
  return subscribers_.Subscribe(
      [filter](const LifecycleEvent& event) { return filter.Matches(event); },
      options_.subscriber_buffer);
}

std::uint64_t LifecycleEvents::last_seq() const {
  MutexLock lock(mu_);
  return last_seq_;
}

}  // namespace reef::actor
