// The effect runner (spec 000 "Effects (parallel)", "Watermark algorithm", "Backoff and
// retry"): a dispatcher thread reads the subscription, asks the module for each event's
// partition key and queues the event on the global worker (no key) or on keyed worker
// 1 + hash(key) % 8. Each worker runs its events in order, each until it succeeds: a failure
// waits effect_backoff_initial, doubling up to effect_backoff_max, and the delay resets after
// the next success. Workers acknowledge handled positions; the watermark is the highest
// position below which everything dispatched is handled, and it is persisted in
// effects/<name>.sqlite, so a restart resumes after it (at-least-once delivery).
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sqlite3.h>

#include <deque>
#include <functional>
#include <set>

#include "apps/module_abi.h"
#include "apps/runners.h"
#include "core/mutex.h"

namespace reef::apps {

namespace {

constexpr auto kPollTimeout = std::chrono::milliseconds(100);
constexpr uint32_t kKeyedWorkers = 8;

struct Item {
  events::SequencedEvent event;
  Value value;
};

class EffectRunner;

class Worker {
 public:
  Worker(EffectRunner& runner, uint32_t index) : runner_(runner), index_(index) {}
  void Start() {
    thread_ = std::thread([this] { Run(); });
  }
  void Push(Item item) {
    MutexLock lock(mu_);
    queue_.push_back(std::move(item));
    cv_.NotifyOne();
  }
  void Stop() {
    {
      MutexLock lock(mu_);
      stop_ = true;
      cv_.NotifyAll();
    }
    if (thread_.joinable()) thread_.join();
  }
  double backoff_seconds() const { return backoff_ms_.load() / 1000.0; }

 private:
  void Run();

  EffectRunner& runner_;
  const uint32_t index_;
  Mutex mu_;
  CondVar cv_;
  std::deque<Item> queue_ GUARDED_BY(mu_);
  bool stop_ GUARDED_BY(mu_) = false;
  std::atomic<int64_t> backoff_ms_{0};
  std::thread thread_;
};

class EffectRunner final : public Runner {
 public:
  explicit EffectRunner(RunnerSpec spec) : spec_(std::move(spec)), status_(spec_) {
    label_ = fmt::format("effects/{}@{}", spec_.name, spec_.version);
  }
  ~EffectRunner() override { Stop(); }

  void Start() override {
    status_.SetState("starting");
    // The workers exist before any thread runs, so Snapshot may read them from any thread.
    for (uint32_t i = 0; i <= kKeyedWorkers; ++i) {
      workers_.push_back(std::make_unique<Worker>(*this, i));
    }
    dispatcher_ = std::thread([this] { RunDispatcher(); });
  }

  void Stop() override {
    stop_ = true;
    {
      MutexLock lock(mu_);
      cv_.NotifyAll();
    }
    if (dispatcher_.joinable()) dispatcher_.join();
  }

  ModuleStatus Snapshot() const override {
    ModuleStatus s = status_.Get();
    double backoff = 0;
    for (const auto& w : workers_) backoff = std::max(backoff, w->backoff_seconds());
    s.backoff_seconds = backoff;
    if (backoff > 0 && s.state != "failed") s.state = "backoff";
    return s;
  }

  // ---- Called by workers ----

  // A new instance; `slot` numbers it for the status's tier (0: the dispatcher, 1 + i: worker
  // i).
  Result<std::unique_ptr<ModuleInstance>> NewInstance(uint32_t slot) {
    REEF_ASSIGN_OR_RETURN(auto instance,
                          ModuleInstance::Create(store::ModuleKind::kEffect, spec_.module, label_));
    instance->context().env = spec_.env;
    status_.SetTier(slot, instance->tier());
    return instance;
  }
  const RunnerSpec& spec() const { return spec_; }
  RunnerStatus& status() { return status_; }
  bool stopping() const { return stop_; }

  void Ack(events::Position position) {
    MutexLock lock(mu_);
    in_flight_.erase(position);
    cv_.NotifyAll();
  }

 private:
  // Highest position with nothing dispatched at or below it still in flight.
  events::Position WatermarkLocked() const REQUIRES(mu_) {
    return in_flight_.empty() ? dispatched_ : *in_flight_.begin() - 1;
  }

  Status PersistWatermark(events::Position watermark) {
    REEF_RETURN_IF_ERROR(
        SaveRunnerPosition(db_, "reef_effect", "watermark", watermark, spec_.version));
    persisted_ = watermark;
    status_.SetPosition(watermark);
    return Status::Ok();
  }

