// The projector runner: one subscription, one SQLite database (projectors/<name>.sqlite), and
// the guest on a reactor of the fleet (docs/runtime.md "One fleet"). Each event's handler runs
// inside a savepoint of a batch transaction that also stores the projector's position, so a
// read model sees every event exactly once, also across crashes (spec 000 "Projectors
// (sequential)").
//
// Two threads of control take turns, one step at a time, so the projector stays sequential:
// the projector's own SQLite thread (the subscription, the database, every SQL statement) and
// its reactor (reef_query and reef_project, in slices). The guest's sql_exec and sql_query
// suspend the invocation; the statement runs on the SQLite thread, which resumes it.
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sqlite3.h>

#include "apps/guest_driver.h"
#include "apps/module_abi.h"
#include "apps/runners.h"
#include "core/io_pool.h"

namespace reef::apps {

namespace {

class ProjectorRunner final : public Runner {
 public:
  explicit ProjectorRunner(RunnerSpec spec)
      : spec_(std::move(spec)),
        status_(spec_),
        label_(fmt::format("projectors/{}@{}", spec_.name, spec_.version)),
        sqlite_(fmt::format("{} SQLite", label_), 1, 4) {}
  ~ProjectorRunner() override { Stop(); }

  void Start() override {
    status_.SetState("starting");
    auto driver = std::make_shared<GuestDriver>();
    driver->fleet = spec_.fleet;
    driver->reactor = spec_.reactor;
    driver->on_io = [this](std::function<void()> step) {
      return sqlite_.TrySubmit(std::move(step));
    };
    driver->run_sql = [this](const SqlRequest& request) {
      return RunEventSql(driving_event_, request);
    };
    driver_ = std::move(driver);
    {
      MutexLock lock(mu_);
      running_ = true;
    }
    OnSqlite([this] { Open(); });
  }

  // Asks the steps to stop (at the next batch boundary, within kRunnerPollTimeout when idle) and
  // waits until the last one ended.
  void Stop() override {
    stop_ = true;
    MutexLock lock(mu_);
    while (running_) ended_.Wait(mu_);
  }

  ModuleStatus Snapshot() const override { return status_.Get(); }

 private:
  // ---- hops: every step runs on one of the two, never both at once ----
  void OnSqlite(std::function<void()> step) {
    if (!sqlite_.TrySubmit(std::move(step))) End(Status::Unavailable("the SQLite thread stopped"));
  }
  void OnReactor(std::function<void()> step) {
    Status posted = spec_.fleet->Post(spec_.reactor, std::move(step));
    if (!posted.ok()) OnSqlite([this, posted] { End(posted); });
  }

  // ---- the SQLite thread ----
  void Open() {
    auto db = OpenModuleDatabase(spec_.db_path);
    if (!db.ok()) return End(db.status());
    db_ = *db;
    auto position = LoadRunnerPosition(db_, "reef_projector", "position");
    if (!position.ok()) return End(position.status());
    position_ = *position;
    status_.SetPosition(position_);
    OnReactor([this] { AskQuery(); });
  }

  void Subscribe() {
    auto subscription = spec_.events->Subscribe(query_, position_);
    if (!subscription.ok()) return End(subscription.status());
    subscription_ = std::move(*subscription);
    spdlog::info("projector {}@{} started at position {}", spec_.name, spec_.version, position_);
    NextBatch();
  }

  // Waits (at most kRunnerPollTimeout) for events after the position, then opens the batch's
  // transaction and hands the events to the reactor.
  void NextBatch() {
    if (stop_) return End(Status::Ok());
    status_.SetState(subscription_->live() ? "running" : "catching_up");
    auto batch = subscription_->Next(spec_.options->projector_batch_events, kRunnerPollTimeout);
    if (!batch.ok()) return End(batch.status());
    if (batch->empty()) return OnSqlite([this] { NextBatch(); });
    auto values = std::make_shared<std::vector<Value>>();
    auto positions = std::make_shared<std::vector<uint64_t>>();
    for (const events::SequencedEvent& event : *batch) {
      auto value = EventToValue(events::EventView::Of(event), spec_.keys);
      if (!value.ok()) {
        return End(value.status().WithContext(fmt::format("event at position {}", event.position)));
      }
      values->push_back(std::move(*value));
      positions->push_back(event.position);
    }
    if (Status begun = ExecSql(db_, "BEGIN IMMEDIATE"); !begun.ok()) return End(begun);
    open_event_ = -1;
    OnReactor([this, values, positions] { Handle(values, positions, 0); });
  }

  // One guest SQL call of event `index`; the event's savepoint opens with its first statement.
  SqlOutcome RunEventSql(int64_t index, const SqlRequest& request) {
    if (open_event_ != index) {
      if (open_event_ >= 0) (void)ExecSql(db_, "RELEASE reef_event");
      (void)ExecSql(db_, "SAVEPOINT reef_event");
      open_event_ = index;
    }
    return RunSql(db_, request);
  }

