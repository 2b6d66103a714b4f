// Command executions (docs/abi.md "One command execution"): read, fold, decide, append under
// the DCB condition, as tasks on the reactor fleet (docs/runtime.md "One fleet"); their
// idempotency records are command_records.cc's. Part of ModuleRuntime
// (apps/detail/module_runtime_impl.h).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <future>
#include <memory>
#include <random>

#include "apps/detail/command_ids.h"
#include "apps/detail/module_runtime_impl.h"
#include "core/cbor.h"
#include "core/clock.h"
#include "core/utf8.h"

namespace reef::apps {

using store::ModuleKind;
using json = nlohmann::json;

namespace {

using detail::CommandEventId;
using detail::FoldKey;
using detail::KeyedExecutionId;
using detail::OutcomeJson;
using detail::Sha256;

constexpr size_t kFoldBatchEvents = 256;

}  // namespace

// ---- Executions ---------------------------------------------------------------------------

namespace {

// An execution that a lifecycle change overtook runs again against what is active now (the
// next version, or none: not found); each change supersedes at most the executions that were
// in flight, so a few rounds are enough unless changes keep coming.
constexpr int kMaxSuperseded = 8;

}  // namespace

// One command execution in flight: a task that hops between a reactor of the fleet (guest
// calls, in slices) and the I/O pool (module store, event store, idempotency records), one hop
// at a time, so its fields are never touched by two threads at once. It keeps itself alive
// through the closure of its next hop; every path ends in Finish, and one dropped unrun (the
// fleet or pool stopping) answers Unavailable from its destructor.
class ModuleRuntime::Impl::Execution : public std::enable_shared_from_this<Execution> {
 public:
  Execution(Impl& rt, uint32_t reactor, std::string name, Value input, ExecuteOptions opts,
            CommandDone done)
      : rt_(rt),
        name_(std::move(name)),
        input_(std::move(input)),
        opts_(std::move(opts)),
        done_(std::move(done)),
        reactor_(reactor) {}

  ~Execution() {
    if (!done_) return;
    // Dropped unrun by a pool or reactor that stopped: nothing more will happen.
    ReleaseQueryTurn();
    if (!opts_.idempotency_key.empty() && key_held_) rt_.key_turns.Release(TurnKey());
    done_(Status::Unavailable(
        fmt::format("commands/{}: the server stopped before the execution ended", name_)));
    rt_.Leave();
  }

  // One execution per idempotency key: a concurrent duplicate waits for the first and replays
  // its record; events stored without a record (a crash in between) are found by their ids.
  void Start() {
    if (opts_.idempotency_key.empty()) return Resolve();
    if (!rt_.key_turns.Take(TurnKey(), [self = shared_from_this()] { self->KeyTaken(); })) {
      return;
    }
    KeyTaken();
  }

 private:
  // This execution holds its idempotency key: answer from the key's record, if there is one.
  void KeyTaken() {
    key_held_ = true;
    OnIo([self = shared_from_this()] {
      const std::string& key = self->opts_.idempotency_key;
      if (auto stored = self->rt_.FindResult(self->name_, key)) {
        return self->Finish(self->rt_.ReplayOutcome(*stored), /*record=*/false);
      }
      auto recovered = self->rt_.RecoverOutcome(self->name_, key);
      if (!recovered.ok()) return self->Finish(recovered.status());
      if (*recovered) return self->Finish(std::move(**recovered));
      self->Resolve();
    });
  }

  using WasmResults = Result<std::vector<wasm::WasmValue>>;

  std::string TurnKey() const { return name_ + '\n' + opts_.idempotency_key; }

  // ---- hops ----
  void OnIo(std::function<void()> step) {
    if (rt_.io->TrySubmit(std::move(step))) return;
    Finish(Status::Unavailable(fmt::format("commands/{}: the I/O threads are stopping", name_)));
  }
  void OnReactor(std::function<void()> step,
                 std::chrono::microseconds delay = std::chrono::microseconds(0)) {
    Status posted = rt_.fleet->Post(reactor_, std::move(step), delay);
    if (!posted.ok()) Finish(posted.WithContext(fmt::format("commands/{}", name_)));
  }