  Status MaybePersist() {
    events::Position watermark;
    {
      MutexLock lock(mu_);
      watermark = WatermarkLocked();
    }
    if (watermark == persisted_) return Status::Ok();
    return PersistWatermark(watermark);
  }

  // The worker of `key`: 0 (global) for null, else 1 + FNV-1a-64(key's UTF-8 bytes) % 8, with
  // FNV's standard 64-bit offset basis and prime (draft-eastlake-fnv). Which worker a key gets
  // matters only while the effect runs (the watermark, not the worker, is stored), so the
  // mapping may change between versions of Reef without touching stored data.
  static uint32_t WorkerFor(const Value& key) {
    if (!key.is_string()) return 0;
    return 1 + static_cast<uint32_t>(Fnv1a64(key.as_string()) % kKeyedWorkers);
  }

  void RunDispatcher() {
    Status done = Dispatch();
    for (auto& w : workers_) w->Stop();
    if (db_ != nullptr) {
      Status persisted = MaybePersist();
      if (!persisted.ok() && done.ok()) done = persisted;
      sqlite3_close_v2(db_);
      db_ = nullptr;
    }
    if (!done.ok()) {
      spdlog::error("{} stopped: {}", label_, done.message());
      status_.Fail(done.message());
    } else {
      status_.SetState("stopped");
    }
  }

  Status Dispatch() {
    REEF_ASSIGN_OR_RETURN(db_, OpenModuleDatabase(spec_.db_path));
    REEF_ASSIGN_OR_RETURN(events::Position watermark,
                          LoadRunnerPosition(db_, "reef_effect", "watermark"));
    persisted_ = watermark;
    {
      MutexLock lock(mu_);  // never waited for: no worker runs yet
      dispatched_ = watermark;
    }
    status_.SetPosition(watermark);
    REEF_ASSIGN_OR_RETURN(auto instance, NewInstance(0));
    instance->context().db = db_;  // reef_query and reef_partition_key may use SQL too
    REEF_ASSIGN_OR_RETURN(Value query_value, instance->CallForValue("reef_query", {}));
    REEF_ASSIGN_OR_RETURN(events::Query query, QueryFromValue(query_value));
    status_.SetQuery(query);
    for (auto& w : workers_) w->Start();
    REEF_ASSIGN_OR_RETURN(auto subscription, spec_.events->Subscribe(query, watermark));
    spdlog::info("{} started after watermark {}", label_, watermark);
    auto last_persist = std::chrono::steady_clock::now();
    while (!stop_) {
      {
        MutexLock lock(mu_);
        const auto deadline = std::chrono::steady_clock::now() + kPollTimeout;
        while (!stop_ && in_flight_.size() >= spec_.options->effect_max_in_flight) {
          if (cv_.WaitUntil(mu_, deadline) == std::cv_status::timeout) break;
        }
        if (stop_) break;
        if (in_flight_.size() >= spec_.options->effect_max_in_flight) continue;
      }
      if (status_.Get().state != "failed") {
        status_.SetState(subscription->live() ? "running" : "catching_up");
      }
      size_t room;
      {
        MutexLock lock(mu_);
        room = spec_.options->effect_max_in_flight - in_flight_.size();
      }
      REEF_ASSIGN_OR_RETURN(auto batch,
                            subscription->Next(std::min<size_t>(room, 256), kPollTimeout));
      // Its native code became ready (TierChoice::kAuto): move to it between batches.
      if (!batch.empty() && instance->Outdated()) {
        REEF_ASSIGN_OR_RETURN(instance, NewInstance(0));
        instance->context().db = db_;
      }
      for (events::SequencedEvent& event : batch) {
        REEF_ASSIGN_OR_RETURN(Value value, EventToValue(events::EventView::Of(event), spec_.keys));
        REEF_ASSIGN_OR_RETURN(Value key, instance->CallForValue("reef_partition_key", {&value}));
        if (!key.is_null() && !key.is_string()) {
          return Status::InvalidArgument(
              fmt::format("{}: reef_partition_key returned a {}; expected a string or null", label_,
                          KindName(key.kind())));
        }
        uint32_t worker = WorkerFor(key);
        {
          MutexLock lock(mu_);
          in_flight_.insert(event.position);
          dispatched_ = event.position;
        }
        workers_[worker]->Push(Item{std::move(event), std::move(value)});
      }
      auto now = std::chrono::steady_clock::now();
      if (now - last_persist >= kPollTimeout) {
        REEF_RETURN_IF_ERROR(MaybePersist());
        last_persist = now;
      }
    }
    return Status::Ok();
  }

