// The effect runner (spec 000 "Effects (parallel)", "Watermark algorithm", "Backoff and
// retry"): a dispatcher reads the subscription, asks the module for each event's partition key
// and queues the event on the global worker (no key) or on keyed worker 1 + hash(key) % 8.
// Each worker runs its events in order, each until it succeeds: a failure waits
// effect_backoff_initial, doubling up to effect_backoff_max, and the delay resets after the
// next success. Workers acknowledge handled positions; the watermark is the highest position
// below which everything dispatched is handled, and it is persisted in effects/<name>.sqlite,
// so a restart resumes after it (at-least-once delivery).
//
// On a module store that several processes share (PostgreSQL), an effect runs in one process
// at a time: the dispatcher first takes the effect's lease (state "standby" until it can,
// trying every kLeaseRetry), keeps the watermark in the shared store, and when the lease is lost
// (its connection broke) stops and asks the runtime for a fresh runner, which waits in standby
// again. Another process's runner takes over within kLeaseRetry of the holder's death.
//
// Guest code runs on the reactor fleet (docs/runtime.md "One fleet"): the dispatcher's
// reef_query and reef_partition_key on the effect's reactor, each worker's reef_effect on a
// reactor of its own choosing. What waits runs on threads that may wait: the dispatcher's
// thread (the subscription, the watermark, its SQL), and for each worker a serial queue on the
// pool all effects' workers share (its connection to the database, its SQL and its appends,
// one at a time), which the guest's sql_exec, sql_query and append suspend for.
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sqlite3.h>

#include <deque>
#include <functional>
#include <future>
#include <set>

#include "apps/guest_driver.h"
#include "apps/module_abi.h"
#include "apps/runners.h"
#include "core/mutex.h"
#include "core/serial_queue.h"

namespace reef::apps {

namespace {

constexpr uint32_t kKeyedWorkers = 8;
// How often a runner in standby tries to take its effect's lease.
constexpr auto kLeaseRetry = std::chrono::seconds(1);

struct Item {
  events::SequencedEvent event;
  Value value;
};

class EffectRunner;

class Worker : public std::enable_shared_from_this<Worker> {
 public:
  Worker(EffectRunner& runner, uint32_t index, uint32_t reactor);
  // Opens the worker's connection on its serial queue.
  void Start();
  // Queues an event; the worker runs it after those before it. Any thread.
  void Push(Item item);
  // Takes no more events, waits for the one in progress (a retry's wait ends at once), ends
  // the instance on its reactor and closes the connection. Not from a reactor thread.
  void Stop();
  double backoff_seconds() const { return backoff_ms_.load() / 1000.0; }

 private:
  void Next();  // on the reactor: runs reef_effect on the first queued event
  void Handled(GuestResults results);
  // Ends the chain of steps (no event left, stopping, or no instance); `why` fails the status.
  void Idle(const std::string& why = "");

  EffectRunner& runner_;
  const uint32_t index_;
  const uint32_t reactor_;
  const RunnerSpec& spec_;
  std::shared_ptr<const GuestDriver> driver_;

  Mutex mu_;
  CondVar idle_;
  std::deque<Item> queue_ GUARDED_BY(mu_);
  bool busy_ GUARDED_BY(mu_) = false;           // a chain of steps runs or is scheduled
  bool waiting_retry_ GUARDED_BY(mu_) = false;  // ... as a retry after a backoff
  bool stop_ GUARDED_BY(mu_) = false;
  std::atomic<int64_t> backoff_ms_{0};