  // Runs the guest call StartCall began, a slice per reactor turn (the fleet's slice, like an
  // actor's), then `then` with its results. On the reactor.
  void RunGuest(std::function<void(WasmResults)> then) {
    auto results = instance_->RunSlice(rt_.fleet->options().free_slice);
    if (!results) {
      return OnReactor([self = shared_from_this(), then = std::move(then)]() mutable {
        self->RunGuest(std::move(then));
      });
    }
    then(std::move(*results));
  }
  // Borrows an instance, runs export `name` on it (StartCall, then RunGuest), gives the
  // instance back and gives the decoded value to `then`; failures finish the execution.
  void CallForValue(std::string_view name, std::initializer_list<const Value*> inputs,
                    std::function<void(Value)> then) {
    if (Status taken = TakeInstance(); !taken.ok()) return Finish(taken);
    Status started = instance_->StartCall(name, inputs);
    if (!started.ok()) return FailOnReactor(started);
    RunGuest([self = shared_from_this(), export_name = std::string(name),
              then = std::move(then)](WasmResults results) {
      if (!results.ok()) return self->FailOnReactor(results.status());
      auto value = self->instance_->ValueOf(export_name, *results);
      if (!value.ok()) return self->FailOnReactor(value.status());
      self->ReturnInstance();
      then(std::move(*value));
    });
  }

  // ---- resolve the active version (from memory, else on an I/O thread) ----
  void Resolve() {
    // Read before the version is resolved: a lifecycle change after this point supersedes the
    // execution, whatever it resolved.
    generation_ = rt_.CommandGeneration(name_);
    if (auto cached = rt_.CachedCommand(name_)) {
      active_ = std::move(cached->active);
      module_ = std::move(cached->module);
      env_ = std::move(cached->env);
      return Resolved();
    }
    OnIo([self = shared_from_this()] { self->ResolveOnIo(); });
  }
  void ResolveOnIo() {
    auto active = rt_.ActiveCommand(name_);
    if (!active.ok()) return Finish(active.status());
    if (!*active) {
      return Finish(Status::NotFound(fmt::format("no active command named '{}'", name_)));
    }
    active_ = **active;
    auto module = rt_.LoadModule(ModuleKind::kCommand, name_, active_.version, active_.sha256);
    if (!module.ok()) return Finish(module.status());
    module_ = std::move(*module);
    auto env = rt_.CommandEnv(name_);
    if (!env.ok()) return Finish(env.status());
    env_ = std::move(*env);
    Resolved();
  }
  void Resolved() {
    // A module that declares its fold ignores the input shares decision states across inputs.
    fold_ignores_input_ = module_->FindExport(kFoldIgnoresInputExport) != nullptr;
    if (outcome_.execution_id.empty()) {
      if (!opts_.idempotency_key.empty()) {
        outcome_.execution_id = KeyedExecutionId(name_, opts_.idempotency_key);
      } else {
        auto id = events::NewEventId();
        if (!id.ok()) return Finish(id.status());
        outcome_.execution_id = events::FormatEventId(*id);
      }
      now_ = UnixNowMs();
    }
    attempt_ = 0;
    OnReactor([self = shared_from_this()] { self->Attempt(); });
  }

  // A stopping server starts no attempt and no fold: the executions still waiting for their
  // query's turn or backing off end now, before they append, instead of holding the shutdown.
  bool EndedByStop() {
    if (!rt_.stop_requested.load(std::memory_order_relaxed)) return false;
    Finish(Status::Unavailable(fmt::format(
        "commands/{}: the server is stopping; the execution ended before appending", name_)));
    return true;
  }

  // ---- one attempt: init, fold, decide (reactor) ----
  void Attempt() {
    if (EndedByStop()) return;
    outcome_.attempts = attempt_ + 1;
    // What the imports act on, for every call of this attempt (ModuleCallContext): it moves
    // into the instance that runs a call and back out after it.
    ctx_ = ModuleCallContext{};
    tier_noted_ = false;
    ctx_.kind = ModuleKind::kCommand;
    ctx_.label = fmt::format("commands/{}@{}", name_, active_.version);
    ctx_.env = env_;
    ctx_.fixed_now_ms = now_;
    ctx_.random_seed = Sha256(outcome_.execution_id);
    ctx_.random_counter = 0;
    CallForValue("reef_command_init", {&input_},
                 [self = shared_from_this()](Value init) { self->Init(std::move(init)); });
  }

