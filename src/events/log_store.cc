// The embedded event store behind OpenEventStore (event_store.h): a segment log on disk plus
// the in-memory EventIndex. The store itself is LogCore (detail/log_core.h), one topic a file:
// log_segments.cc (segment files and recovery), log_writer.cc (appends and group commit),
// log_reads.cc (reads) and log_subscription.cc (subscriptions). This file holds the EventStore
// handle, OpenEventStore and its option checks, closing, and the counters.
//
// Thread ownership: the handle's methods may be called from any thread (event_store.h).
#include <fmt/format.h>

#include "events/detail/log_core.h"

namespace reef::events {

namespace detail {

EventStoreStats LogCore::Stats() const {
  EventStoreStats stats;
  stats.appends = appends_.load();
  stats.conflicts = conflicts_.load();
  stats.duplicate_ids = duplicates_.load();
  stats.duplicate_ids_recovered = duplicate_ids_recovered_;
  {
    ReaderLock lock(index_mu_);
    stats.id_index_bytes = ids_.bytes();
  }
  stats.syncs = syncs_.load();
  stats.events_written = events_written_.load();
  stats.torn_bytes_cut = torn_bytes_;
  return stats;
}

std::string LogCore::ClosedMessage() const {
  return failed_.load() ? fmt::format("the event store {} failed after a write error; reopen it",
                                      dir_.string())
                        : fmt::format("the event store {} is closed", dir_.string());
}

void LogCore::Close() {
  {
    MutexLock lock(queue_mu_);
    if (closing_) return;
    closing_ = true;
  }
  queue_cv_.NotifyAll();
  if (writer_.joinable()) writer_.join();
  closed_flag_.store(true);
  MutexLock lock(subs_mu_);
  WakeSubscribers();
  subs_.clear();
}

}  // namespace detail

namespace {

// ---- The handle -----------------------------------------------------------------------------

class LogEventStore final : public EventStore {
 public:
  explicit LogEventStore(std::shared_ptr<detail::LogCore> core) : core_(std::move(core)) {}
  ~LogEventStore() override { core_->Close(); }

  Result<Position> Append(std::vector<Event> events,
                          std::optional<AppendCondition> condition) override {
    return core_->Append(std::move(events), std::move(condition));
  }
  Result<ReadResult> Read(const Query& query, const ReadOptions& options) const override {
    ReadResult result;
    REEF_ASSIGN_OR_RETURN(result.head, core_->ReadEach(query, options, [&](const EventView& view) {
      result.events.push_back(view.ToEvent());
      return true;
    }));
    return result;
  }
  Result<Position> ReadEach(const Query& query, const ReadOptions& options,
                            const EventVisitor& visitor) const override {
    return core_->ReadEach(query, options, visitor);
  }
  Position Head() const override { return core_->Head(); }
  Result<std::optional<SequencedEvent>> ReadById(const EventId& id) const override {
    return core_->ReadById(id);
  }
  Result<std::unique_ptr<Subscription>> Subscribe(const Query& query, Position after) override {
    REEF_RETURN_IF_ERROR(ValidateQuery(query, core_->options().limits));
    if (core_->ended()) return Status::Unavailable(core_->ClosedMessage());
    return detail::NewLogSubscription(core_, query, after);
  }
  EventStoreStats Stats() const override { return core_->Stats(); }
  const EventLimits& limits() const override { return core_->options().limits; }

 private:
  std::shared_ptr<detail::LogCore> core_;
};

Status ValidateOptions(const EventStoreOptions& options) {
  const EventLimits& limits = options.limits;
  if (limits.max_type_bytes > UINT16_MAX || limits.max_tag_bytes > UINT16_MAX ||
      limits.max_metadata_bytes > UINT16_MAX || limits.max_tags_per_event > UINT16_MAX ||
      limits.max_user_metadata_bytes > UINT16_MAX) {
    return Status::InvalidArgument(
        "event limits: types, tags and metadata strings are stored with 16-bit lengths (at most "
        "65535 bytes, 65535 tags)");
  }
  if (limits.max_event_bytes > UINT32_MAX || limits.max_append_bytes > (uint64_t{1} << 31)) {
    return Status::InvalidArgument(
        "event limits: max_event_bytes and max_append_bytes must stay "
        "below 2 GiB");
  }
  if (limits.max_event_bytes == 0 || limits.max_append_bytes == 0) {
    return Status::InvalidArgument(
        "event limits: max_event_bytes and max_append_bytes must be > 0");
  }
  if (options.segment_bytes >= (uint64_t{1} << detail::kOffsetBits)) {
    return Status::InvalidArgument("segment_bytes must stay below 1 TiB");
  }
  if (options.subscription_buffer_events == 0 || options.max_batch_bytes == 0 ||
      options.read_window_positions == 0) {
    return Status::InvalidArgument(
        "subscription_buffer_events, max_batch_bytes and read_window_positions must be > 0");
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<EventStore>> OpenEventStore(const std::filesystem::path& dir,
                                                   const EventStoreOptions& options) {
  REEF_RETURN_IF_ERROR(ValidateOptions(options));
  auto core = std::make_shared<detail::LogCore>(dir, options);
  REEF_RETURN_IF_ERROR(core->Open());
  return std::unique_ptr<EventStore>(std::make_unique<LogEventStore>(std::move(core)));
}

}  // namespace reef::events
