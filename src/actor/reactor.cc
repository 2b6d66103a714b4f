// Reactors: placement, routing between reactors, and the free-running loop (spec 003).
#include <fmt/format.h>

#include <algorithm>
#include <future>

#include "actor/detail/runtime_state.h"
#include "core/spin_wait.h"

namespace reef::actor {

namespace {
// The reactor whose thread is running this code, if any (free-running mode).
thread_local Reactor* tls_reactor = nullptr;
}  // namespace

Reactor* CurrentReactor() {
  return tls_reactor;
}

bool ActorCell::Reserve(uint32_t n) {
  uint32_t current = used.load(std::memory_order_acquire);
  do {
    if (current + n > capacity.load(std::memory_order_acquire)) return false;
  } while (!used.compare_exchange_weak(current, current + n, std::memory_order_acq_rel));
  return true;
}

bool CallSlot::Complete(Result<CborValue> result) {
  if (done.exchange(true)) return false;
  Done done_fn = std::move(on_done);
  if (done_fn) done_fn(std::move(result), queued.load(std::memory_order_acquire));
  return true;
}

std::string_view ReactorLivenessName(ReactorLiveness liveness) {
  switch (liveness) {
    case ReactorLiveness::kUp:
      return "up";
    case ReactorLiveness::kDraining:
      return "draining";
    case ReactorLiveness::kDown:
      return "down";
  }
  return "?";
}

Reactor::Reactor(uint32_t reactor_id, const RuntimeOptions& options)
    : id(reactor_id), engine(AbiV1Registry(), options.engine_limits) {}

void Reactor::Post(Command command) {
  {
    MutexLock lock(mu_);
    commands_.push_back(std::move(command));
    posted_.store(commands_.size(), std::memory_order_release);
  }
  cv_.NotifyOne();
}

void Reactor::TakeCommands(bool idle, std::chrono::steady_clock::duration timeout,
                           std::vector<Command>* taken) {
  taken->clear();
  if (idle) {
    SpinBriefly([this] { return posted_.load(std::memory_order_acquire) != 0; },
                std::min<std::chrono::steady_clock::duration>(timeout, kSpinBeforeSleep));
  } else if (posted_.load(std::memory_order_acquire) == 0) {
    return;  // a busy reactor checks for commands on every turn: no lock when there are none
  }
  MutexLock lock(mu_);
  if (idle && commands_.empty()) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (commands_.empty()) {
      if (cv_.WaitUntil(mu_, deadline) == std::cv_status::timeout) break;
    }
  }
  taken->swap(commands_);
  posted_.store(0, std::memory_order_release);
}

void Reactor::AddTimer(TimePoint at, std::weak_ptr<void> owner, Command fire) {
  if (tls_reactor == this) {
    timers.emplace(at, Timer{std::move(owner), std::move(fire)});
    return;
  }
  Post([at, owner = std::move(owner), fire = std::move(fire)](Reactor& r) mutable {
    r.timers.emplace(at, Timer{std::move(owner), std::move(fire)});
  });
}

std::chrono::steady_clock::duration Reactor::FireDueTimers(
    std::chrono::steady_clock::duration cap) {
  if (timers.empty()) return cap;  // a busy reactor comes here twice a turn: no clock read
  auto now = std::chrono::steady_clock::now();
  while (!timers.empty() && timers.begin()->first <= now) {
    Timer timer = std::move(timers.begin()->second);
    timers.erase(timers.begin());
    if (!timer.owner.expired()) timer.fire(*this);
  }
  // Timers whose owner ended (a call answered long before its deadline) are dropped in one
  // sweep whenever their number doubled, so waiting deadlines cost memory in proportion to
  // the calls still open.
  if (timers.size() > 2 * timers_after_sweep + 1024) {
    std::erase_if(timers, [](const auto& entry) { return entry.second.owner.expired(); });
    timers_after_sweep = timers.size();
  }
  if (timers.empty()) return cap;
  return std::min<std::chrono::steady_clock::duration>(cap, timers.begin()->first - now);
}