  // An instance of the module for one guest call, from this reactor's pool (reset) or new,
  // with the attempt's context moved in. Instances are borrowed for a call, not for the
  // execution: one waiting for its turn or for a read holds none, and every call starts from
  // the module's memory right after instantiation.
  Status TakeInstance() {
    auto& idle = rt_.reactor_instances[reactor_][active_.sha256];
    while (!idle.empty() && !instance_) {
      std::unique_ptr<ModuleInstance> candidate = std::move(idle.back());
      idle.pop_back();
      // Outdated: its native code is ready (TierChoice::kAuto); a new one runs it.
      if (!candidate->Outdated()) instance_ = std::move(candidate);
    }
    if (!instance_) {
      REEF_ASSIGN_OR_RETURN(instance_,
                            ModuleInstance::Create(ModuleKind::kCommand, module_, ctx_.label));
    } else {
      REEF_RETURN_IF_ERROR(instance_->Reset());
    }
    std::swap(instance_->context(), ctx_);
    if (!tier_noted_) {  // once per attempt, not per guest call
      tier_noted_ = true;
      MutexLock lock(rt_.mu);
      // Two commands with the same bytes share instances: each records the tier it ran on.
      rt_.command_counters[name_].tier = wasm::TierName(instance_->tier());
    }
    return Status::Ok();
  }
  // Moves the context back out and gives the instance back to this reactor's pool (kept: a
  // few per module).
  void ReturnInstance() {
    constexpr size_t kIdlePerModule = 8;
    if (!instance_) return;
    std::swap(instance_->context(), ctx_);
    auto& idle = rt_.reactor_instances[reactor_][active_.sha256];
    if (idle.size() < kIdlePerModule) idle.push_back(std::move(instance_));
    instance_.reset();
  }
  void FailOnReactor(const Status& status) {
    ReturnInstance();
    Finish(status);
  }

  void Init(Value init) {
    if (!init.is_record() || !init.as_record().count("state") || !init.as_record().count("query")) {
      return FailOnReactor(Status::InvalidArgument(fmt::format(
          "commands/{}: reef_command_init must return {{\"query\": ..., \"state\": ...}}", name_)));
    }
    state_ = init.as_record().at("state");
    const Value& query_value = init.as_record().at("query");
    condition_.reset();
    if (query_value.is_null()) return Decide();
    auto query = QueryFromValue(query_value);
    if (!query.ok()) return FailOnReactor(query.status());
    query_ = std::move(*query);
    auto query_bytes = EncodeCbor(query_value, ModuleValueLimits());
    if (!query_bytes.ok()) return FailOnReactor(query_bytes.status());
    query_bytes_ = std::move(*query_bytes);
    // Executions with the same query take turns from read to append, so within this process
    // they never conflict with each other (no retries, no 409 on a hot key); executions with
    // other queries run in parallel, and conflicts with them are retried.
    query_turn_ =
        std::string(reinterpret_cast<const char*>(query_bytes_.data()), query_bytes_.size());
    // A free turn is taken here and the fold starts at once; a turn another execution frees
    // is handed over on that one's thread, and the fold moves back to this reactor.
    if (!rt_.query_turns.Take(*query_turn_, [self = shared_from_this()] {
          self->query_turn_held_ = true;
          self->OnReactor([self] { self->StartFold(); });
        })) {
      return;
    }
    query_turn_held_ = true;
    StartFold();
  }

  void StartFold() {
    if (EndedByStop()) return;
    // A lifecycle change while this execution waited for its turn: it starts again now rather
    // than fold for a version that can no longer append (behind a deactivate or an activate,
    // every waiting execution would otherwise pay a full fold in turn before any appends).
    if (rt_.CommandGeneration(name_) != generation_) return Supersede();
    from_ = 1;
    head_ = 0;
    // The fold cache: start from the state folded up to some position, when one is kept.
    cache_epoch_ = rt_.fold_cache.epoch();  // before any event is read
    auto key = FoldKey(name_, active_.sha256, generation_, query_bytes_, state_,
                       fold_ignores_input_ ? nullptr : &input_);
    if (!key.ok()) return FailOnReactor(key.status());
    fold_key_ = *key;
    if (auto kept = rt_.fold_cache.Find(fold_key_)) {
      state_ = std::move(kept->state);
      from_ = kept->folded_to + 1;
    }
    fold_start_ = from_;
    ctx_.read_clock_or_random = false;
    ReadPage();
  }

