// Host operations of the actor runtime: spawn, sends, ticks, lifecycle, repair, inspect.
#include "actor/runtime.h"

#include <fmt/format.h>

#include <algorithm>
#include <future>
#include <thread>

#include "actor/detail/runtime_state.h"
#include "core/limits.h"

namespace reef::actor {

Runtime::State::State(RuntimeOptions opts)
    : options(std::move(opts)),
      default_group(std::make_shared<ActorGroup>(options.mode, 0, options.log_options)) {}

std::shared_ptr<ActorCell> Runtime::State::FindCell(const ActorRef& ref, const ActorGroup* group) {
  ReaderLock lock(directory_mu);
  auto it = directory.find(ref);
  if (it == directory.end() || (group != nullptr && it->second->group.get() != group)) {
    return nullptr;
  }
  return it->second;
}

bool Runtime::State::Ticked(const Actor& actor) const {
  return options.mode == SchedulingMode::kFreeRunning &&
         actor.cell->group->mode == SchedulingMode::kManual;
}

std::shared_ptr<CallSlot> Runtime::State::FindCall(const ActorRef& ref) {
  MutexLock lock(calls_mu);
  auto it = calls.find(ref);
  return it == calls.end() ? nullptr : it->second;
}

void Runtime::State::RetireCall(const ActorRef& ref) {
  MutexLock lock(calls_mu);
  calls.erase(ref);
}

Status Runtime::State::OnReactor(Reactor& reactor, const std::function<Status(Reactor&)>& fn) {
  if (options.mode == SchedulingMode::kManual) {
    std::lock_guard lock(manual_mu);
    return fn(reactor);
  }
  if (CurrentReactor() == &reactor) return fn(reactor);
  // `fn` refers to the caller's frame, so it must never run after this returns: a call that
  // times out is withdrawn when it has not started, and waited for when it has (it runs to
  // its end on the reactor). Either way an Unavailable answer means `fn` did not run.
  struct Call {
    enum class State { kQueued, kRunning, kDone, kWithdrawn };
    Mutex mu;
    CondVar changed;  // signalled when state becomes kDone
    State state GUARDED_BY(mu) = State::kQueued;
    Status result GUARDED_BY(mu);
  };
  auto call = std::make_shared<Call>();
  reactor.Post([fn, call](Reactor& r) {
    {
      MutexLock lock(call->mu);
      if (call->state == Call::State::kWithdrawn) return;
      call->state = Call::State::kRunning;
    }
    Status result = fn(r);
    MutexLock lock(call->mu);
    call->result = std::move(result);
    call->state = Call::State::kDone;
    call->changed.NotifyAll();
  });
  MutexLock lock(call->mu);
  const auto deadline = std::chrono::steady_clock::now() + options.call_timeout;
  while (call->state != Call::State::kDone) {
    if (call->changed.WaitUntil(call->mu, deadline) == std::cv_status::timeout) break;
  }
  if (call->state == Call::State::kQueued) {
    call->state = Call::State::kWithdrawn;
    return Status::Unavailable(fmt::format("reactor {} did not answer within {} ms", reactor.id,
                                           options.call_timeout.count()));
  }
  while (call->state != Call::State::kDone) call->changed.Wait(call->mu);  // it runs to its end
  return call->result;
}

Status Runtime::State::OnActor(const ActorRef& ref,
                               const std::function<Status(Reactor&, Actor&)>& fn) {
  auto cell = FindCell(ref);
  if (!cell) return Status::NotFound(fmt::format("no actor @{}", ref.str()));
  // The actor may move (drain) between the lookup and the command: follow it.
  for (int attempt = 0; attempt < 200; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    Reactor& owner = *reactors[cell->reactor.load(std::memory_order_acquire)];
    bool moved = false;
    Status status = OnReactor(owner, [&](Reactor& r) {
      auto it = r.actors.find(ref);
      if (it == r.actors.end()) {
        // Removed since the lookup (its directory entry goes after its reactor's): no actor.
        if (cell->removed.load(std::memory_order_acquire)) {
          return Status::NotFound(fmt::format("no actor @{}", ref.str()));
        }
        moved = true;
        return Status::Ok();
      }
      return fn(r, *it->second);
    });
    if (!moved) return status;
  }
  return Status::Unavailable(fmt::format("actor @{} kept moving between reactors", ref.str()));
}

// ---------------------------------------------------------------------------------------
// Creation

Runtime::Runtime(std::unique_ptr<State> state) : state_(std::move(state)) {}

Runtime::~Runtime() {
  state_->StopThreads();
}

Result<std::shared_ptr<Runtime>> Runtime::CreateFleet(uint32_t reactors) {
  RuntimeOptions options;
  options.mode = SchedulingMode::kFreeRunning;
  options.reactors = reactors != 0 ? reactors : std::max(2u, std::thread::hardware_concurrency());
  REEF_ASSIGN_OR_RETURN(auto fleet, Create(options));
  return std::shared_ptr<Runtime>(std::move(fleet));
}

Result<std::unique_ptr<Runtime>> Runtime::Create(RuntimeOptions options) {
  if (options.reactors == 0) return Status::InvalidArgument("reactors must be at least 1");
  if (options.default_mailbox_capacity == 0 || options.manual_slice == 0 ||
      options.free_slice == 0 || options.messages_per_turn == 0) {
    return Status::InvalidArgument(
        "mailbox capacity, slice budgets and messages per turn must be at least 1");
  }
  auto state = std::make_unique<State>(std::move(options));
  for (uint32_t i = 0; i < state->options.reactors; ++i) {
    state->reactors.push_back(std::make_unique<Reactor>(i, state->options));
  }
  state->StartThreads();
  return std::unique_ptr<Runtime>(new Runtime(std::move(state)));
}

std::unique_ptr<Actor> Runtime::State::NewActor(
    const ActorRef& ref, std::shared_ptr<const Implementation> implementation, CborValue state,
    uint32_t capacity, uint32_t reactor_id, std::shared_ptr<ActorGroup> group, LogLevel log_level) {
  auto actor = std::make_unique<Actor>();
  actor->cell = std::make_shared<ActorCell>(ref, capacity, reactor_id, std::move(group));
  actor->implementation = std::move(implementation);
  actor->state = std::move(state);
  actor->context = std::make_unique<ActorCallContext>(ActorCallContext{ref});
  actor->context->value_limits = options.value_limits;
  actor->context->transition_limits = options.transition_limits;
  actor->context->min_log_level = log_level;
  Actor* raw = actor.get();
  actor->context->on_log = [this, raw](LogLevel level, const std::string& message) {
    auto seq = raw->cell->group->logs.Append(raw->cell->ref, raw->incarnation, level, message);
    if (seq.ok()) {
      Publish(LifecycleKind::kLog, *raw, fmt::format("{}: {}", LogLevelName(level), message));
    }
  };
  actor->context->on_call = [this, raw](const ActorRef& target, CborValue message,
                                        std::chrono::milliseconds timeout) {
    return StartActorCall(*raw, target, std::move(message), timeout);
  };
  return actor;
}

Result<ActorRef> Runtime::Spawn(std::shared_ptr<const Implementation> implementation, Value initial,
                                const SpawnOptions& options) {
  State& s = *state_;
  if (!implementation) return Status::InvalidArgument("spawn needs an implementation");
  auto encoded = CborValue::Encode(initial, s.options.value_limits);
  if (!encoded.ok()) return encoded.status().WithContext("initial state");
  uint32_t capacity = options.mailbox_capacity.value_or(s.options.default_mailbox_capacity);
  if (capacity == 0) return Status::InvalidArgument("mailbox capacity must be at least 1");
  if (options.tag.size() > kMaxTagBytes) {
    return Status::InvalidArgument(fmt::format("an actor's tag is at most {} bytes", kMaxTagBytes));
  }
  std::shared_ptr<ActorGroup> group = options.group ? options.group : s.default_group;
  REEF_ASSIGN_OR_RETURN(Reactor * reactor, s.Place(options, *group));
  REEF_ASSIGN_OR_RETURN(ActorRef ref, ActorRef::Generate());

  std::unique_ptr<Actor> actor = s.NewActor(ref, std::move(implementation), *encoded, capacity,
                                            reactor->id, group, options.log_level);
  if (options.failure_policy == FailurePolicy::kReset) actor->reset_state = *encoded;
  actor->tag = options.tag;
  const bool post = s.options.mode == SchedulingMode::kFreeRunning && CurrentReactor() != reactor;
  if (post && s.shutting_down.load(std::memory_order_acquire)) {
    return Status::Unavailable("the actor runtime is shutting down");
  }
  std::shared_ptr<ActorCell> cell = actor->cell;
  // Published here, before the actor can act, so a spawn that returned has its event (and it
  // precedes every event of the actor).
  s.Publish(LifecycleKind::kSpawned, *actor, actor->implementation->id);
  auto owned = std::make_shared<std::unique_ptr<Actor>>(std::move(actor));
  auto insert = [&s, owned, ref](Reactor& r) {
    Actor& a = **owned;
    r.actors.emplace(ref, std::move(*owned));
    if (a.cell->group->mode == SchedulingMode::kManual) {
      a.cell->group->members.insert(ref);
      a.joined_at_tick = a.cell->group->ticks_started;
    }
    s.RecordActor(a, /*spawned=*/true);  // here, on the owner, in order with its other records
  };
  reactor->actor_count.fetch_add(1);
  if (post) {
    // The insertion is posted before the ref is findable, so anything that finds it (a send,
    // an inspect, a kill: all posted to the same reactor) comes after it in the reactor's
    // queue: the caller need not wait for the round trip (spawn rate, spec 003).
    reactor->Post(std::move(insert));
    WriterLock lock(s.directory_mu);
    s.directory.emplace(ref, std::move(cell));
    return ref;
  }
  {
    WriterLock lock(s.directory_mu);
    s.directory.emplace(ref, std::move(cell));
  }
  REEF_RETURN_IF_ERROR(s.OnReactor(*reactor, [&insert](Reactor& r) {
    insert(r);
    return Status::Ok();
  }));
  return ref;
}

// ---------------------------------------------------------------------------------------
// Inspection

namespace {

ActorSnapshot Snapshot(const Reactor& reactor, const Actor& a) {
  ActorSnapshot snap{a.cell->ref};
  snap.implementation_id = a.implementation->id;
  snap.implementation_label = a.implementation->label;
  snap.incarnation = a.incarnation;
  snap.status = a.status;
  snap.paused_from = a.paused_from;
  snap.state = a.state.ToValue();
  snap.reserved = a.reserved;
  snap.queued.assign(a.queued.begin(), a.queued.end());
  snap.mailbox_capacity = a.cell->capacity.load();
  if (a.active) snap.telemetry = a.active->invocation->telemetry();
  snap.stopping = a.stopping;
  if (a.pending_install) snap.pending_install = a.pending_install->id;
  snap.failure = a.failure;
  if (a.awaiting) {
    auto waited = std::chrono::steady_clock::now() - a.awaiting->started;
    snap.awaiting =
        AwaitedCall{a.awaiting->target,
                    static_cast<uint64_t>(
                        std::chrono::duration_cast<std::chrono::milliseconds>(waited).count()),
                    static_cast<uint64_t>(a.awaiting->timeout.count())};
  }
  snap.log_level = a.context->min_log_level;
  snap.reactor = reactor.id;
  snap.tier =
      a.active ? a.active->instance->tier() : reactor.engine.TierOf(*a.implementation->module);
  return snap;
}

}  // namespace

std::vector<ActorSnapshot> Runtime::List(const ActorGroup* group) {
  if (group == nullptr) group = state_->default_group.get();
  // Filled under all_mu by each reactor's thread in turn (a local: GUARDED_BY cannot mark it).
  std::vector<ActorSnapshot> all;
  Mutex all_mu;
  for (auto& reactor : state_->reactors) {
    Status listed = state_->OnReactor(*reactor, [&](Reactor& r) {
      MutexLock lock(all_mu);
      for (const auto& [ref, actor] : r.actors) {
        if (actor->cell->group.get() == group) all.push_back(Snapshot(r, *actor));
      }
      return Status::Ok();
    });
    (void)listed;  // a reactor that does not answer in time is left out
  }
  std::sort(all.begin(), all.end(),
            [](const ActorSnapshot& a, const ActorSnapshot& b) { return a.ref < b.ref; });
  return all;
}

Result<ActorSnapshot> Runtime::Inspect(const ActorRef& ref) {
  std::optional<ActorSnapshot> snap;
  REEF_RETURN_IF_ERROR(state_->OnActor(ref, [&](Reactor& r, Actor& a) {
    snap = Snapshot(r, a);
    return Status::Ok();
  }));
  return std::move(*snap);
}

Result<MailboxUsage> Runtime::Mailbox(const ActorRef& ref) {
  auto cell = state_->FindCell(ref);
  if (!cell) return Status::NotFound(fmt::format("no actor @{}", ref.str()));
  return MailboxUsage{cell->used.load(), cell->capacity.load(), cell->status.load(),
                      cell->incarnation.load()};
}

// ---------------------------------------------------------------------------------------
// Host sends

Status CheckTarget(const std::shared_ptr<ActorCell>& cell, const ActorRef& target) {
  if (!cell) return Status::NotFound(fmt::format("no actor @{}", target.str()));
  if (!cell->Accepting()) {
    return Status::FailedPrecondition(fmt::format("@{} is {} and takes no messages", target.str(),
                                                  ActorStatusName(cell->status.load())));
  }
  return Status::Ok();
}

// One attempt to queue `message`; it is moved from only when that succeeds.
static Status SendAs(Runtime::State& s, const ActorRef& target, CborValue& message,
                     std::optional<ActorRef> sender) {
  auto cell = s.FindCell(target);
  REEF_RETURN_IF_ERROR(CheckTarget(cell, target));
  if (!cell->Reserve(1)) {
    return Status::LimitExceeded(
        fmt::format("mailbox of @{} is full ({} messages)", target.str(), cell->capacity.load()));
  }
  if (cell->removed.load()) {  // Remove ran between the lookup and the reservation
    cell->Release(1);
    return Status::NotFound(fmt::format("no actor @{}", target.str()));
  }
  s.Route(cell, Envelope{sender, std::move(message)});
  return Status::Ok();
}

// One attempt of a host send (no sender), under manual_mu in manual mode.
static Status SendFromHost(Runtime::State& s, const ActorRef& target, CborValue& message) {
  std::unique_lock lock(s.manual_mu, std::defer_lock);
  if (s.options.mode == SchedulingMode::kManual) lock.lock();
  return SendAs(s, target, message, std::nullopt);
}

SendOutcome Runtime::TrySend(const ActorRef& target, Value message) {
  auto encoded = CborValue::Encode(message, state_->options.value_limits);
  if (!encoded.ok()) return {encoded.status().WithContext("message"), std::move(message)};
  Status sent = SendFromHost(*state_, target, *encoded);
  if (!sent.ok()) return {std::move(sent), std::move(message)};
  return {Status::Ok(), std::nullopt};
}

SendOutcome Runtime::Send(const ActorRef& target, Value message,
                          std::chrono::milliseconds timeout) {
  // Encoded once, so a LimitExceeded below can only mean a full mailbox: a message over the
  // value limits fails at once instead of being retried until the timeout.
  auto encoded = CborValue::Encode(message, state_->options.value_limits);
  if (!encoded.ok()) return {encoded.status().WithContext("message"), std::move(message)};
  auto deadline = std::chrono::steady_clock::now() + timeout;
  auto pause = std::chrono::microseconds(20);
  for (;;) {
    Status sent = SendFromHost(*state_, target, *encoded);
    if (sent.ok()) return {Status::Ok(), std::nullopt};
    if (sent.code() != Code::kLimitExceeded || state_->options.mode == SchedulingMode::kManual ||
        std::chrono::steady_clock::now() >= deadline) {
      if (sent.code() == Code::kLimitExceeded &&
          state_->options.mode == SchedulingMode::kFreeRunning) {
        sent = Status::Unavailable(
            fmt::format("mailbox of @{} stayed full for {} ms", target.str(), timeout.count()));
      }
      return {std::move(sent), std::move(message)};
    }
    // Capacity frees as the owner's reactor acknowledges input; poll with backoff.
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(2'000));
  }
}

Result<Value> Runtime::Call(const ActorRef& target, Value message,
                            std::chrono::milliseconds timeout, ReplyPolicy reply_policy,
                            bool* queued) {
  if (queued != nullptr) *queued = false;
  State& s = *state_;
  if (s.options.mode == SchedulingMode::kManual) {
    return Status::FailedPrecondition(
        "Call waits for the handler, which needs free-running mode; in manual mode use "
        "TrySend and Tick");
  }
  // A reactor thread that waits cannot run its own actors. Record the wait first, then
  // follow the wait-for edges: if they lead back here, this call closes a cycle (A calls B
  // calls A) and fails now instead of hanging until the timeout.
  Reactor* here = CurrentReactor();
  if (here != nullptr) {
    auto cell = s.FindCell(target);
    if (cell) {
      int32_t next = static_cast<int32_t>(cell->reactor.load());
      here->waiting_for.store(next);
      std::string path = fmt::format("reactor {}", here->id);
      for (size_t hops = 0; next >= 0 && hops <= s.reactors.size(); ++hops) {
        path += fmt::format(" -> reactor {}", next);
        if (next == static_cast<int32_t>(here->id)) {
          here->waiting_for.store(-1);
          return Status::FailedPrecondition(fmt::format(
              "call cycle: {} (calling @{} would wait for a reactor that waits for this one)", path,
              target.str()));
        }
        next = s.reactors[static_cast<size_t>(next)]->waiting_for.load();
      }
    }
  }
  struct ClearWait {
    Reactor* reactor;
    ~ClearWait() {
      if (reactor) reactor->waiting_for.store(-1);
    }
  } clear_wait{here};
  auto answer = std::make_shared<std::promise<std::pair<Result<Value>, bool>>>();
  auto future = answer->get_future();
  CallAsync(target, std::move(message), timeout, reply_policy,
            [answer](Result<Value> reply, bool was_queued) {
              answer->set_value({std::move(reply), was_queued});
            });
  // CallAsync answers by its deadline (a timer on the target's reactor) or at shutdown; the
  // extra wait only guards against a reactor that stopped turning.
  if (future.wait_for(timeout + s.options.call_timeout) != std::future_status::ready) {
    return Status::Unavailable(
        fmt::format("no reply from @{} within {} ms", target.str(), timeout.count()));
  }
  auto [reply, was_queued] = future.get();
  if (queued != nullptr) *queued = was_queued;
  return std::move(reply);
}

namespace {

// SendAsync and CallAsync in free-running mode: encodes `message` once up front (so a
// LimitExceeded from a send attempt can only mean a full mailbox) and starts `slot`, whose
// reply arrives as bytes and reaches `done` as a Value.
void StartFromHost(Runtime::State& s, std::shared_ptr<CallSlot> slot, const ActorRef& target,
                   const Value& message, std::chrono::milliseconds timeout,
                   Runtime::HostDone done) {
  auto encoded = CborValue::Encode(message, s.options.value_limits);
  if (!encoded.ok()) return done(encoded.status().WithContext("message"), false);
  slot->on_done = [done = std::move(done)](Result<CborValue> reply, bool queued) {
    if (!reply.ok()) return done(reply.status(), queued);
    done(reply->ToValue(), queued);
  };
  s.StartHostSend(std::move(slot), target, std::move(*encoded), timeout);
}

}  // namespace

void Runtime::SendAsync(const ActorRef& target, Value message, std::chrono::milliseconds timeout,
                        HostDone done) {
  State& s = *state_;
  if (s.options.mode == SchedulingMode::kManual) {
    // Nothing makes room while this waits (Send): one attempt.
    Status sent = TrySend(target, std::move(message)).status;
    if (sent.ok()) return done(Value::Null(), true);
    return done(sent, false);
  }
  auto slot = std::make_shared<CallSlot>();
  slot->wants_reply = false;
  StartFromHost(s, std::move(slot), target, message, timeout, std::move(done));
}

void Runtime::CallAsync(const ActorRef& target, Value message, std::chrono::milliseconds timeout,
                        ReplyPolicy reply, HostDone done) {
  State& s = *state_;
  if (s.options.mode == SchedulingMode::kManual) {
    return done(Status::FailedPrecondition(
                    "Call waits for the handler, which needs free-running mode; in manual mode "
                    "use TrySend and Tick"),
                false);
  }
  auto slot = std::make_shared<CallSlot>();
  slot->reply = reply;
  StartFromHost(s, std::move(slot), target, message, timeout, std::move(done));
}

namespace {

// The reactor that keeps the timers of a host send to `target`: the target's owner, so the
// retries and the deadline run where the reply comes from.
Reactor& TimerHome(Runtime::State& s, const ActorRef& target) {
  auto cell = s.FindCell(target);
  return *s.reactors[cell ? cell->reactor.load(std::memory_order_acquire) : 0];
}

}  // namespace

void Runtime::State::StartHostSend(std::shared_ptr<CallSlot> slot, const ActorRef& target,
                                   CborValue message, std::chrono::milliseconds timeout) {
  auto address = ActorRef::GenerateReplyAddress();
  if (!address.ok()) return (void)slot->Complete(address.status());
  // Whoever completes the slot (the reply, a timer, a kill, shutdown) ends its registration.
  slot->on_done = [this, address = *address, done = std::move(slot->on_done)](
                      Result<CborValue> reply, bool queued) {
    RetireCall(address);
    done(std::move(reply), queued);
  };
  {
    MutexLock lock(calls_mu);
    // Read under calls_mu: FailPendingHostCalls takes the lock after setting the flag, so a
    // slot is either failed by it or never registered.
    if (shutting_down.load(std::memory_order_acquire)) {
      lock.Unlock();
      return (void)slot->Complete(Status::Unavailable("the actor runtime is shutting down"));
    }
    calls.emplace(*address, slot);
  }
  TryHostSend(std::move(slot), *address, target, std::make_shared<CborValue>(std::move(message)),
              std::chrono::steady_clock::now() + timeout, timeout, std::chrono::microseconds(20));
}

void Runtime::State::TryHostSend(std::shared_ptr<CallSlot> slot, const ActorRef& address,
                                 const ActorRef& target, std::shared_ptr<CborValue> message,
                                 Reactor::TimePoint deadline, std::chrono::milliseconds timeout,
                                 std::chrono::microseconds pause) {
  if (slot->done.load(std::memory_order_acquire)) return;
  std::optional<ActorRef> sender;
  if (slot->wants_reply) sender = address;
  // Set first: the reply can complete the slot on the target's reactor before SendAs returns.
  slot->queued.store(true, std::memory_order_release);
  // Moved from only when queued; a retry sends it again otherwise.
  Status sent = SendAs(*this, target, *message, sender);
  if (!sent.ok()) slot->queued.store(false, std::memory_order_release);
  if (sent.ok()) {
    if (!slot->wants_reply) return (void)slot->Complete(CborValue());
    // The deadline holds the slot weakly: an answered call's timer is moot and is swept.
    std::weak_ptr<CallSlot> weak = slot;
    TimerHome(*this, target).AddTimer(deadline, slot, [weak, target, timeout](Reactor&) {
      if (auto pending = weak.lock()) {
        pending->Complete(Status::Unavailable(
            fmt::format("no reply from @{} within {} ms", target.str(), timeout.count())));
      }
    });
    return;
  }
  if (sent.code() != Code::kLimitExceeded) return (void)slot->Complete(sent);
  auto now = std::chrono::steady_clock::now();
  if (now >= deadline) {
    return (void)slot->Complete(Status::Unavailable(
        fmt::format("mailbox of @{} stayed full for {} ms", target.str(), timeout.count())));
  }
  // Capacity frees as the owner's reactor acknowledges input: try again a little later.
  auto next_pause = std::min(pause * 2, std::chrono::microseconds(2'000));
  TimerHome(*this, target)
      .AddTimer(std::min<Reactor::TimePoint>(now + pause, deadline), slot,
                [this, slot, address, target, message, deadline, timeout, next_pause](Reactor&) {
                  TryHostSend(slot, address, target, message, deadline, timeout, next_pause);
                });
}

void Runtime::FailPendingCalls(const std::string& why) {
  state_->FailPendingHostCalls(why);
}

void Runtime::State::FailPendingHostCalls(const std::string& why) {
  std::vector<std::shared_ptr<CallSlot>> pending;
  {
    MutexLock lock(calls_mu);
    for (const auto& [address, slot] : calls) {
      if (slot->from_host) pending.push_back(slot);
    }
  }
  for (auto& slot : pending) {
    slot->Complete(Status::Unavailable(why));
  }
}

LogStore& Runtime::logs() {
  return state_->default_group->logs;
}
LifecycleEvents& Runtime::events() {
  return state_->default_group->events;
}
const RuntimeOptions& Runtime::options() const {
  return state_->options;
}
uint64_t Runtime::LateReplies(const ActorGroup* group) const {
  if (group == nullptr) group = state_->default_group.get();
  return group->late_replies.load(std::memory_order_relaxed);
}

void Runtime::CollectMetrics(std::string_view name, MetricFamilies& out,
                             const ActorGroup* group) const {
  static constexpr MetricDesc kLateReplies{
      "reef_actor_late_replies_total", MetricType::kCounter,
      "Replies dropped because their call had ended (timed out, or the caller was stopped, "
      "killed, restarted or cancelled), since the runtime started."};
  out.Add(kLateReplies, {{"runtime", std::string(name)}}, LateReplies(group));
}

}  // namespace reef::actor