Status Runtime::Post(uint32_t reactor, std::function<void()> work,
                     std::chrono::microseconds delay) {
  if (reactor >= state_->reactors.size()) {
    return Status::NotFound(
        fmt::format("no reactor {} (there are {})", reactor, state_->reactors.size()));
  }
  if (state_->options.mode != SchedulingMode::kFreeRunning) {
    return Status::FailedPrecondition("host work runs on free-running reactors only");
  }
  if (state_->shutting_down.load(std::memory_order_acquire)) {
    return Status::Unavailable("the actor runtime is shutting down");
  }
  Reactor& target = *state_->reactors[reactor];
  // Work destroyed unrun (the runtime stopping) stays counted as waiting: nobody asks then.
  target.tasks_waiting.fetch_add(1, std::memory_order_relaxed);
  auto run = [work = std::move(work)](Reactor& r) {
    r.tasks_waiting.fetch_sub(1, std::memory_order_relaxed);
    r.tasks_run.fetch_add(1, std::memory_order_relaxed);
    work();
  };
  if (delay.count() <= 0) {
    target.Post(std::move(run));
  } else {
    target.AddTimer(std::chrono::steady_clock::now() + delay, state_->timer_owner, std::move(run));
  }
  return Status::Ok();
}

Status Runtime::PostAndWait(uint32_t reactor, std::function<void()> work) {
  // Answers false when the task is destroyed unrun (the runtime stopping), so the wait ends.
  struct Answer {
    std::promise<bool> ran;
    bool answered = false;
    ~Answer() {
      if (!answered) ran.set_value(false);
    }
  };
  auto answer = std::make_shared<Answer>();
  std::future<bool> ran = answer->ran.get_future();
  REEF_RETURN_IF_ERROR(Post(reactor, [answer, &work] {
    work();
    answer->answered = true;
    answer->ran.set_value(true);
  }));
  answer.reset();
  if (!ran.get()) return Status::Unavailable("the actor runtime stopped before the work ran");
  return Status::Ok();
}

uint32_t Runtime::ReactorCount() const {
  return static_cast<uint32_t>(state_->reactors.size());
}

Result<uint32_t> Runtime::PlaceWork() {
  SpawnOptions round_robin;
  round_robin.placement = PlacementPolicy::kRoundRobin;
  REEF_ASSIGN_OR_RETURN(Reactor * reactor, state_->Place(round_robin, *state_->default_group));
  return reactor->id;
}

Result<Reactor*> Runtime::State::Place(const SpawnOptions& spawn, const ActorGroup& group) {
  if (options.mode == SchedulingMode::kFreeRunning && group.mode == SchedulingMode::kManual) {
    if (spawn.reactor && *spawn.reactor != group.home) {
      return Status::InvalidArgument(fmt::format(
          "the actors of this group live on reactor {}, not {}", group.home, *spawn.reactor));
    }
    return reactors[group.home].get();
  }
  if (spawn.reactor) {
    if (*spawn.reactor >= reactors.size()) {
      return Status::NotFound(
          fmt::format("no reactor {} (there are {})", *spawn.reactor, reactors.size()));
    }
    Reactor& chosen = *reactors[*spawn.reactor];
    if (chosen.liveness.load() != ReactorLiveness::kUp) {
      return Status::FailedPrecondition(
          fmt::format("reactor {} is {}; new actors go to Up reactors only", chosen.id,
                      ReactorLivenessName(chosen.liveness.load())));
    }
    return &chosen;
  }
  PlacementPolicy policy = spawn.placement.value_or(options.placement);
  Reactor* best = nullptr;
  size_t n = reactors.size();
  uint32_t start = policy == PlacementPolicy::kRoundRobin ? round_robin.fetch_add(1) : 0;
  for (size_t i = 0; i < n; ++i) {
    Reactor& r = *reactors[(start + i) % n];
    if (r.liveness.load() != ReactorLiveness::kUp) continue;
    if (policy == PlacementPolicy::kRoundRobin) return &r;
    if (best == nullptr || r.actor_count.load() < best->actor_count.load()) best = &r;
  }
  if (best == nullptr) return Status::FailedPrecondition("no reactor is Up");
  return best;
}