  // Reads the next page of the query's events on an I/O thread, converted for the guest there.
  void ReadPage() {
    OnIo([self = shared_from_this()] {
      auto page =
          self->rt_.events.Read(self->query_, {.from = self->from_, .limit = kFoldBatchEvents});
      if (!page.ok())
        return self->OnReactor([self, status = page.status()] { self->FailOnReactor(status); });
      List batch;
      batch.reserve(page->events.size());
      for (const auto& event : page->events) {
        auto v = EventToValue(events::EventView::Of(event), self->rt_.keys.get());
        if (!v.ok())
          return self->OnReactor([self, status = v.status()] { self->FailOnReactor(status); });
        batch.push_back(std::move(*v));
      }
      auto read = std::make_shared<PageRead>(
          PageRead{page->head, page->events.size(),
                   page->events.empty() ? self->from_ : page->events.back().position + 1,
                   Value::ListOf(std::move(batch))});
      self->OnReactor([self, read] { self->Fold(std::move(*read)); });
    });
  }

  struct PageRead {
    events::Position head = 0;
    size_t count = 0;
    events::Position next = 0;
    Value batch;
  };

  void Fold(PageRead read) {
    head_ = read.head;
    if (read.count == 0) return FoldDone();
    if (rt_.CommandGeneration(name_) != generation_) return Supersede();  // as in StartFold
    auto batch = std::make_shared<Value>(std::move(read.batch));
    const bool more = read.count >= kFoldBatchEvents;
    const events::Position next = read.next;
    CallForValue("reef_command_fold", {&state_, &input_, batch.get()},
                 [self = shared_from_this(), batch, more, next](Value state) {
                   self->state_ = std::move(state);
                   self->from_ = next;
                   if (more) return self->ReadPage();
                   self->FoldDone();
                 });
  }

  void FoldDone() {
    // Kept when the fold moved on and depended only on its key: not on the clock or random
    // bytes, and no lifecycle change came in (the generation is part of the key).
    if (from_ != fold_start_ && !ctx_.read_clock_or_random &&
        rt_.CommandGeneration(name_) == generation_) {
      rt_.fold_cache.Put(fold_key_, name_, state_, head_, cache_epoch_);
    }
    condition_ = events::AppendCondition{query_, head_};
    Decide();
  }

  void Decide() {
    CallForValue(
        "reef_command_decide", {&state_, &input_},
        [self = shared_from_this()](Value decision) { self->Decided(std::move(decision)); });
  }

  void Decided(Value decision) {
    if (!decision.is_record()) {
      return Finish(Status::InvalidArgument(
          fmt::format("commands/{}: reef_command_decide must return {{\"events\": [...]}} or "
                      "{{\"error\": \"...\"}}",
                      name_)));
    }
    const Record& fields = decision.as_record();
    if (auto it = fields.find("error"); it != fields.end()) {
      if (!it->second.is_string()) {
        return Finish(Status::InvalidArgument(
            fmt::format("commands/{}: the decision's error must be a string", name_)));
      }
      if (rt_.CommandGeneration(name_) != generation_) return Supersede();
      outcome_.kind = CommandOutcome::Kind::kRejected;
      outcome_.message = it->second.as_string();
      return Finish(std::move(outcome_));
    }
    auto events_it = fields.find("events");
    if (events_it == fields.end()) {
      return Finish(Status::InvalidArgument(
          fmt::format("commands/{}: the decision has neither \"events\" nor \"error\"", name_)));
    }
    events::EventMetadata metadata;
    metadata.timestamp_ms = now_;
    metadata.causation_id = outcome_.execution_id;
    metadata.correlation_id =
        opts_.correlation_id.empty() ? outcome_.execution_id : opts_.correlation_id;
    metadata.idempotency_key = opts_.idempotency_key;
    auto new_events = NewEventsFromValue(events_it->second, rt_.keys.get(), metadata);
    if (!new_events.ok()) {
      return Finish(
          new_events.status().WithContext(fmt::format("commands/{}: the decision", name_)));
    }
    for (size_t i = 0; i < new_events->size(); ++i) {
      (*new_events)[i].id = CommandEventId(outcome_.execution_id, i);
    }
    outcome_.event_data.clear();
    for (const Value& e : events_it->second.as_list()) {
      auto d = e.as_record().find("data");
      outcome_.event_data.push_back(d == e.as_record().end() ? Value::Null() : d->second);
    }
    new_events_ = std::move(*new_events);
    OnIo([self = shared_from_this()] { self->AppendOnIo(); });
  }

