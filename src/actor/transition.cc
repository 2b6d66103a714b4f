// Slices and transitions: starting an input, running a slice, committing or failing
// (spec 001, "Transition and retry guarantees"). Runs on the thread driving the reactor.
#include <fmt/format.h>

#include <algorithm>

#include "actor/detail/runtime_state.h"
#include "core/limits.h"

namespace reef::actor {
namespace {

constexpr size_t kMaxPooledPerImplementation = 64;

// Borrows an instance of `actor`'s implementation: a pooled one, reset to its
// post-instantiation memory and globals, or a fresh one, whose ABI version is checked once
// here (the implementation's exports were checked when it was made). Every invocation starts
// from that clean image, so a handler sees only its committed state and inputs: nothing
// another actor (or an earlier invocation, a killed one included) left in memory or globals.
Result<std::unique_ptr<wasm::Instance>> AcquireInstance(Reactor& reactor, const Actor& actor) {
  auto& idle = reactor.IdleInstances(actor.implementation);
  while (!idle.empty()) {
    std::unique_ptr<wasm::Instance> instance = std::move(idle.back().instance);
    idle.pop_back();
    // The module's native code became ready (TierChoice::kAuto): it moves to it here, at a
    // handler boundary.
    if (reactor.engine.Outdated(*instance)) continue;
    REEF_RETURN_IF_ERROR(instance->Reset());
    return instance;
  }
  REEF_ASSIGN_OR_RETURN(std::unique_ptr<wasm::Instance> fresh,
                        reactor.engine.Instantiate(actor.implementation->module));
  REEF_RETURN_IF_ERROR(CheckActorExports(fresh->module(), actor.implementation->handler));
  REEF_RETURN_IF_ERROR(CheckAbiVersion(*fresh, *actor.context));
  // The version check ran the guest: back to the post-instantiation image.
  REEF_RETURN_IF_ERROR(fresh->Reset());
  return fresh;
}

void ReleaseInstance(Reactor& reactor, const Actor& actor,
                     std::unique_ptr<wasm::Instance> instance) {
  // A memory that grew cannot shrink back: such an instance is dropped, so its size (and
  // its pages) never carry over to another invocation.
  const auto& memories = instance->module().memories();
  if (!memories.empty() && instance->memory().size() > memories[0].initial * 65'536) return;
  if (reactor.engine.Outdated(*instance)) return;
  auto& idle = reactor.IdleInstances(actor.implementation);
  if (idle.size() < kMaxPooledPerImplementation) {
    idle.push_back({std::move(instance), actor.cell->ref});
  }
}

}  // namespace

bool Runtime::State::Runnable(const Actor& actor) const {
  switch (actor.status) {
    case ActorStatus::kPaused:
    case ActorStatus::kStopped:
    case ActorStatus::kFailed:
    case ActorStatus::kAwaiting:
      return false;
    case ActorStatus::kIdle:
    case ActorStatus::kRunning:
      return actor.active.has_value() || actor.stopping || actor.reserved.has_value() ||
             !actor.queued.empty();
  }
  return false;
}

void Runtime::State::Publish(LifecycleKind kind, const Actor& actor, std::string detail) {
  actor.cell->group->events.Publish(kind, actor.cell->ref, actor.incarnation, std::move(detail));
}

void Runtime::State::DropInvocation(Reactor& reactor, Actor& actor) {
  (void)reactor;
  CancelAwait(actor);
  // The instance of an invocation that did not finish is poisoned: its stack pointer and
  // memory may be mid-update. It is discarded, never pooled.
  actor.active.reset();
}

void Runtime::State::ApplyPendingInstall(Actor& actor) {
  if (!actor.pending_install || actor.active) return;
  actor.implementation = std::move(actor.pending_install);
  actor.pending_install.reset();
  Publish(LifecycleKind::kInstalled, actor, actor.implementation->id);
  RecordActor(actor);
}

void Runtime::State::Deliver(Reactor& reactor, Actor& actor, Envelope envelope, uint64_t origin) {
  if (origin != 0) {
    RecordArrival(actor, origin);
  } else if (!reactor.committing) {
    RecordDelivery(actor, envelope);
  }
  actor.queued.push_back(std::move(envelope));
  MarkRunnable(reactor, actor);
}

namespace {

// Completes a pending host call whose reply address is `sender`, if it is one.
void FailPendingCall(Runtime::State& state, const std::optional<ActorRef>& sender,
                     const std::string& why) {
  if (!sender) return;
  if (auto slot = state.FindCall(*sender)) slot->Complete(Status::FailedPrecondition(why));
}

// A handler committed without replying to `input`'s sender: a call that needs a reply fails,
// one with ReplyPolicy::kOptional gets null.
void CompleteUnanswered(Runtime::State& state, const std::optional<Envelope>& input) {
  if (!input || !input->sender) return;
  auto slot = state.FindCall(*input->sender);
  if (!slot) return;
  if (slot->reply == ReplyPolicy::kOptional) {
    slot->Complete(CborValue());
  } else {
    slot->Complete(Status::FailedPrecondition("the handler committed without replying"));
  }
}

}  // namespace

void Runtime::State::ResetPoisoned(Reactor& reactor, Actor& actor, std::string_view why) {
  const bool dropped = actor.reserved.has_value();
  if (dropped) {
    actor.reserved.reset();
    actor.cell->Release(1);  // the dropped input's mailbox slot
  }
  actor.state = *actor.reset_state;
  if (actor.incarnation < UINT32_MAX) ++actor.incarnation;
  actor.cell->incarnation.store(actor.incarnation);
  actor.stopping = false;
  actor.paused_from.reset();
  actor.SetStatus(ActorStatus::kIdle);
  RecordActor(actor, /*spawned=*/false, /*dropped_first=*/dropped);
  ApplyPendingInstall(actor);
  Publish(LifecycleKind::kRestarted, actor, fmt::format("poisoned: {}", why));
  if (actor.HasInput()) MarkRunnable(reactor, actor);
}

// Fails the actor: committed state and the reserved input stay; no effect applies. With
// FailurePolicy::kReset the actor is reset instead (ResetPoisoned).
static void FailActor(Runtime::State& state, Reactor& reactor, Actor& actor, std::string why,
                      TickReport* report) {
  state.DropInvocation(reactor, actor);
  actor.stopping = false;
  actor.failure = why;
  const std::optional<ActorRef> caller = actor.reserved ? actor.reserved->sender : std::nullopt;
  if (report) ++report->failures;
  state.Publish(LifecycleKind::kFailed, actor, why);
  if (actor.reset_state) {
    state.ResetPoisoned(reactor, actor, why);
  } else {
    actor.SetStatus(ActorStatus::kFailed);
    state.RecordActor(actor);
  }
  // After the record: a caller told of the failure can wait for it to be durable (WhenDurable).
  FailPendingCall(state, caller, "the handler failed: " + why);
}

namespace {

// The cell of `target` as guest code of `group` sees it: the reactor's own table first (no
// lock), then the directory.
std::shared_ptr<ActorCell> TargetCell(Runtime::State& state, Reactor& reactor,
                                      const ActorRef& target, const ActorGroup* group) {
  auto it = reactor.actors.find(target);
  if (it == reactor.actors.end()) return state.FindCell(target, group);
  const std::shared_ptr<ActorCell>& cell = it->second->cell;
  return cell->group.get() == group ? cell : nullptr;
}

// Validates every send of a finished invocation and reserves mailbox capacity for all of
// them (aggregate per target), or reserves nothing. On success `*reserved` has one entry per
// target, sorted by target. `acknowledges`: the transition frees the actor's reserved slot,
// which a self-send may reuse.
Status ReserveEffects(Runtime::State& state, Reactor& reactor, Actor& actor, bool acknowledges,
                      const Effects& effects, std::vector<Reservation>* reserved) {
  reserved->clear();
  for (const SendEffect& send : effects.sends) reserved->push_back({send.target, 1});
  if (reserved->size() > 1) {
    std::sort(reserved->begin(), reserved->end(),
              [](const Reservation& a, const Reservation& b) { return a.target < b.target; });
    size_t kept = 0;
    for (size_t i = 1; i < reserved->size(); ++i) {
      Reservation& last = (*reserved)[kept];
      if ((*reserved)[i].target == last.target) {
        ++last.sends;
      } else {
        (*reserved)[++kept] = std::move((*reserved)[i]);
      }
    }
    reserved->erase(reserved->begin() + static_cast<std::ptrdiff_t>(kept) + 1, reserved->end());
  }
  auto rollback = [&](Status why) {
    for (Reservation& r : *reserved) {
      if (r.cell && r.needed > 0) r.cell->Release(r.needed);
    }
    reserved->clear();
    return why;
  };
  for (Reservation& entry : *reserved) {
    const ActorRef& target = entry.target;
    if (target.is_reply_address()) continue;  // a call's reply address: no mailbox
    std::shared_ptr<ActorCell> cell = TargetCell(state, reactor, target, actor.cell->group.get());
    if (!cell) {
      return rollback(Status::NotFound(fmt::format("send to unknown actor @{}", target.str())));
    }
    if (cell.get() != actor.cell.get() && !cell->Accepting()) {
      return rollback(Status::FailedPrecondition(
          fmt::format("send to @{}, which is {}", target.str(),
                      ActorStatusName(cell->status.load(std::memory_order_acquire)))));
    }
    // A self-send reuses the slot of the input this transition acknowledges.
    uint32_t needed =
        cell.get() == actor.cell.get() && acknowledges ? entry.sends - 1 : entry.sends;
    if (needed > 0 && !cell->Reserve(needed)) {
      const uint32_t capacity = cell->capacity.load();
      const uint32_t taken = std::min(cell->used.load(), capacity);
      return rollback(Status::LimitExceeded(fmt::format(
          "{} send(s) to @{} do not fit its mailbox: capacity {} messages, {} slot(s) taken "
          "(queued messages, the one in progress and sends on their way)",
          entry.sends, target.str(), capacity, taken)));
    }
    entry.needed = needed;
    entry.cell = std::move(cell);
    if (entry.cell->removed.load()) {  // Remove ran after the lookup (Runtime::Remove)
      return rollback(Status::NotFound(fmt::format("send to unknown actor @{}", target.str())));
    }
  }
  return Status::Ok();
}

// The entry of `target` in ReserveEffects' answer, or end().
std::vector<Reservation>::iterator FindReservation(std::vector<Reservation>& reserved,
                                                   const ActorRef& target) {
  auto it = std::lower_bound(
      reserved.begin(), reserved.end(), target,
      [](const Reservation& entry, const ActorRef& ref) { return entry.target < ref; });
  return it != reserved.end() && it->target == target ? it : reserved.end();
}

}  // namespace

// Commits a finished invocation: new state, acknowledged input, then the sends.
static void Commit(Runtime::State& state, Reactor& reactor, Actor& actor, TickReport* report) {
  Actor::Active& active = *actor.active;
  auto next = ReadNewState(*active.instance, *active.invocation, state.options.value_limits);
  if (!next.ok()) {
    FailActor(state, reactor, actor, "invalid new state: " + next.status().message(), report);
    return;
  }
  Effects effects = std::move(actor.context->effects);
  actor.context->effects.Clear();
  // The reactor's buffer, taken (not borrowed) so that a nested commit would get its own.
  std::vector<Reservation> reserved = std::move(reactor.reservations);
  // A handler acknowledges its reserved input; on_shutdown has none of its own (a failed
  // input stays reserved through a graceful stop).
  bool acknowledges = !active.shutdown && actor.reserved.has_value();
  Status valid = ReserveEffects(state, reactor, actor, acknowledges, effects, &reserved);
  if (!valid.ok()) {
    FailActor(state, reactor, actor, "invalid transition: " + valid.message(), report);
    return;
  }

  bool shutdown = active.shutdown;
  active.invocation.reset();  // an invocation must end before its instance can go
  ReleaseInstance(reactor, actor, std::move(active.instance));
  actor.active.reset();
  actor.state = std::move(*next);
  std::optional<Envelope> input;
  if (acknowledges) {
    input = std::move(actor.reserved);
    actor.reserved.reset();
    auto self = FindReservation(reserved, actor.cell->ref);
    if (self == reserved.end()) actor.cell->Release(1);  // acknowledged
  }

  state.RecordCommit(reactor, actor, acknowledges, shutdown, effects);
  // Taken, as `reserved` is: the loop below runs host callbacks (a call's completion).
  std::vector<uint64_t> origins = std::move(reactor.send_origins);
  reactor.committing = true;  // the commit record holds the sends Deliver is about to get
  bool replied = false;
  for (size_t i = 0; i < effects.sends.size(); ++i) {
    SendEffect& send = effects.sends[i];
    Envelope envelope{send.sender, std::move(send.message)};
    auto target = FindReservation(reserved, send.target);
    if (!target->cell) {  // a reply address (ReserveEffects let it through)
      if (input && input->sender == send.target) replied = true;
      auto slot = state.FindCall(send.target);
      if (!slot || !slot->Complete(std::move(envelope.message))) {
        state.DropLateReply(actor, send.target);  // the call ended first: never an error here
      }
    } else {
      // Passing the request on with its reply address as the sender (send_from) hands the
      // reply over to the receiver: this transition no longer owes it.
      if (input && input->sender && envelope.sender == input->sender) replied = true;
      if (send.target == actor.cell->ref) {
        state.Deliver(reactor, actor, std::move(envelope));
      } else {
        const uint64_t origin = i < origins.size() ? origins[i] : 0;
        state.Route(target->cell, std::move(envelope), origin);
      }
    }
  }
  reactor.committing = false;
  origins.clear();
  reactor.send_origins = std::move(origins);  // its capacity, for the next commit
  if (!replied) CompleteUnanswered(state, input);
  reserved.clear();
  reactor.reservations = std::move(reserved);
  // The actor's next invocation records its sends in this vector again without allocating,
  // unless a transition of many sends made it large.
  constexpr size_t kKeptSendCapacity = 16;
  if (effects.sends.capacity() <= kKeptSendCapacity && actor.context->effects.sends.empty()) {
    effects.sends.clear();
    actor.context->effects.sends = std::move(effects.sends);
  }
  if (report) ++report->commits;
  ++actor.turn_commits;
  state.Publish(LifecycleKind::kCommitted, actor);
  if (shutdown) {
    actor.stopping = false;
    actor.SetStatus(ActorStatus::kStopped);
    state.Publish(LifecycleKind::kStopped, actor);
    return;
  }
  actor.SetStatus(ActorStatus::kIdle);
  state.ApplyPendingInstall(actor);
}

// Starts the next invocation: on_shutdown when stopping, else the oldest queued input.
// Returns false when there is nothing to start (or the actor just stopped or failed).
static bool StartNext(Runtime::State& state, Reactor& reactor, Actor& actor, TickReport* report) {
  state.ApplyPendingInstall(actor);
  bool shutdown = actor.stopping && !(actor.finish_reserved_first && actor.reserved);
  actor.finish_reserved_first = false;
  if (shutdown && !HasShutdownHook(*actor.implementation->module)) {
    actor.stopping = false;
    actor.SetStatus(ActorStatus::kStopped);
    state.RecordActor(actor);
    state.Publish(LifecycleKind::kStopped, actor);
    return false;
  }
  if (!shutdown && !actor.reserved) {  // a reservation set by repair runs first
    if (actor.queued.empty()) return false;
    actor.reserved = std::move(actor.queued.front());
    actor.queued.pop_front();
  }
  auto instance = AcquireInstance(reactor, actor);
  if (!instance.ok()) {
    FailActor(state, reactor, actor, instance.status().ToString(), report);
    return false;
  }
  actor.context->effects.Clear();
  actor.context->self = actor.cell->ref;
  static const std::optional<ActorRef> kHost;
  const std::optional<ActorRef>& sender = actor.reserved ? actor.reserved->sender : kHost;
  const std::string& handler = actor.implementation->handler;
  auto invocation =
      shutdown ? StartShutdown(**instance, *actor.context, actor.state, handler,
                               StartChecks::kInstanceChecked)
               : StartHandle(**instance, *actor.context, actor.state, sender,
                             actor.reserved->message, handler, StartChecks::kInstanceChecked);
  if (!invocation.ok()) {
    FailActor(state, reactor, actor, invocation.status().ToString(), report);
    return false;
  }
  actor.active = Actor::Active{std::move(*instance), std::move(*invocation), shutdown};
  actor.SetStatus(ActorStatus::kRunning);
  return true;
}

uint64_t Runtime::State::RunSlice(Reactor& reactor, Actor& actor, uint64_t budget,
                                  TickReport* report) {
  if (!actor.active && !StartNext(*this, reactor, actor, report)) return 0;
  wasm::Invocation& invocation = *actor.active->invocation;
  uint64_t before = invocation.instructions();
  wasm::RunState run = invocation.Run(budget);
  uint64_t charged = invocation.instructions() - before;
  if (report) {
    ++report->slices;
    report->instructions += charged;
  }
  switch (run) {
    case wasm::RunState::kBudgetExhausted:
      break;
    case wasm::RunState::kSuspended:
      actor.SetStatus(ActorStatus::kAwaiting);
      break;
    case wasm::RunState::kFinished:
      Commit(*this, reactor, actor, report);
      break;
    case wasm::RunState::kTrapped: {
      const wasm::Trap& trap = invocation.trap();
      std::string why = trap.kind == wasm::TrapKind::kGuestFailure ? trap.message : trap.ToString();
      FailActor(*this, reactor, actor, std::move(why), report);
      break;
    }
  }
  return charged;
}

}  // namespace reef::actor
