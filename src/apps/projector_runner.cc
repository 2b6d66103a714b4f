// The projector runner: one thread, one subscription, one SQLite database
// (projectors/<name>.sqlite). Each event's handler runs inside a savepoint of a batch
// transaction that also stores the projector's position, so a read model sees every event
// exactly once, also across crashes (spec 000 "Projectors (sequential)").
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sqlite3.h>

#include "apps/module_abi.h"
#include "apps/runners.h"

namespace reef::apps {

namespace {

constexpr auto kPollTimeout = std::chrono::milliseconds(100);

class ProjectorRunner final : public Runner {
 public:
  explicit ProjectorRunner(RunnerSpec spec) : spec_(std::move(spec)), status_(spec_) {}
  ~ProjectorRunner() override { Stop(); }

  void Start() override {
    status_.SetState("starting");
    thread_ = std::thread([this] { Run(); });
  }

  void Stop() override {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }

  ModuleStatus Snapshot() const override { return status_.Get(); }

 private:
  void Run() {
    Status done = Loop();
    if (!done.ok()) {
      spdlog::error("projector {}@{} stopped: {}", spec_.name, spec_.version, done.message());
      status_.Fail(done.message());
    } else {
      status_.SetState("stopped");
    }
    if (db_ != nullptr) sqlite3_close_v2(db_);
    db_ = nullptr;
  }

  Status Loop() {
    REEF_ASSIGN_OR_RETURN(db_, OpenModuleDatabase(spec_.db_path));
    REEF_ASSIGN_OR_RETURN(uint64_t position, LoadRunnerPosition(db_, "reef_projector", "position"));
    status_.SetPosition(position);
    std::string label = fmt::format("projectors/{}@{}", spec_.name, spec_.version);
    auto create = [&]() -> Result<std::unique_ptr<ModuleInstance>> {
      REEF_ASSIGN_OR_RETURN(
          auto created, ModuleInstance::Create(store::ModuleKind::kProjector, spec_.module, label));
      created->context().env = spec_.env;
      created->context().db = db_;
      status_.SetTier(0, created->tier());
      return created;
    };
    REEF_ASSIGN_OR_RETURN(auto instance, create());
    REEF_ASSIGN_OR_RETURN(Value query_value, instance->CallForValue("reef_query", {}));
    REEF_ASSIGN_OR_RETURN(events::Query query, QueryFromValue(query_value));
    status_.SetQuery(query);
    REEF_ASSIGN_OR_RETURN(auto subscription, spec_.events->Subscribe(query, position));
    spdlog::info("projector {}@{} started at position {}", spec_.name, spec_.version, position);
    while (!stop_) {
      status_.SetState(subscription->live() ? "running" : "catching_up");
      REEF_ASSIGN_OR_RETURN(
          auto batch, subscription->Next(spec_.options->projector_batch_events, kPollTimeout));
      if (batch.empty()) continue;
      // Its native code became ready (TierChoice::kAuto): move to it between batches.
      if (instance->Outdated()) {
        REEF_ASSIGN_OR_RETURN(instance, create());
      }
      REEF_RETURN_IF_ERROR(ExecSql(db_, "BEGIN IMMEDIATE"));
      uint64_t committed = position;
      Status failure = Status::Ok();
      for (const events::SequencedEvent& event : batch) {
        (void)ExecSql(db_, "SAVEPOINT reef_event");
        Status handled = Handle(*instance, event);
        if (!handled.ok()) {
          (void)ExecSql(db_, "ROLLBACK TO reef_event");
          (void)ExecSql(db_, "RELEASE reef_event");
          failure = handled.WithContext(fmt::format("event at position {}", event.position));
          break;
        }
        (void)ExecSql(db_, "RELEASE reef_event");
        committed = event.position;
      }
      if (committed != position) {
        Status saved =
            SaveRunnerPosition(db_, "reef_projector", "position", committed, spec_.version);
        if (!saved.ok()) {
          (void)ExecSql(db_, "ROLLBACK");
          return saved;
        }
      }
      REEF_RETURN_IF_ERROR(ExecSql(db_, "COMMIT"));
      position = committed;
      status_.SetPosition(position);
      if (!failure.ok()) return failure;
    }
    return Status::Ok();
  }

  Status Handle(ModuleInstance& instance, const events::SequencedEvent& event) {
    REEF_ASSIGN_OR_RETURN(Value value, EventToValue(events::EventView::Of(event), spec_.keys));
    REEF_ASSIGN_OR_RETURN(int32_t rc, instance.CallForStatus("reef_project", {&value}));
    if (rc != 0) return Status(Code::kTrapped, fmt::format("reef_project returned {}", rc));
    return Status::Ok();
  }

  RunnerSpec spec_;
  RunnerStatus status_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  sqlite3* db_ = nullptr;  // the runner thread only
};

}  // namespace

std::unique_ptr<Runner> MakeProjectorRunner(RunnerSpec spec) {
  return std::make_unique<ProjectorRunner>(std::move(spec));
}

}  // namespace reef::apps
