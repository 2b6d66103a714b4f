// Lifecycle, repair, drain and removal operations (spec 001 "System messages", "Actor repair";
// spec 003 "Stores" liveness). Each runs on the actor's reactor via State::OnActor.
#include <fmt/format.h>

#include "actor/detail/runtime_state.h"
#include "core/limits.h"

namespace reef::actor {

namespace {

Status NotWhile(const Actor& a, std::string_view op) {
  return Status::FailedPrecondition(
      fmt::format("cannot {} @{}: it is {}", op, a.cell->ref.str(), ActorStatusName(a.status)));
}

// Puts the reserved input back at the front of the queue (restart and cancel).
void RequeueReserved(Actor& a) {
  if (!a.reserved) return;
  a.queued.push_front(std::move(*a.reserved));
  a.reserved.reset();
}

// Repair preconditions (spec 001): paused, stopped or failed, and no active invocation.
Status CheckRepairable(const Actor& a, std::string_view op) {
  bool status_ok = a.status == ActorStatus::kPaused || a.status == ActorStatus::kStopped ||
                   a.status == ActorStatus::kFailed;
  if (!status_ok) {
    return Status::FailedPrecondition(
        fmt::format("{} needs @{} paused, stopped or failed; it is {} (pause it first)", op,
                    a.cell->ref.str(), ActorStatusName(a.status)));
  }
  if (a.active) {
    return Status::FailedPrecondition(fmt::format(
        "{} needs @{} without an active invocation (kill it first)", op, a.cell->ref.str()));
  }
  return Status::Ok();
}

// What an operation changed of an actor, for its durable group's record.
enum class Changed : uint8_t { kHeader, kMessages };

// OnActor for an operation that changes the actor: when `fn` succeeds, the actor's change is
// recorded (durable groups), on its reactor, in order with everything else it does.
Status Change(Runtime::State& s, const ActorRef& ref,
              const std::function<Status(Reactor&, Actor&)>& fn,
              Changed changed = Changed::kHeader) {
  return s.OnActor(ref, [&](Reactor& r, Actor& a) {
    Status status = fn(r, a);
    if (!status.ok()) return status;
    if (changed == Changed::kHeader) {
      s.RecordActor(a);
    } else {
      s.RecordMessages(a);
    }
    return status;
  });
}

}  // namespace

Status Runtime::Stop(const ActorRef& ref) {
  State& s = *state_;
  return Change(s, ref, [&](Reactor& r, Actor& a) {
    if (a.status == ActorStatus::kStopped) return Status::Ok();
    if (a.status == ActorStatus::kPaused) {  // stop unpauses so shutdown can progress
      a.SetStatus(a.paused_from.value_or(ActorStatus::kIdle));
      a.paused_from.reset();
    }
    if (a.status == ActorStatus::kFailed) a.SetStatus(ActorStatus::kIdle);
    if (a.stopping) {  // stopping already: the shutdown goes on (its call is not redone)
      s.MarkRunnable(r, a);
      return Status::Ok();
    }
    if (a.awaiting) {
      // Stop does not wait for a reply that may never come: the call is cancelled and its
      // invocation dropped (no effects, the input stays reserved), then on_shutdown runs.
      s.DropInvocation(r, a);
      a.SetStatus(ActorStatus::kIdle);
    }
    a.stopping = true;
    if (!a.active && !HasShutdownHook(*a.implementation->module)) {
      a.stopping = false;
      a.SetStatus(ActorStatus::kStopped);
      s.Publish(LifecycleKind::kStopped, a);
    }
    s.MarkRunnable(r, a);
    return Status::Ok();
  });
}

Status Runtime::Kill(const ActorRef& ref) {
  State& s = *state_;
  // A host call the killed input answers: failed once the kill is recorded (a caller that
  // waits for the journal then waits for the kill too).
  std::shared_ptr<CallSlot> caller;
  Status killed = Change(s, ref, [&](Reactor& r, Actor& a) {
    if (a.reset_state && !a.active) {  // kReset: a kill poisons a running invocation only
      return Status::FailedPrecondition(
          fmt::format("@{} has no running invocation; nothing to kill", ref.str()));
    }
    s.DropInvocation(r, a);
    a.stopping = false;
    a.paused_from.reset();
    if (a.reserved && a.reserved->sender) caller = s.FindCall(*a.reserved->sender);
    if (a.reset_state) {
      a.failure = "killed";
      s.ResetPoisoned(r, a, "killed");
      return Status::Ok();
    }
    a.SetStatus(ActorStatus::kStopped);
    s.Publish(LifecycleKind::kStopped, a, "killed");
    return Status::Ok();
  });
  if (caller) caller->Complete(Status::FailedPrecondition("the actor was killed"));
  return killed;
}

Status Runtime::Restart(const ActorRef& ref) {
  State& s = *state_;
  return Change(s, ref, [&](Reactor& r, Actor& a) {
    if (a.incarnation == UINT32_MAX) {
      return Status::LimitExceeded(
          fmt::format("@{} reached the last incarnation ({})", ref.str(), a.incarnation));
    }
    s.DropInvocation(r, a);
    RequeueReserved(a);
    ++a.incarnation;
    a.cell->incarnation.store(a.incarnation);
    a.stopping = false;
    a.paused_from.reset();
    a.failure.reset();
    a.SetStatus(ActorStatus::kIdle);
    s.ApplyPendingInstall(a);
    s.Publish(LifecycleKind::kRestarted, a);
    s.MarkRunnable(r, a);
    return Status::Ok();
  });
}

Status Runtime::Pause(const ActorRef& ref) {
  State& s = *state_;
  return Change(s, ref, [&](Reactor&, Actor& a) {
    if (a.status == ActorStatus::kPaused) return Status::Ok();
    if (a.status == ActorStatus::kStopped || a.status == ActorStatus::kFailed) {
      return NotWhile(a, "pause");
    }
    a.paused_from = a.status;
    a.SetStatus(ActorStatus::kPaused);
    s.Publish(LifecycleKind::kPaused, a);
    return Status::Ok();
  });
}

Status Runtime::Resume(const ActorRef& ref) {
  State& s = *state_;
  return Change(s, ref, [&](Reactor& r, Actor& a) {
    if (a.status != ActorStatus::kPaused) return NotWhile(a, "resume");
    a.SetStatus(a.paused_from.value_or(ActorStatus::kIdle));
    a.paused_from.reset();
    s.Publish(LifecycleKind::kResumed, a);
    s.MarkRunnable(r, a);
    return Status::Ok();
  });
}

Status Runtime::Cancel(const ActorRef& ref) {
  State& s = *state_;
  return Change(s, ref, [&](Reactor& r, Actor& a) {
    if (!a.active) {
      return Status::FailedPrecondition(
          fmt::format("@{} has no active invocation to cancel", ref.str()));
    }
    s.DropInvocation(r, a);
    RequeueReserved(a);
    if (a.status == ActorStatus::kPaused) {
      a.paused_from = ActorStatus::kIdle;
    } else {
      a.SetStatus(ActorStatus::kIdle);
    }
    s.ApplyPendingInstall(a);
    s.MarkRunnable(r, a);
    return Status::Ok();
  });
}

Status Runtime::Install(const ActorRef& ref, std::shared_ptr<const Implementation> implementation) {
  State& s = *state_;
  if (!implementation) return Status::InvalidArgument("install needs an implementation");
  return Change(s, ref, [&](Reactor&, Actor& a) {
    a.pending_install = implementation;
    s.ApplyPendingInstall(a);  // at once when no invocation is active
    return Status::Ok();
  });
}

Status Runtime::InstallWithMigration(const ActorRef& ref,
                                     std::shared_ptr<const Implementation> implementation,
                                     const Migration& migration) {
  State& s = *state_;
  if (!implementation) return Status::InvalidArgument("install needs an implementation");
  return Change(s, ref, [&](Reactor&, Actor& a) {
    if (a.active || a.reserved) {
      return Status::FailedPrecondition(fmt::format(
          "install needs @{} at an idle safe point (no active invocation, no reserved input)",
          ref.str()));
    }
    REEF_ASSIGN_OR_RETURN(Value migrated, migration(a.state.ToValue()));
    auto next = CborValue::Encode(migrated, s.options.value_limits);
    if (!next.ok()) return next.status().WithContext("migrated state");
    bool changed = !(*next == a.state);
    a.state = std::move(*next);
    a.implementation = implementation;
    a.pending_install.reset();
    s.Publish(LifecycleKind::kInstalled, a, implementation->id);
    if (changed) s.Publish(LifecycleKind::kMigrated, a);
    return Status::Ok();
  });
}

Status Runtime::SetState(const ActorRef& ref, Value state) {
  State& s = *state_;
  return Change(s, ref, [&](Reactor&, Actor& a) {
    REEF_RETURN_IF_ERROR(CheckRepairable(a, "set-state"));
    auto encoded = CborValue::Encode(state, s.options.value_limits);
    if (!encoded.ok()) return encoded.status().WithContext("state");
    a.state = std::move(*encoded);
    return Status::Ok();
  });
}

Status Runtime::SetMessages(const ActorRef& ref, std::vector<Value> reserved,
                            std::vector<Value> queued) {
  State& s = *state_;
  return Change(
      s, ref,
      [&](Reactor& r, Actor& a) {
        REEF_RETURN_IF_ERROR(CheckRepairable(a, "set-messages"));
        if (reserved.size() > 1) {
          return Status::InvalidArgument(
              fmt::format("reserved holds zero or one message, not {}", reserved.size()));
        }
        std::vector<CborValue> new_reserved;
        for (const Value& v : reserved) {
          auto encoded = CborValue::Encode(v, s.options.value_limits);
          if (!encoded.ok()) return encoded.status().WithContext("reserved");
          new_reserved.push_back(std::move(*encoded));
        }
        std::vector<CborValue> new_queued;
        for (size_t i = 0; i < queued.size(); ++i) {
          auto encoded = CborValue::Encode(queued[i], s.options.value_limits);
          if (!encoded.ok()) return encoded.status().WithContext(fmt::format("queued[{}]", i));
          new_queued.push_back(std::move(*encoded));
        }
        uint32_t old_count = static_cast<uint32_t>(a.queued.size() + (a.reserved ? 1 : 0));
        uint32_t new_count = static_cast<uint32_t>(queued.size() + reserved.size());
        uint32_t in_flight = a.cell->used.load() - old_count;  // reserved by senders, not here yet
        if (new_count + in_flight > a.cell->capacity.load()) {
          return Status::LimitExceeded(
              fmt::format("{} messages ({} more on their way) exceed the mailbox capacity of {}",
                          new_count, in_flight, a.cell->capacity.load()));
        }
        // Every check passed: apply. A message equal to the one at the same position keeps its
        // sender; any other is host-originated.
        auto keep_sender = [](const std::optional<Envelope>& old, CborValue v) {
          if (old && old->message == v) return Envelope{old->sender, std::move(v)};
          return Envelope{std::nullopt, std::move(v)};
        };
        std::optional<Envelope> old_reserved = std::move(a.reserved);
        a.reserved.reset();
        if (!new_reserved.empty()) {
          a.reserved = keep_sender(old_reserved, std::move(new_reserved[0]));
        }
        std::deque<Envelope> next;
        for (size_t i = 0; i < new_queued.size(); ++i) {
          std::optional<Envelope> old;
          if (i < a.queued.size()) old = a.queued[i];
          next.push_back(keep_sender(old, std::move(new_queued[i])));
        }
        a.queued = std::move(next);
        if (new_count > old_count) a.cell->used.fetch_add(new_count - old_count);
        if (old_count > new_count) a.cell->Release(old_count - new_count);
        s.MarkRunnable(r, a);
        return Status::Ok();
      },
      Changed::kMessages);
}

Status Runtime::SetTag(const ActorRef& ref, std::string tag) {
  if (tag.size() > kMaxTagBytes) {
    return Status::InvalidArgument(fmt::format("an actor's tag is at most {} bytes", kMaxTagBytes));
  }
  return Change(*state_, ref, [&](Reactor&, Actor& a) {
    a.tag = std::move(tag);
    return Status::Ok();
  });
}

Status Runtime::SetLogLevel(const ActorRef& ref, LogLevel level) {
  return Change(*state_, ref, [&](Reactor&, Actor& a) {
    a.context->min_log_level = level;  // read by the log import at every call
    return Status::Ok();
  });
}

// ---------------------------------------------------------------------------------------
// Reactors

std::vector<ReactorInfo> Runtime::Reactors() {
  std::vector<ReactorInfo> out;
  for (auto& r : state_->reactors)
    out.push_back({r->id, r->liveness.load(), r->actor_count.load(), r->tasks_waiting.load(),
                   r->tasks_run.load()});
  return out;
}

Status Runtime::Drain(uint32_t reactor_id) {
  State& s = *state_;
  if (reactor_id >= s.reactors.size()) {
    return Status::NotFound(fmt::format("no reactor {}", reactor_id));
  }
  Reactor& from = *s.reactors[reactor_id];
  bool other_up = false;
  for (auto& r : s.reactors) {
    other_up = other_up || (r.get() != &from && r->liveness.load() == ReactorLiveness::kUp);
  }
  if (!other_up) {
    return Status::FailedPrecondition("drain needs another Up reactor to move actors to");
  }
  from.liveness.store(ReactorLiveness::kDraining);
  return s.OnReactor(from, [&](Reactor& r) {
    std::vector<ActorRef> movable;
    for (const auto& [ref, actor] : r.actors) {
      if (!actor->active && !s.Ticked(*actor)) movable.push_back(ref);
    }
    for (const ActorRef& ref : movable) {
      REEF_ASSIGN_OR_RETURN(Reactor * to, s.Place({}, *s.default_group));
      auto owned = std::make_shared<std::unique_ptr<Actor>>(std::move(r.actors.at(ref)));
      r.actors.erase(ref);
      r.actor_count.fetch_sub(1);
      to->actor_count.fetch_add(1);
      Actor* moved = owned->get();
      moved->in_run_queue = false;  // its entry in this run_queue is stale now
      if (s.options.mode == SchedulingMode::kManual) {
        moved->cell->reactor.store(to->id);
        to->actors.emplace(ref, std::move(*owned));
      } else {
        // 1. Senders now wait, and this reactor forwards what it still holds for the actor.
        // 2. The new owner inserts the actor before anything forwarded reaches it.
        // 3. A fence behind every queued delivery switches the route and releases senders.
        {
          MutexLock lock(moved->cell->route_mu);
          moved->cell->moving = true;
          moved->cell->moving_to = to->id;
        }
        to->Post([&s, owned, ref](Reactor& target) {
          target.actors.emplace(ref, std::move(*owned));
          Actor& arrived = *target.actors.at(ref);
          if (s.Runnable(arrived)) s.MarkRunnable(target, arrived);
        });
        std::shared_ptr<ActorCell> cell = moved->cell;
        uint32_t to_id = to->id;
        r.Post([cell, to_id](Reactor&) {
          {
            MutexLock lock(cell->route_mu);
            cell->reactor.store(to_id, std::memory_order_release);
            cell->moving = false;
          }
          cell->route_cv.NotifyAll();
        });
      }
    }
    if (r.actors.empty()) r.liveness.store(ReactorLiveness::kDown);
    return Status::Ok();
  });
}

// ---------------------------------------------------------------------------------------
// Removal

namespace {

// Marks `a` removed unless a send to it is on its way: its cell holds more than the `held`
// messages already in its mailbox. Senders re-check `removed` after reserving a slot (SendAs,
// ReserveEffects), so either this load sees their slot or they see the flag and back off.
// Errors: FailedPrecondition (nothing changes).
Status ClaimRemoval(Actor& a, uint64_t held) {
  a.cell->removed.store(true);
  if (a.cell->used.load() == held) return Status::Ok();
  a.cell->removed.store(false);
  return Status::FailedPrecondition(
      fmt::format("a message is on its way to @{}, so it stays; try again", a.cell->ref.str()));
}

// Takes a removed actor out of its group (ticks, retained log entries, its durable image) and its
// reactor. Its directory entry is erased after, off the reactor.
void EraseActor(Runtime::State& s, Reactor& r, Actor& a) {
  s.RecordRemoval(a);
  const ActorRef ref = a.cell->ref;
  ActorGroup& group = *a.cell->group;
  if (group.mode == SchedulingMode::kManual) {
    group.members.erase(ref);
    group.ready.erase(ref);
  }
  group.logs.Forget(ref);
  r.actors.erase(ref);  // destroys `a`
  r.actor_count.fetch_sub(1);
}

}  // namespace

Status Runtime::Remove(const ActorRef& ref) {
  State& s = *state_;
  REEF_RETURN_IF_ERROR(s.OnActor(ref, [&](Reactor& r, Actor& a) {
    if (a.active || a.HasInput() || a.stopping) {
      return Status::FailedPrecondition(
          fmt::format("@{} is busy ({}), so it stays", ref.str(), ActorStatusName(a.status)));
    }
    if (Status claimed = ClaimRemoval(a, 0); !claimed.ok()) return claimed;
    EraseActor(s, r, a);  // an evicted instance's log entries go with it
    return Status::Ok();
  }));
  WriterLock lock(s.directory_mu);
  s.directory.erase(ref);
  return Status::Ok();
}

Result<uint64_t> Runtime::RemoveStopped(const ActorRef& ref) {
  State& s = *state_;
  uint64_t dropped = 0;
  std::vector<std::shared_ptr<CallSlot>> callers;  // failed once the removal is recorded
  REEF_RETURN_IF_ERROR(s.OnActor(ref, [&](Reactor& r, Actor& a) {
    if (a.stopping) {
      return Status::FailedPrecondition(fmt::format(
          "@{} is stopping (its on_shutdown has yet to run): tick until it is stopped, or kill "
          "it, before removing it",
          ref.str()));
    }
    const bool ended = a.status == ActorStatus::kStopped || a.status == ActorStatus::kFailed;
    if (!ended || a.active) {
      return Status::FailedPrecondition(fmt::format("@{} is {}: stop or kill it before removing it",
                                                    ref.str(), ActorStatusName(a.status)));
    }
    const uint64_t held = a.queued.size() + (a.reserved ? 1 : 0);
    if (Status claimed = ClaimRemoval(a, held); !claimed.ok()) return claimed;
    auto fail_call = [&](const Envelope& envelope) {
      if (!envelope.sender) return;
      if (auto slot = s.FindCall(*envelope.sender)) callers.push_back(std::move(slot));
    };
    if (a.reserved) fail_call(*a.reserved);
    for (const Envelope& envelope : a.queued) fail_call(envelope);
    dropped = held;
    s.Publish(LifecycleKind::kRemoved, a, fmt::format("{} message(s) dropped", held));
    EraseActor(s, r, a);
    return Status::Ok();
  }));
  for (auto& slot : callers) {
    slot->Complete(Status::FailedPrecondition(fmt::format("@{} was removed", ref.str())));
  }
  WriterLock lock(s.directory_mu);
  s.directory.erase(ref);
  return dropped;
}

}  // namespace reef::actor
