// The PostgreSQL event store's handle, Open, Close and its figures (pg_core.h); appends are in
// pg_append.cc.
#include <fmt/format.h>

#include "events/pg/pg_core.h"

namespace reef::events::pg_store {

// ---- PgCore ---------------------------------------------------------------------------------

PgCore::PgCore(std::string conninfo, PostgresEventStoreOptions options)
    : conninfo_(std::move(conninfo)), options_(std::move(options)) {
  pg::ConnectOptions connect{conninfo_};
  pool_ = std::make_unique<pg::Pool>(connect, options_.pool_size, options_.acquire_timeout);
  tracker_ = std::make_unique<HeadTracker>(connect, options_.poll_interval);
}

PgCore::~PgCore() {
  Close();
}

Status PgCore::Open() {
  if (options_.pool_size == 0 || options_.read_page_events == 0 || options_.group_appends == 0 ||
      options_.group_transactions == 0) {
    return Status::InvalidArgument(
        "pool_size, read_page_events, group_appends and group_transactions must be at least 1");
  }
  if (options_.group_lock_timeout < std::chrono::milliseconds(1)) {
    return Status::InvalidArgument("group_lock_timeout must be at least 1 ms");
  }
  {
    REEF_ASSIGN_OR_RETURN(pg::Pool::Lease conn, pool_->Acquire());
    REEF_RETURN_IF_ERROR(MigrateEventSchema(*conn));
  }
  return tracker_->Start();
}

void PgCore::Close() {
  if (closed_.exchange(true)) return;
  tracker_->Stop();
}

std::string PgCore::ClosedMessage() const {
  return "the event store is closed";
}

Position PgCore::Head() const {
  // At most a second (metrics ask for it on every scrape): then the last head published.
  auto head = tracker_->FreshHead(std::min<std::chrono::milliseconds>(
      options_.read_barrier_timeout, std::chrono::milliseconds(1'000)));
  return head.ok() ? *head : tracker_->published();
}

EventStoreStats PgCore::Stats() const {
  EventStoreStats s;
  s.appends = counters_.appends.load();
  s.conflicts = counters_.conflicts.load();
  s.duplicate_ids = counters_.duplicate_ids.load();
  s.events_written = counters_.events_written.load();
  s.backend = "postgresql";
  s.connections = pool_->open_connections() + (tracker_->connected() ? 1 : 0);
  s.connect_failures = pool_->connect_failures();
  s.barrier_rounds = tracker_->rounds();
  s.barrier_waits = tracker_->waits();
  return s;
}

// ---- The EventStore handle --------------------------------------------------------------------

namespace {

class PgEventStore final : public EventStore {
 public:
  explicit PgEventStore(std::shared_ptr<PgCore> core) : core_(std::move(core)) {}
  ~PgEventStore() override { core_->Close(); }

  Result<Position> Append(std::vector<Event> events,
                          std::optional<AppendCondition> condition) override {
    return core_->Append(std::move(events), std::move(condition));
  }
  Result<ReadResult> Read(const Query& query, const ReadOptions& options) const override {
    ReadResult out;
    REEF_ASSIGN_OR_RETURN(out.head, core_->ReadEach(query, options, [&](const EventView& view) {
      out.events.push_back(view.ToEvent());
      return true;
    }));
    return out;
  }
  Result<Position> ReadEach(const Query& query, const ReadOptions& options,
                            const EventVisitor& visitor) const override {
    return core_->ReadEach(query, options, visitor);
  }
  Result<std::optional<SequencedEvent>> ReadById(const EventId& id) const override {
    return core_->ReadById(id);
  }
  Position Head() const override { return core_->Head(); }
  Result<std::unique_ptr<Subscription>> Subscribe(const Query& query, Position after) override {
    REEF_RETURN_IF_ERROR(ValidateQuery(query, core_->options().limits));
    if (core_->closed()) return Status::Unavailable(core_->ClosedMessage());
    return NewPgSubscription(core_, query, after);
  }
  EventStoreStats Stats() const override { return core_->Stats(); }
  const EventLimits& limits() const override { return core_->options().limits; }

 private:
  std::shared_ptr<PgCore> core_;
};

}  // namespace

}  // namespace reef::events::pg_store

namespace reef::events {

Result<std::unique_ptr<EventStore>> OpenPostgresEventStore(
    const std::string& conninfo, const PostgresEventStoreOptions& options) {
  auto core = std::make_shared<pg_store::PgCore>(conninfo, options);
  REEF_RETURN_IF_ERROR(core->Open());
  return std::unique_ptr<EventStore>(new pg_store::PgEventStore(std::move(core)));
}

}  // namespace reef::events