void Runtime::State::MarkRunnable(Reactor& reactor, Actor& actor) {
  if (actor.cell->group->mode == SchedulingMode::kManual) {
    actor.cell->group->ready.insert(actor.cell->ref);  // Tick runs it
    return;
  }
  if (options.mode != SchedulingMode::kFreeRunning) return;
  if (actor.in_run_queue) return;
  actor.in_run_queue = true;
  reactor.run_queue.push_back(actor.cell->ref);
}

namespace {

// The reactor a message to `cell` goes to now: its owner, or where it is moving (waits while
// another reactor moves it).
Reactor* RouteTarget(Runtime::State& s, ActorCell& cell) REQUIRES(cell.route_mu) {
  Reactor* owner = s.reactors[cell.reactor.load(std::memory_order_acquire)].get();
  while (cell.moving && tls_reactor != owner) {
    cell.route_cv.WaitFor(cell.route_mu, std::chrono::milliseconds(5));
    owner = s.reactors[cell.reactor.load(std::memory_order_acquire)].get();
  }
  // The old owner itself forwards straight to the new one while the move is in progress.
  return cell.moving ? s.reactors[cell.moving_to].get() : owner;
}

// Runs `wait` on `cell`'s owner behind every message routed to it before, following it when
// it moves (free-running; Runtime::WhenDurable).
void RouteWait(Runtime::State& s, const std::shared_ptr<ActorCell>& cell,
               std::function<void()> wait) {
  MutexLock lock(cell->route_mu);
  Reactor* target = RouteTarget(s, *cell);
  target->Post([&s, cell, wait = std::move(wait)](Reactor& r) mutable {
    if (r.actors.contains(cell->ref) || cell->removed.load()) return wait();
    RouteWait(s, cell, std::move(wait));  // it moved away: follow it, as Route does
  });
}

}  // namespace

void Runtime::State::Route(const std::shared_ptr<ActorCell>& cell, Envelope envelope,
                           uint64_t origin) {
  if (options.mode == SchedulingMode::kManual) {  // one thread drives every reactor
    Reactor& owner = *reactors[cell->reactor.load(std::memory_order_acquire)];
    auto it = owner.actors.find(cell->ref);
    if (it != owner.actors.end()) Deliver(owner, *it->second, std::move(envelope), origin);
    return;
  }
  // Choosing the reactor and posting happen under route_mu, so a move (Drain) is ordered
  // against every send: before it (delivered or forwarded by the old owner), or after it.
  MutexLock lock(cell->route_mu);
  Reactor* target = RouteTarget(*this, *cell);
  if (target == tls_reactor) {
    auto it = target->actors.find(cell->ref);
    if (it != target->actors.end()) {
      Deliver(*target, *it->second, std::move(envelope), origin);
      return;
    }
  }
  auto shared = std::make_shared<Envelope>(std::move(envelope));
  target->Post([this, cell, shared, origin](Reactor& r) {
    auto it = r.actors.find(cell->ref);
    if (it != r.actors.end()) {
      Deliver(r, *it->second, std::move(*shared), origin);
    } else if (cell->removed.load()) {
      // Unreachable by construction (senders back off once `removed` is set); never loop.
      cell->Release(1);
    } else {
      Route(cell, std::move(*shared), origin);  // it moved away: the old owner forwards it
    }
  });
}