  // Commits the first `handled` events of the batch with the position of the last of them;
  // `failure` (event `handled` failed) rolls that event back and ends the runner after the
  // commit, as spec 000 says.
  void EndBatch(std::shared_ptr<std::vector<uint64_t>> positions, size_t handled, Status failure) {
    if (open_event_ >= 0) {
      if (!failure.ok() && open_event_ == static_cast<int64_t>(handled)) {
        (void)ExecSql(db_, "ROLLBACK TO reef_event");
      }
      (void)ExecSql(db_, "RELEASE reef_event");
      open_event_ = -1;
    }
    uint64_t committed = handled == 0 ? position_ : (*positions)[handled - 1];
    if (committed != position_) {
      Status saved =
          SaveRunnerPosition(db_, "reef_projector", "position", committed, spec_.version);
      if (!saved.ok()) {
        (void)ExecSql(db_, "ROLLBACK");
        return End(saved);
      }
    }
    if (Status done = ExecSql(db_, "COMMIT"); !done.ok()) return End(done);
    position_ = committed;
    status_.SetPosition(position_);
    if (!failure.ok()) return End(failure);
    NextBatch();
  }

  // ---- the reactor ----
  Status EnsureInstance() {
    // Its native code became ready (TierChoice::kAuto): move to it between batches.
    if (instance_ && !instance_->Outdated()) return Status::Ok();
    REEF_ASSIGN_OR_RETURN(
        instance_, ModuleInstance::Create(store::ModuleKind::kProjector, spec_.module, label_));
    instance_->context().env = spec_.env;
    status_.SetTier(0, instance_->tier());
    return Status::Ok();
  }

  // Runs the call StartCall began to its end (DriveGuest); its SQL runs on the SQLite thread
  // as event `event`'s (-1: reef_query's, outside any batch).
  void Drive(int64_t event, std::function<void(GuestResults)> then) {
    driving_event_ = event;
    DriveGuest(driver_, instance_.get(), std::move(then));
  }

  void AskQuery() {
    if (Status made = EnsureInstance(); !made.ok()) return OnSqlite([this, made] { End(made); });
    Status started = instance_->StartCall("reef_query", {});
    if (!started.ok()) return OnSqlite([this, started] { End(started); });
    Drive(-1, [this](GuestResults results) {
      auto fail = [this](Status status) { OnSqlite([this, status] { End(status); }); };
      if (!results.ok()) return fail(results.status());
      auto value = instance_->ValueOf("reef_query", *results);
      if (!value.ok()) return fail(value.status());
      auto query = QueryFromValue(*value);
      if (!query.ok()) return fail(query.status());
      query_ = std::move(*query);
      status_.SetQuery(query_);
      OnSqlite([this] { Subscribe(); });
    });
  }

  // reef_project of event `index` of the batch, then the next one; the batch ends on the
  // SQLite thread.
  void Handle(std::shared_ptr<std::vector<Value>> values,
              std::shared_ptr<std::vector<uint64_t>> positions, size_t index) {
    auto end = [this, positions](size_t handled, Status failure) {
      OnSqlite([this, positions, handled, failure] { EndBatch(positions, handled, failure); });
    };
    if (index == values->size()) return end(index, Status::Ok());
    if (index == 0) {
      if (Status made = EnsureInstance(); !made.ok()) return end(0, made);
    }
    const uint64_t position = (*positions)[index];
    auto failed = [position](const Status& status) {
      return status.WithContext(fmt::format("event at position {}", position));
    };
    Status started = instance_->StartCall("reef_project", {&(*values)[index]});
    if (!started.ok()) return end(index, failed(started));
    Drive(static_cast<int64_t>(index), [this, values, positions, index, end,
                                        failed](GuestResults results) {
      if (!results.ok()) return end(index, failed(results.status()));
      int32_t rc = std::get<int32_t>(results->at(0));
      if (rc != 0) {
        return end(index,
                   failed(Status(Code::kTrapped, fmt::format("reef_project returned {}", rc))));
      }
      Handle(values, positions, index + 1);
    });
  }

  // ---- the end (the SQLite thread) ----
  // Closes the database here, ends the instance on its reactor, then lets Stop return.
  void End(Status status) {
    if (!status.ok()) {
      spdlog::error("projector {}@{} stopped: {}", spec_.name, spec_.version, status.message());
      status_.Fail(status.message());
    } else {
      status_.SetState("stopped");
    }
    subscription_.reset();
    if (db_ != nullptr) sqlite3_close_v2(db_);
    db_ = nullptr;
    auto finished = [this] {
      instance_.reset();
      MutexLock lock(mu_);
      running_ = false;
      ended_.NotifyAll();
    };
    if (!spec_.fleet->Post(spec_.reactor, finished).ok()) finished();
  }

  RunnerSpec spec_;
  RunnerStatus status_;
  const std::string label_;
  std::atomic<bool> stop_{false};
  Mutex mu_;
  CondVar ended_;
  bool running_ GUARDED_BY(mu_) = false;

  // The SQLite thread's.
  sqlite3* db_ = nullptr;
  std::unique_ptr<events::Subscription> subscription_;
  uint64_t position_ = 0;
  int64_t open_event_ = -1;  // the event whose savepoint is open, or -1
  events::Query query_;      // written on the reactor before Subscribe is handed over
  // The reactor's.
  std::unique_ptr<ModuleInstance> instance_;
  std::shared_ptr<const GuestDriver> driver_;
  // The event whose handler runs now; written on the reactor before its call starts, read by
  // its SQL on the SQLite thread (the hand-over orders the two).
  int64_t driving_event_ = -1;

  IoPool sqlite_;  // last: its thread ends first, before the members its steps use
};

}  // namespace

std::unique_ptr<Runner> MakeProjectorRunner(RunnerSpec spec) {
  return std::make_unique<ProjectorRunner>(std::move(spec));
}

}  // namespace reef::apps
