// Groups of actors (ActorGroup) and manual scheduling: Tick runs a manual group's actors one
// slice each in actor-ref order, inline under manual_mu in a manual runtime and as tasks of
// about a millisecond each on the group's home reactor in a free-running one.
#include <fmt/format.h>

#include <future>
#include <utility>

#include "actor/detail/runtime_state.h"

namespace reef::actor {

void Runtime::State::RunTick(ActorGroup& group, uint64_t budget, TickReport* report) {
  std::optional<ActorRef> last;
  RunTickPart(group, ++group.ticks_started, &last, budget, report,
              std::chrono::steady_clock::time_point::max());
}

bool Runtime::State::RunTickPart(ActorGroup& group, uint64_t tick, std::optional<ActorRef>* last,
                                 uint64_t budget, TickReport* report,
                                 std::chrono::steady_clock::time_point until) {
  for (;;) {
    auto next = *last ? group.ready.upper_bound(**last) : group.ready.begin();
    if (next == group.ready.end()) return true;
    const ActorRef ref = *next;
    *last = ref;
    auto cell = FindCell(ref);
    Actor* actor = nullptr;
    Reactor* reactor = nullptr;
    if (cell) {
      reactor = reactors[cell->reactor.load(std::memory_order_acquire)].get();
      auto it = reactor->actors.find(ref);
      if (it != reactor->actors.end()) actor = it->second.get();
    }
    if (actor == nullptr) {
      group.ready.erase(ref);  // removed
      continue;
    }
    if (actor->joined_at_tick >= tick) continue;  // joined during this tick: from the next one
    if (Runnable(*actor)) RunSlice(*reactor, *actor, budget, report);
    // Whatever makes it runnable again adds it back (MarkRunnable).
    if (!Runnable(*actor)) group.ready.erase(ref);
    if (std::chrono::steady_clock::now() >= until) {
      return group.ready.upper_bound(ref) == group.ready.end();
    }
  }
}

namespace {

// A Runtime::TickAsync in a free-running runtime: it hops from task to task on the home
// reactor, one part of a tick each (kTickPart of slices), so the reactor's other work (ops on
// actors, sends, host tasks, free-running actors) runs between two parts of a long tick
// rather than after it. Destroyed unrun (the runtime stopped), it answers Unavailable.
constexpr std::chrono::microseconds kTickPart{1'000};

struct TickRun {
  std::shared_ptr<ActorGroup> group;
  uint32_t left = 0;
  uint64_t budget = 0;
  TickReport report;
  std::function<bool()> keep_going;
  Runtime::TickDone done;
  // The tick in progress: its number (ActorGroup::ticks_started) and the last actor it gave
  // a slice to (RunTickPart).
  uint64_t tick = 0;
  std::optional<ActorRef> last;
  bool in_tick = false;

  TickRun() = default;
  TickRun(const TickRun&) = delete;
  TickRun& operator=(const TickRun&) = delete;
  ~TickRun() {
    if (done) done(Status::Unavailable("the actor runtime stopped before the ticks ran"));
  }
  void Finish(Result<TickReport> result) { std::exchange(done, nullptr)(std::move(result)); }
};

void TickStep(Runtime::State& s, Reactor& home, std::shared_ptr<TickRun> run) {
  if (!run->in_tick) {
    // Asked before every tick, the first too: a caller gone before its ticks began runs none.
    if (run->keep_going && !run->keep_going()) return run->Finish(run->report);
    run->tick = ++run->group->ticks_started;
    run->last.reset();
    run->in_tick = true;
  }
  const bool tick_done = s.RunTickPart(*run->group, run->tick, &run->last, run->budget,
                                       &run->report, std::chrono::steady_clock::now() + kTickPart);
  if (tick_done) {
    run->in_tick = false;
    if (--run->left == 0) return run->Finish(run->report);
  }
  // Behind what arrived meanwhile: the next part (or tick) comes after it (spec 001 tick
  // order: what arrived during a tick is seen by the next one at the latest).
  home.Post([&s, run = std::move(run)](Reactor& r) mutable { TickStep(s, r, std::move(run)); });
}

}  // namespace

void Runtime::TickAsync(std::shared_ptr<ActorGroup> group, uint32_t count, uint64_t budget,
                        std::function<bool()> keep_going, TickDone done) {
  State& s = *state_;
  if (!group) group = s.default_group;
  if (group->mode != SchedulingMode::kManual) {
    return done(Status::FailedPrecondition("tick drives manual groups; this one is free-running"));
  }
  if (budget == 0) budget = s.options.manual_slice;
  if (count == 0) return done(TickReport{});
  if (s.options.mode == SchedulingMode::kManual) {
    std::lock_guard lock(s.manual_mu);
    TickReport report;
    for (uint32_t tick = 0; tick < count; ++tick) {
      if (keep_going && !keep_going()) break;
      // What arrived since the last tick: call completions that wake awaiting actors, and the
      // timers of calls (deadlines, retries on a full mailbox).
      for (auto& reactor : s.reactors) {
        std::vector<Reactor::Command> commands;
        reactor->TakeCommands(false, {}, &commands);
        for (auto& command : commands) command(*reactor);
        reactor->FireDueTimers({});
      }
      s.RunTick(*group, budget, &report);
    }
    return done(report);
  }
  if (s.shutting_down.load(std::memory_order_acquire)) {
    return done(Status::Unavailable("the actor runtime is shutting down"));
  }
  auto run = std::make_shared<TickRun>();
  run->group = std::move(group);
  run->left = count;
  run->budget = budget;
  run->keep_going = std::move(keep_going);
  run->done = std::move(done);
  Reactor& home = *s.reactors[run->group->home];
  home.Post([&s, run = std::move(run)](Reactor& r) mutable { TickStep(s, r, std::move(run)); });
}

Result<TickReport> Runtime::Tick(uint32_t count, uint64_t budget, ActorGroup* group) {
  std::shared_ptr<ActorGroup> shared;
  if (group != nullptr) {
    // The caller holds the group; an aliasing pointer keeps it without owning it twice.
    shared = std::shared_ptr<ActorGroup>(std::shared_ptr<ActorGroup>(), group);
  }
  std::promise<Result<TickReport>> answer;
  std::future<Result<TickReport>> future = answer.get_future();
  TickAsync(std::move(shared), count, budget, nullptr,
            [&answer](Result<TickReport> report) { answer.set_value(std::move(report)); });
  return future.get();
}

// ---------------------------------------------------------------------------------------
// Groups

Result<std::shared_ptr<ActorGroup>> Runtime::CreateGroup(SchedulingMode mode,
                                                         std::shared_ptr<DurableImage> durable) {
  State& s = *state_;
  if (s.options.mode == SchedulingMode::kManual && mode == SchedulingMode::kFreeRunning) {
    return Status::InvalidArgument("a manual runtime has no free-running groups");
  }
  // A manual runtime spreads a manual group over its reactors and delivers a commit's sends
  // through another reactor's Deliver than the committing one, outside the commit: its
  // records would not say which sends are in flight. A free-running runtime's groups record
  // routed commits (durable_image.h).
  if (durable && s.options.mode == SchedulingMode::kManual && s.reactors.size() > 1) {
    return Status::InvalidArgument(
        "a manual runtime with several reactors has no durable groups (a free-running runtime's "
        "groups, or a one-reactor manual runtime's, can be durable)");
  }
  uint32_t home = 0;
  if (s.options.mode == SchedulingMode::kFreeRunning && mode == SchedulingMode::kManual) {
    REEF_ASSIGN_OR_RETURN(home, PlaceWork());
  }
  return std::make_shared<ActorGroup>(mode, home, s.options.log_options, std::move(durable));
}

Status Runtime::CheckMember(const ActorRef& ref, const ActorGroup& group) {
  if (!state_->FindCell(ref, &group))
    return Status::NotFound(fmt::format("no actor @{}", ref.str()));
  return Status::Ok();
}

Status Runtime::RemoveGroup(const ActorGroup& group) {
  State& s = *state_;
  Status result = Status::Ok();
  for (auto& reactor : s.reactors) {
    std::vector<ActorRef> removed;
    Status status = s.OnReactor(*reactor, [&](Reactor& r) {
      for (auto it = r.actors.begin(); it != r.actors.end();) {
        Actor& a = *it->second;
        if (a.cell->group.get() != &group) {
          ++it;
          continue;
        }
        s.DropInvocation(r, a);
        // Sends already on their way find no actor and release their slot (Route).
        a.cell->removed.store(true);
        if (group.mode == SchedulingMode::kManual) {
          a.cell->group->members.erase(it->first);
          a.cell->group->ready.erase(it->first);
        }
        removed.push_back(it->first);
        r.actor_count.fetch_sub(1);
        it = r.actors.erase(it);
      }
      return Status::Ok();
    });
    if (!status.ok()) result = status;
    WriterLock lock(s.directory_mu);
    for (const ActorRef& ref : removed) s.directory.erase(ref);
  }
  return result;
}

}  // namespace reef::actor