  RunnerSpec spec_;
  RunnerStatus status_;
  std::string label_;
  std::atomic<bool> stop_{false};
  std::thread dispatcher_;
  sqlite3* db_ = nullptr;           // dispatcher thread only
  events::Position persisted_ = 0;  // dispatcher thread only
  // Created by Start before the dispatcher runs, never resized after: any thread may read.
  std::vector<std::unique_ptr<Worker>> workers_;

  Mutex mu_;
  CondVar cv_;
  std::set<events::Position> in_flight_ GUARDED_BY(mu_);
  events::Position dispatched_ GUARDED_BY(mu_) = 0;
};

void Worker::Run() {
  const RunnerSpec& spec = runner_.spec();
  sqlite3* db = nullptr;
  auto opened = OpenModuleDatabase(spec.db_path);
  if (!opened.ok()) {
    runner_.status().Fail(opened.status().message());
    return;
  }
  db = *opened;
  // Made for the first event this worker gets (an idle worker holds none), and again when
  // the module's native code becomes ready (TierChoice::kAuto), between two events.
  std::unique_ptr<ModuleInstance> instance;
  const Item* current = nullptr;
  auto append = [&spec, &current](const Value& list) -> Result<uint64_t> {
    events::EventMetadata metadata;
    metadata.causation_id = events::FormatEventId(current->event.event.id);
    metadata.correlation_id = current->event.event.metadata.correlation_id.empty()
                                  ? metadata.causation_id
                                  : current->event.event.metadata.correlation_id;
    REEF_ASSIGN_OR_RETURN(auto new_events, NewEventsFromValue(list, spec.keys, metadata));
    if (new_events.empty()) return spec.events->Head();
    return spec.events->Append(std::move(new_events), std::nullopt);
  };
  auto attach = [db, &append](ModuleInstance& attached) {
    attached.context().db = db;
    attached.context().append = append;
  };
  const int64_t initial = spec.options->effect_backoff_initial.count();
  const int64_t cap = spec.options->effect_backoff_max.count();
  int64_t delay = initial;
  bool switch_failed_logged = false;
  while (true) {
    Item item;
    {
      MutexLock lock(mu_);
      while (!stop_ && queue_.empty()) cv_.Wait(mu_);
      if (stop_) break;
      item = std::move(queue_.front());
      queue_.pop_front();
    }
    current = &item;
    // A failed instantiation keeps the instance that works, if there is one.
    if (instance == nullptr || instance->Outdated()) {
      if (auto fresh = runner_.NewInstance(index_ + 1); fresh.ok()) {
        instance = std::move(*fresh);
        attach(*instance);
      } else if (instance == nullptr) {
        runner_.status().Fail(fresh.status().message());  // the event stays unacknowledged
        break;
      } else if (!switch_failed_logged) {
        switch_failed_logged = true;
        spdlog::warn("effects/{} (worker {}): stays on its instance: a new one failed: {}",
                     spec.name, index_, fresh.status().message());
      }
    }
    while (true) {
      auto rc = instance->CallForStatus("reef_effect", {&item.value});
      if (rc.ok() && *rc == 0) {
        delay = initial;
        backoff_ms_ = 0;
        runner_.Ack(item.event.position);
        break;
      }
      std::string error =
          rc.ok() ? fmt::format("reef_effect returned {}", *rc) : rc.status().message();
      error = fmt::format("event at position {}: {}", item.event.position, error);
      spdlog::warn("effects/{} (worker {}): {}; retrying in {} ms", spec.name,
                   index_ == 0 ? std::string("global") : std::to_string(index_), error, delay);
      runner_.status().CountFailure(error);
      backoff_ms_ = delay;
      {
        MutexLock lock(mu_);
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(delay);
        while (!stop_) {
          if (cv_.WaitUntil(mu_, deadline) == std::cv_status::timeout) break;
        }
        if (stop_) break;
      }
      delay = std::min(delay * 2, cap);
    }
    current = nullptr;
    MutexLock lock(mu_);
    if (stop_) break;
  }
  sqlite3_close_v2(db);
}

}  // namespace

std::unique_ptr<Runner> MakeEffectRunner(RunnerSpec spec) {
  return std::make_unique<EffectRunner>(std::move(spec));
}

}  // namespace reef::apps