  // ---- the append under the DCB condition (I/O) ----
  void AppendOnIo() {
    if (new_events_.empty()) {
      if (rt_.CommandGeneration(name_) != generation_) return Supersede();
      outcome_.position = rt_.events.Head();
      outcome_.events.clear();
      return Finish(std::move(outcome_));
    }
    std::vector<events::Event> to_append = new_events_;
    // The version that decided must still be the active one when the append commits: Forget
    // waits for this gate after bumping the generation.
    ReaderLock gate(rt_.append_gate);
    if (rt_.CommandGeneration(name_) != generation_) {
      gate.Unlock();
      return Supersede();
    }
    auto appended = rt_.events.Append(std::move(to_append), condition_);
    gate.Unlock();
    if (appended.ok()) {
      outcome_.position = *appended;
      outcome_.events.clear();
      events::Position first = *appended - new_events_.size() + 1;
      for (size_t i = 0; i < new_events_.size(); ++i) {
        outcome_.events.push_back({first + i, std::move(new_events_[i])});
      }
      return Finish(std::move(outcome_));
    }
    if (appended.status().code() != Code::kConflict ||
        attempt_ >= rt_.options.command_max_retries) {
      if (appended.status().code() == Code::kConflict) {
        return Finish(Status::Conflict(fmt::format(
            "command {}: events matching its query kept being appended concurrently; gave up "
            "after {} attempts ({})",
            name_, attempt_ + 1, appended.status().message())));
      }
      return Finish(appended.status());
    }
    rt_.Count(name_, {.conflicts = 1});
    ReleaseQueryTurn();  // others may go while this one backs off
    uint64_t cap_ms = static_cast<uint64_t>(rt_.options.command_retry_base.count())
                      << std::min(attempt_, 10u);
    std::uniform_int_distribution<uint64_t> pick(0, std::max<uint64_t>(cap_ms * 1000, 1));
    thread_local std::mt19937_64 jitter{std::random_device{}()};  // seeded once per I/O thread
    ++attempt_;
    OnReactor([self = shared_from_this()] { self->Attempt(); },
              std::chrono::microseconds(pick(jitter)));
  }

  // A lifecycle change came in after the version was resolved: run again from the start.
  void Supersede() {
    ReleaseQueryTurn();
    if (++round_ < kMaxSuperseded) return Resolve();
    Finish(Status::Unavailable(
        fmt::format("commands/{}: its active version changed during the execution", name_)));
  }

  void ReleaseQueryTurn() {
    if (!query_turn_held_) return;
    query_turn_held_ = false;
    rt_.query_turns.Release(*query_turn_);
  }