  // The reactor's (and, through the hand-over, the serial queue's while a call waits there).
  std::unique_ptr<ModuleInstance> instance_;
  std::shared_ptr<const Item> current_;
  int64_t delay_ms_ = 0;
  bool switch_failed_logged_ = false;
  // The serial queue's (one item at a time, on any thread of the shared pool).
  sqlite3* db_ = nullptr;
  SerialQueue io_;  // last: it ends first, waiting for the item running
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
    const uint32_t reactors = spec_.fleet->ReactorCount();
    for (uint32_t i = 0; i <= kKeyedWorkers; ++i) {
      workers_.push_back(std::make_shared<Worker>(*this, i, (spec_.reactor + 1 + i) % reactors));
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

  // A new instance; `slot` numbers it for the status's tier (0: the
  // dispatcher, 1 + i: worker i).
  Result<std::unique_ptr<ModuleInstance>> NewInstance(uint32_t slot) {
    REEF_ASSIGN_OR_RETURN(auto instance,
                          ModuleInstance::Create(store::ModuleKind::kEffect, spec_.module, label_));
    instance->context().env = spec_.env;
    status_.SetTier(slot, instance->tier());
    return instance;
  }
  const RunnerSpec& spec() const { return spec_; }
  RunnerStatus& status() { return status_; }

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
    if (lease_ != nullptr && spec_.store->shared()) {
      REEF_ASSIGN_OR_RETURN(
          bool saved, spec_.store->SaveWatermark(spec_.name, watermark, spec_.version, epoch_));
      if (!saved) {  // a replay reset it since this runner loaded it: start again from there
        fenced_ = true;
        return Status::Ok();
      }
    } else {
      REEF_RETURN_IF_ERROR(
          SaveRunnerPosition(db_, "reef_effect", "watermark", watermark, spec_.version));
    }
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

  // Waits until this process holds the effect's lease (shared stores only). False when
  // stopping first.
  bool AwaitLease() {
    if (spec_.store == nullptr || !spec_.store->shared()) return true;
    status_.SetState("standby");
    bool logged = false;
    while (!stop_) {
      auto lease = spec_.store->TryLease(store::ModuleKind::kEffect, spec_.name);
      if (lease.ok() && *lease != nullptr) {
        lease_ = std::move(*lease);
        spdlog::info("{} took its lease: it runs in this process", label_);
        return true;
      }
      if (!lease.ok()) {
        status_.CountFailure(lease.status().message());
      } else if (!logged) {
        spdlog::info("{} is in standby: another process runs it", label_);
        logged = true;
      }
      MutexLock lock(mu_);
      const auto until = std::chrono::steady_clock::now() + kLeaseRetry;
      while (!stop_ && cv_.WaitUntil(mu_, until) != std::cv_status::timeout) {
      }
    }
    return false;
  }

  // The lease is gone, or a replay reset the shared watermark (fenced_): this runner must stop
  // and be replaced by one that stands by (and loads the watermark again).
  bool lease_lost() const { return fenced_ || (lease_ != nullptr && !lease_->held()); }

  void RunDispatcher() {
    if (!AwaitLease()) {
      status_.SetState("stopped");
      return;
    }
    Status done = Dispatch();
    for (auto& w : workers_) w->Stop();
    // The dispatcher's instance ends on its reactor.
    if (!spec_.fleet->PostAndWait(spec_.reactor, [this] { instance_.reset(); }).ok()) {
      instance_.reset();
    }
    const bool lost = lease_lost();
    if (db_ != nullptr) {
      // With the lease lost, another process may be further: its watermark stays.
      Status persisted = lost ? Status::Ok() : MaybePersist();
      if (!persisted.ok() && done.ok()) done = persisted;
      sqlite3_close_v2(db_);
      db_ = nullptr;
    }
    lease_.reset();
    if (lost && !stop_) {
      if (fenced_) {
        spdlog::info("{}: its watermark was reset (a replay): starting again", label_);
      } else {
        spdlog::warn("{} lost its lease (its connection to the database broke): standing by",
                     label_);
      }
      status_.SetState("lease lost");
      if (spec_.restart) spec_.restart();
      return;
    }
    if (!done.ok()) {
      spdlog::error("{} stopped: {}", label_, done.message());
      status_.Fail(done.message());
    } else {
      status_.SetState("stopped");
    }
  }

  // Runs export `name` on the dispatcher's instance (made or renewed first) for each of
  // `inputs` on the reactor, one after the other, and waits here for their values; the SQL
  // they ask for runs here meanwhile, on the dispatcher's connection.
  Result<std::vector<Value>> CallOnReactor(const char* name, std::vector<const Value*> inputs) {
    struct Round {
      Mutex mu;
      CondVar cv;
      std::deque<std::function<void()>> steps GUARDED_BY(mu);
      std::optional<Result<std::vector<Value>>> result GUARDED_BY(mu);
    };
    auto round = std::make_shared<Round>();
    auto driver = std::make_shared<GuestDriver>();
    driver->fleet = spec_.fleet;
    driver->reactor = spec_.reactor;
    driver->on_io = [round](std::function<void()> step) {
      MutexLock lock(round->mu);
      round->steps.push_back(std::move(step));
      round->cv.NotifyAll();
      return true;
    };
    driver->run_sql = [this](const SqlRequest& request) { return RunSql(db_, request); };
    auto finish = [round](Result<std::vector<Value>> result) {
      MutexLock lock(round->mu);
      round->result = std::move(result);
      round->cv.NotifyAll();
    };
    auto values = std::make_shared<std::vector<Value>>();
    // One call per input, each started once the one before ended.
    auto call = std::make_shared<std::function<void(size_t)>>();
    *call = [this, name, inputs, driver, values, finish, call](size_t i) {
      if (i == inputs.size()) return finish(std::move(*values));
      if (i == 0 && (!instance_ || instance_->Outdated())) {
        // Its native code became ready (TierChoice::kAuto): move to it between batches.
        auto made = NewInstance(0);
        if (!made.ok()) return finish(made.status());
        instance_ = std::move(*made);
      }
      std::initializer_list<const Value*> none = {};
      Status started = inputs[i] == nullptr ? instance_->StartCall(name, none)
                                            : instance_->StartCall(name, {inputs[i]});
      if (!started.ok()) return finish(started);
      DriveGuest(driver, instance_.get(),
                 [this, name, values, finish, call, i](GuestResults results) {
                   if (!results.ok()) return finish(results.status());
                   auto value = instance_->ValueOf(name, *results);
                   if (!value.ok()) return finish(value.status());
                   values->push_back(std::move(*value));
                   // The next call in a later turn: a long batch neither deepens the stack nor
                   // holds the reactor.
                   Status posted = spec_.fleet->Post(spec_.reactor, [call, i] { (*call)(i + 1); });
                   if (!posted.ok()) finish(posted);
                 });
    };
    Status posted = spec_.fleet->Post(spec_.reactor, [call] { (*call)(0); });
    if (!posted.ok()) return posted;
    for (;;) {
      std::function<void()> step;
      {
        MutexLock lock(round->mu);
        while (round->steps.empty() && !round->result) round->cv.Wait(round->mu);
        if (round->steps.empty()) {
          auto result = std::move(*round->result);
          // The chain holds itself through `call`; break the cycle now that it ended.
          (void)spec_.fleet->Post(spec_.reactor, [call] { *call = nullptr; });
          return result;
        }
        step = std::move(round->steps.front());
        round->steps.pop_front();
      }
      step();
    }
  }

  Status Dispatch() {
    REEF_ASSIGN_OR_RETURN(db_, OpenModuleDatabase(spec_.db_path));
    events::Position watermark = 0;
    if (lease_ != nullptr && spec_.store->shared()) {
      REEF_ASSIGN_OR_RETURN(auto shared, spec_.store->LoadWatermark(spec_.name));
      watermark = shared.watermark;
      epoch_ = shared.epoch;
    } else {
      REEF_ASSIGN_OR_RETURN(watermark, LoadRunnerPosition(db_, "reef_effect", "watermark"));
    }
    persisted_ = watermark;
    {
      MutexLock lock(mu_);  // never waited for: no worker runs yet
      dispatched_ = watermark;
    }
    status_.SetPosition(watermark);
    REEF_ASSIGN_OR_RETURN(auto query_values, CallOnReactor("reef_query", {nullptr}));
    REEF_ASSIGN_OR_RETURN(events::Query query, QueryFromValue(query_values.at(0)));
    status_.SetQuery(query);
    for (auto& w : workers_) w->Start();
    REEF_ASSIGN_OR_RETURN(auto subscription, spec_.events->Subscribe(query, watermark));
    spdlog::info("{} started after watermark {}", label_, watermark);
    auto last_persist = std::chrono::steady_clock::now();
    while (!stop_) {
      if (lease_lost()) return Status::Ok();  // RunDispatcher stands by
      {
        MutexLock lock(mu_);
        const auto deadline = std::chrono::steady_clock::now() + kRunnerPollTimeout;
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
                            subscription->Next(std::min<size_t>(room, 256), kRunnerPollTimeout));
      std::vector<Value> values;
      values.reserve(batch.size());
      for (const events::SequencedEvent& event : batch) {
        REEF_ASSIGN_OR_RETURN(Value value, EventToValue(events::EventView::Of(event), spec_.keys));
        values.push_back(std::move(value));
      }
      std::vector<const Value*> inputs;
      for (const Value& value : values) inputs.push_back(&value);
      std::vector<Value> keys;
      if (!inputs.empty()) {
        REEF_ASSIGN_OR_RETURN(keys, CallOnReactor("reef_partition_key", inputs));
      }
      for (size_t i = 0; i < batch.size(); ++i) {
        const Value& key = keys[i];
        if (!key.is_null() && !key.is_string()) {
          return Status::InvalidArgument(
              fmt::format("{}: reef_partition_key returned a {}; expected a string or null", label_,
                          KindName(key.kind())));
        }
        uint32_t worker = WorkerFor(key);
        {
          MutexLock lock(mu_);
          in_flight_.insert(batch[i].position);
          dispatched_ = batch[i].position;
        }
        workers_[worker]->Push(Item{std::move(batch[i]), std::move(values[i])});
      }
      auto now = std::chrono::steady_clock::now();
      if (now - last_persist >= kRunnerPollTimeout) {
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
  std::unique_ptr<store::ModuleLease> lease_;  // dispatcher thread only (shared stores)
  int64_t epoch_ = 0;                          // dispatcher thread only: the watermark's epoch
  bool fenced_ = false;                        // dispatcher thread only
  sqlite3* db_ = nullptr;                      // dispatcher thread only
  events::Position persisted_ = 0;             // dispatcher thread only
  std::unique_ptr<ModuleInstance> instance_;   // the dispatcher's, on spec_.reactor
  // Created by Start before the dispatcher runs, never resized after: any thread may read.
  std::vector<std::shared_ptr<Worker>> workers_;

  Mutex mu_;
  CondVar cv_;
  std::set<events::Position> in_flight_ GUARDED_BY(mu_);
  events::Position dispatched_ GUARDED_BY(mu_) = 0;
};

Worker::Worker(EffectRunner& runner, uint32_t index, uint32_t reactor)
    : runner_(runner),
      index_(index),
      reactor_(reactor),
      spec_(runner.spec()),
      delay_ms_(runner.spec().options->effect_backoff_initial.count()),
      io_(*runner.spec().effect_io, 4) {
  auto driver = std::make_shared<GuestDriver>();
  driver->fleet = spec_.fleet;
  driver->reactor = reactor_;
  driver->on_io = [this](std::function<void()> step) { return io_.TrySubmit(std::move(step)); };
  driver->run_sql = [this](const SqlRequest& request) { return RunSql(db_, request); };
  // The event being handled is current_: set on the reactor before its call started.
  driver->run_append = [this](const Value& list) -> Result<uint64_t> {
    const events::SequencedEvent& cause = current_->event;
    events::EventMetadata metadata;
    metadata.causation_id = events::FormatEventId(cause.event.id);
    metadata.correlation_id = cause.event.metadata.correlation_id.empty()
                                  ? metadata.causation_id
                                  : cause.event.metadata.correlation_id;
    REEF_ASSIGN_OR_RETURN(auto new_events, NewEventsFromValue(list, spec_.keys, metadata));
    if (new_events.empty()) return spec_.events->Head();
    return spec_.events->Append(std::move(new_events), std::nullopt);
  };
  driver_ = std::move(driver);
}

void Worker::Start() {
  io_.TrySubmit([self = shared_from_this()] {
    auto opened = OpenModuleDatabase(self->spec_.db_path);
    if (!opened.ok()) return self->runner_.status().Fail(opened.status().message());
    self->db_ = *opened;
  });
}

void Worker::Push(Item item) {
  bool schedule = false;
  {
    MutexLock lock(mu_);
    queue_.push_back(std::move(item));
    if (!busy_ && !stop_) busy_ = schedule = true;
  }
  if (!schedule) return;
  if (!spec_.fleet->Post(reactor_, [self = shared_from_this()] { self->Next(); }).ok()) Idle();
}

void Worker::Idle(const std::string& why) {
  if (!why.empty()) runner_.status().Fail(why);  // the event stays unacknowledged
  MutexLock lock(mu_);
  busy_ = false;
  waiting_retry_ = false;
  idle_.NotifyAll();
}

void Worker::Next() {
  {
    MutexLock lock(mu_);
    waiting_retry_ = false;
    if (stop_ || queue_.empty()) {
      busy_ = false;
      idle_.NotifyAll();
      return;
    }
    current_ = std::make_shared<const Item>(queue_.front());
  }
  // Made for the first event this worker gets (an idle worker holds none), and again when
  // the module's native code becomes ready (TierChoice::kAuto), between two events. A failed
  // instantiation keeps the instance that works, if there is one.
  if (instance_ == nullptr || instance_->Outdated()) {
    if (auto fresh = runner_.NewInstance(index_ + 1); fresh.ok()) {
      instance_ = std::move(*fresh);
    } else if (instance_ == nullptr) {
      return Idle(fresh.status().message());
    } else if (!switch_failed_logged_) {
      switch_failed_logged_ = true;
      spdlog::warn("effects/{} (worker {}): stays on its instance: a new one failed: {}",
                   spec_.name, index_, fresh.status().message());
    }
  }
  Status started = instance_->StartCall("reef_effect", {&current_->value});
  if (!started.ok()) return Handled(started);
  DriveGuest(driver_, instance_.get(), [self = shared_from_this()](GuestResults results) {
    self->Handled(std::move(results));
  });
}

void Worker::Handled(GuestResults results) {
  const int64_t initial = spec_.options->effect_backoff_initial.count();
  const int64_t cap = spec_.options->effect_backoff_max.count();
  const events::Position position = current_->event.position;
  if (results.ok() && std::get<int32_t>(results->at(0)) == 0) {
    delay_ms_ = initial;
    backoff_ms_ = 0;
    runner_.Ack(position);
    {
      MutexLock lock(mu_);
      queue_.pop_front();
    }
    // The next event in a later turn of the reactor.
    if (!spec_.fleet->Post(reactor_, [self = shared_from_this()] { self->Next(); }).ok()) Idle();
    return;
  }
  std::string error =
      results.ok() ? fmt::format("reef_effect returned {}", std::get<int32_t>(results->at(0)))
                   : results.status().message();
  error = fmt::format("event at position {}: {}", position, error);
  spdlog::warn("effects/{} (worker {}): {}; retrying in {} ms", spec_.name,
               index_ == 0 ? std::string("global") : std::to_string(index_), error, delay_ms_);
  runner_.status().CountFailure(error);
  backoff_ms_ = delay_ms_;
  {
    MutexLock lock(mu_);
    if (stop_) {
      busy_ = false;
      idle_.NotifyAll();
      return;
    }
    waiting_retry_ = true;  // Stop need not wait for the retry
  }
  // The retry finds the worker gone, or stopped, and does nothing then.
  std::weak_ptr<Worker> weak = weak_from_this();
  Status posted = spec_.fleet->Post(
      reactor_,
      [weak] {
        auto self = weak.lock();
        if (!self) return;
        {
          MutexLock lock(self->mu_);
          if (self->stop_ || !self->waiting_retry_) return;
        }
        self->Next();
      },
      std::chrono::milliseconds(delay_ms_));
  if (!posted.ok()) Idle();
  delay_ms_ = std::min(delay_ms_ * 2, cap);
}

void Worker::Stop() {
  {
    MutexLock lock(mu_);
    stop_ = true;
    if (waiting_retry_) {
      waiting_retry_ = false;
      busy_ = false;
    }
    while (busy_) idle_.Wait(mu_);
  }
  if (!spec_.fleet->PostAndWait(reactor_, [this] { instance_.reset(); }).ok()) {
    instance_.reset();
  }
  std::promise<void> closed;
  if (io_.TrySubmit([this, &closed] {
        if (db_ != nullptr) sqlite3_close_v2(db_);
        db_ = nullptr;
        closed.set_value();
      })) {
    closed.get_future().wait();
  }
}

}  // namespace

std::unique_ptr<Runner> MakeEffectRunner(RunnerSpec spec) {
  return std::make_unique<EffectRunner>(std::move(spec));
}

}  // namespace reef::apps