void Runtime::WhenDurable(const ActorGroup& group, const std::optional<ActorRef>& after,
                          std::function<void(Status)> done) {
  State& s = *state_;
  std::shared_ptr<DurableImage> durable = group.durable;
  if (!durable) return done(Status::Ok());
  // Answers once: from the journal, or with Unavailable when the wait is destroyed unrun (the
  // runtime stopping).
  struct Waiter {
    std::function<void(Status)> done;
    void Answer(Status status) {
      if (done) std::exchange(done, nullptr)(std::move(status));
    }
    ~Waiter() { Answer(Status::Unavailable("the runtime stopped before the change was durable")); }
  };
  auto waiter = std::make_shared<Waiter>();
  waiter->done = std::move(done);
  auto wait = [durable, waiter] {
    durable->WhenAppendedDurable([waiter](Status status) { waiter->Answer(std::move(status)); });
  };
  std::shared_ptr<ActorCell> cell = after ? s.FindCell(*after, &group) : nullptr;
  if (s.options.mode == SchedulingMode::kManual || (after && !cell) ||
      (cell && tls_reactor != nullptr && tls_reactor->actors.contains(*after))) {
    // Everything happens on the caller's thread; or the caller is the actor's owner, which
    // delivers its own sends inline and has appended whatever it did (a commit answering a
    // call); or the actor is gone: whatever reached it was appended before it went.
    return wait();
  }
  if (!cell) {
    if (group.mode != SchedulingMode::kManual) {  // no home: every reactor would be needed
      return waiter->Answer(
          Status::InvalidArgument("a free-running group's output gate needs the actor it is for"));
    }
    Status posted = Post(group.home, wait);
    if (!posted.ok()) waiter->Answer(posted);
    return;
  }
  RouteWait(s, cell, std::move(wait));
}

namespace {

// One turn of a free-running reactor: commands first, then one turn per runnable actor.
void Turn(Runtime::State& state, Reactor& reactor) {
  bool idle = reactor.run_queue.empty();
  auto next_timer = reactor.FireDueTimers(std::chrono::milliseconds(20));
  reactor.TakeCommands(idle, next_timer, &reactor.taken_commands);
  for (auto& command : reactor.taken_commands) command(reactor);
  reactor.taken_commands.clear();
  reactor.FireDueTimers(std::chrono::milliseconds(20));
  size_t n = reactor.run_queue.size();
  for (size_t i = 0; i < n && !state.shutting_down.load(); ++i) {
    ActorRef ref = reactor.run_queue.front();
    reactor.run_queue.pop_front();
    auto it = reactor.actors.find(ref);
    if (it == reactor.actors.end() || !it->second->in_run_queue) continue;  // stale
    Actor& actor = *it->second;
    actor.in_run_queue = false;
    actor.turn_commits = 0;
    uint64_t spent = 0;
    while (state.Runnable(actor) && spent < state.options.free_slice &&
           actor.turn_commits < state.options.messages_per_turn) {
      uint64_t charged = state.RunSlice(reactor, actor, state.options.free_slice - spent, nullptr);
      if (charged == 0 && !actor.active) break;
      spent += charged;
    }
    if (state.Runnable(actor)) state.MarkRunnable(reactor, actor);
  }
}

}  // namespace

void Runtime::State::StartThreads() {
  if (options.mode != SchedulingMode::kFreeRunning) return;
  for (auto& owned : reactors) {
    Reactor* reactor = owned.get();
    reactor->thread = std::thread([this, reactor] {
      tls_reactor = reactor;
      while (!shutting_down.load(std::memory_order_acquire)) Turn(*this, *reactor);
      // Invocations and instances end on the thread that ran them: a native invocation's
      // fiber unwinds through guest frames that expect this thread's state.
      for (auto& [ref, actor] : reactor->actors) DropInvocation(*reactor, *actor);
      reactor->pool.clear();
      reactor->engine.ReleaseThreadResources();
      tls_reactor = nullptr;
    });
  }
}

void Runtime::State::StopThreads() {
  shutting_down.store(true, std::memory_order_release);
  for (auto& reactor : reactors) {
    reactor->Post([](Reactor&) {});  // wake it
    if (reactor->thread.joinable()) reactor->thread.join();
  }
  FailPendingHostCalls();
}

}  // namespace reef::actor