  // ---- the end ----
  // Counts the outcome, records it under the idempotency key (on an I/O thread), answers.
  void Finish(Result<CommandOutcome> outcome, bool record = true) {
    ReleaseQueryTurn();
    if (!outcome.ok() && outcome.status().code() == Code::kDuplicateEventId &&
        !opts_.idempotency_key.empty() && record) {
      // Another process appended this key's events meanwhile (a shared store): its outcome.
      return OnIo([self = shared_from_this(), status = outcome.status()] {
        auto recovered = self->rt_.RecoverOutcome(self->name_, self->opts_.idempotency_key);
        if (recovered.ok() && *recovered) return self->Finish(std::move(**recovered));
        self->Finish(recovered.ok() ? Result<CommandOutcome>(status) : recovered.status(),
                     /*record=*/false);
      });
    }
    if (!outcome.ok()) {
      if (outcome.status().code() != Code::kNotFound) {
        rt_.Count(name_, {.failed = 1, .last_error = outcome.status().message()});
      }
      return Answer(std::move(outcome));
    }
    if (!outcome->replayed) {
      bool rejected = outcome->kind == CommandOutcome::Kind::kRejected;
      rt_.Count(name_, {.appended = rejected ? 0u : 1u, .rejected = rejected ? 1u : 0u});
    }
    if (opts_.idempotency_key.empty() || !record) return Answer(std::move(outcome));
    auto shared = std::make_shared<Result<CommandOutcome>>(std::move(outcome));
    OnIo([self = shared_from_this(), shared] {
      self->rt_.SaveResult(self->name_, self->opts_.idempotency_key, OutcomeJson(**shared));
      self->Answer(std::move(*shared));
    });
  }

  void Answer(Result<CommandOutcome> outcome) {
    CommandDone done = std::move(done_);
    done_ = nullptr;
    if (key_held_) {
      key_held_ = false;
      rt_.key_turns.Release(TurnKey());
    }
    done(std::move(outcome));
    rt_.Leave();
  }

  Impl& rt_;
  const std::string name_;
  const Value input_;
  const ExecuteOptions opts_;
  CommandDone done_;
  const uint32_t reactor_;
  bool key_held_ = false;
  int round_ = 0;

  // Resolved (ResolveOnIo).
  uint64_t generation_ = 0;
  store::ActiveModule active_;
  std::shared_ptr<const wasm::Module> module_;
  std::map<std::string, std::string> env_;
  bool fold_ignores_input_ = false;
  int64_t now_ = 0;

  // The attempt.
  uint32_t attempt_ = 0;
  ModuleCallContext ctx_;                     // the attempt's, between its guest calls
  bool tier_noted_ = false;                   // the attempt's tier is in command_counters
  std::unique_ptr<ModuleInstance> instance_;  // this reactor's, during one guest call
  Value state_;
  events::Query query_;
  std::vector<uint8_t> query_bytes_;
  std::optional<std::string> query_turn_;
  bool query_turn_held_ = false;
  std::optional<events::AppendCondition> condition_;
  detail::FoldCache::Key fold_key_{};
  uint64_t cache_epoch_ = 0;
  events::Position from_ = 1, head_ = 0, fold_start_ = 1;
  std::vector<events::Event> new_events_;
  CommandOutcome outcome_;
};

void ModuleRuntime::ExecuteAsync(std::string_view name, Value input, ExecuteOptions options,
                                 CommandDone done) {
  const std::string& key = options.idempotency_key;
  if (!key.empty()) {
    if (key.size() > 256) {
      return done(Status::InvalidArgument("the idempotency key is longer than 256 bytes"));
    }
    if (auto bad = FindInvalidUtf8(key)) {
      return done(Status::InvalidArgument(
          fmt::format("the idempotency key is not valid UTF-8 (byte {}); nothing was run", *bad)));
    }
  }
  // Its reactor: the next Up one (a drained reactor takes no new executions).
  auto reactor = impl_->fleet->PlaceWork();
  if (!reactor.ok()) {
    return done(Status::Unavailable(
        fmt::format("commands/{}: no reactor takes work: {}", name, reactor.status().message())));
  }
  if (Status entered = impl_->Enter(fmt::format("commands/{}", name)); !entered.ok()) {
    return done(entered);
  }
  auto execution = std::make_shared<Impl::Execution>(
      *impl_, *reactor, std::string(name), std::move(input), std::move(options), std::move(done));
  execution->Start();
}

Result<CommandOutcome> ModuleRuntime::Execute(std::string_view name, const Value& input,
                                              const ExecuteOptions& options) {
  std::promise<Result<CommandOutcome>> answered;
  auto outcome = answered.get_future();
  ExecuteAsync(name, input, options, [&answered](Result<CommandOutcome> result) {
    answered.set_value(std::move(result));
  });
  return outcome.get();
}

}  // namespace reef::apps
