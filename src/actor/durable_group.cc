// Durable groups in the runtime: the records of their actors' changes (durable_image.h) and
// bringing recovered actors back (Runtime::Restore).
#include <fmt/format.h>

#include "actor/detail/runtime_state.h"

namespace reef::actor {

namespace {

// The header fields of `a` (no messages; the state copied).
ActorRecord Header(const Actor& a) {
  ActorRecord r{a.cell->ref};
  r.implementation_id = a.implementation->id;
  if (a.pending_install) r.pending_install = a.pending_install->id;
  r.incarnation = a.incarnation;
  r.status = a.status;
  r.paused_from = a.paused_from;
  r.stopping = a.stopping;
  r.failure = a.failure;
  r.state = a.state;
  r.reset_state = a.reset_state;
  r.mailbox_capacity = a.cell->capacity.load();
  r.log_level = a.context->min_log_level;
  r.reserved = a.reserved.has_value();
  r.tag = a.tag;
  return r;
}

}  // namespace

void Runtime::State::RecordActor(const Actor& actor, bool spawned, bool dropped_first) {
  DurableImage* durable = actor.cell->group->durable.get();
  if (durable == nullptr) return;
  durable->AppendImplementation(*actor.implementation);
  if (actor.pending_install) durable->AppendImplementation(*actor.pending_install);
  std::string record;
  EncodeActorRecord(Header(actor), spawned, dropped_first, &record);
  durable->Append(std::move(record));
}

void Runtime::State::RecordCommit(Reactor& reactor, const Actor& actor, bool acknowledges,
                                  bool stopped, const Effects& effects) {
  reactor.send_origins.clear();  // none unless recorded below
  DurableImage* durable = actor.cell->group->durable.get();
  if (durable == nullptr) return;
  std::vector<RecordedSend>& sends = reactor.recorded_sends;  // reused: no allocation per commit
  std::vector<uint64_t>& origins = reactor.send_origins;      // cleared above
  sends.clear();
  // A routed commit's send to an actor this reactor does not own is posted (Route): in flight
  // until its arrival. An actor in this reactor's table gets it within the commit: Route
  // delivers inline to an owner it runs on (an actor moving here is in the table only once
  // the move reached this reactor, and Route waits for the move to end).
  const bool routed = actor.cell->group->mode == SchedulingMode::kFreeRunning;
  for (const SendEffect& send : effects.sends) {
    uint64_t origin = 0;
    if (routed && !send.target.is_reply_address() && !reactor.actors.contains(send.target)) {
      origin = durable->NextOrigin();
    }
    origins.push_back(origin);
    if (!send.target.is_reply_address())
      sends.push_back({&send.target, &send.sender, &send.message, origin});
  }
  std::string record;
  EncodeCommitRecord(actor.cell->ref, actor.state, acknowledges, stopped, routed, sends, &record);
  sends.clear();
  durable->Append(std::move(record));
}

void Runtime::State::RecordArrival(const Actor& actor, uint64_t origin) {
  DurableImage* durable = actor.cell->group->durable.get();
  if (durable == nullptr) return;
  std::string record;
  EncodeArrivalRecord(actor.cell->ref, origin, &record);
  durable->Append(std::move(record));
}

void Runtime::State::RecordMessages(const Actor& actor) {
  DurableImage* durable = actor.cell->group->durable.get();
  if (durable == nullptr) return;
  std::string record;
  EncodeMessagesRecord(actor.cell->ref, actor.reserved.has_value(),
                       actor.reserved ? &*actor.reserved : nullptr, actor.queued, &record);
  durable->Append(std::move(record));
}

void Runtime::State::RecordDelivery(const Actor& actor, const Envelope& envelope) {
  DurableImage* durable = actor.cell->group->durable.get();
  if (durable == nullptr) return;
  std::string record;
  EncodeDeliveryRecord(actor.cell->ref, envelope, &record);
  durable->Append(std::move(record));
}

void Runtime::State::RecordRemoval(const Actor& actor) {
  DurableImage* durable = actor.cell->group->durable.get();
  if (durable == nullptr) return;
  std::string record;
  EncodeRemovalRecord(actor.cell->ref, &record);
  durable->Append(std::move(record));
}

namespace {

bool InInvocation(ActorStatus status) {
  return status == ActorStatus::kRunning || status == ActorStatus::kAwaiting;
}

// What a restored actor resumes as: nothing of an invocation survives a restart.
ActorStatus Resumed(ActorStatus status) {
  return InInvocation(status) ? ActorStatus::kIdle : status;
}

}  // namespace

Status Runtime::Restore(const std::shared_ptr<ActorGroup>& group, std::vector<ActorRecord> actors,
                        const ImplementationOf& implementation_of) {
  State& s = *state_;
  if (!group || !group->durable) {
    return Status::InvalidArgument("only a durable group's actors can be restored");
  }
  const bool manual = group->mode == SchedulingMode::kManual;
  SpawnOptions spread;  // a free-running group's actors go round the Up reactors
  spread.placement = PlacementPolicy::kRoundRobin;
  std::map<uint32_t, std::vector<std::unique_ptr<Actor>>> made;  // by reactor
  for (ActorRecord& record : actors) {
    auto implementation = implementation_of(record.implementation_id);
    if (!implementation) {
      return Status::NotFound(
          fmt::format("@{}: no implementation {}", record.ref.str(), record.implementation_id));
    }
    std::shared_ptr<const Implementation> pending;
    if (record.pending_install) {
      pending = implementation_of(*record.pending_install);
      if (!pending) {
        return Status::NotFound(fmt::format("@{}: no implementation {} (its pending install)",
                                            record.ref.str(), *record.pending_install));
      }
    }
    if (s.FindCell(record.ref)) {
      return Status::AlreadyExists(fmt::format("@{} exists already", record.ref.str()));
    }
    uint32_t reactor = group->home;
    if (!manual) {
      REEF_ASSIGN_OR_RETURN(Reactor * placed, s.Place(spread, *group));
      reactor = placed->id;
    }
    std::unique_ptr<Actor> a = s.NewActor(
        record.ref, std::move(implementation), std::move(record.state),
        std::max<uint32_t>(record.mailbox_capacity, 1), reactor, group, record.log_level);
    a->tag = std::move(record.tag);
    a->pending_install = std::move(pending);
    a->incarnation = record.incarnation;
    a->cell->incarnation.store(record.incarnation);
    a->SetStatus(Resumed(record.status));
    if (record.paused_from) a->paused_from = Resumed(*record.paused_from);
    a->stopping = record.stopping;
    a->failure = std::move(record.failure);
    a->reset_state = std::move(record.reset_state);
    a->cell->used.store(static_cast<uint32_t>(record.messages.size()));
    // An input whose invocation a crash interrupted goes back to the front of the queue, as
    // restart and cancel put it; with a stop asked meanwhile it stays reserved and is handled
    // before on_shutdown runs. Any other reserved input (a failed one) stays as it was.
    const bool interrupted =
        InInvocation(record.status) || (record.status == ActorStatus::kPaused &&
                                        record.paused_from && InInvocation(*record.paused_from));
    const bool keep_reserved = record.reserved && (!interrupted || record.stopping);
    if (keep_reserved && !record.messages.empty()) {
      a->reserved = std::move(record.messages.front());
      record.messages.pop_front();
      a->finish_reserved_first = interrupted;
    }
    a->queued = std::move(record.messages);
    made[reactor].push_back(std::move(a));
  }
  for (auto& [reactor, batch] : made) {
    std::vector<std::shared_ptr<ActorCell>> cells;
    cells.reserve(batch.size());
    for (const auto& a : batch) cells.push_back(a->cell);
    REEF_RETURN_IF_ERROR(s.OnReactor(*s.reactors[reactor], [&](Reactor& r) {
      for (auto& owned : batch) {
        Actor& a = *owned;
        const ActorRef ref = a.cell->ref;
        r.actors.emplace(ref, std::move(owned));
        if (manual) {
          group->members.insert(ref);
          a.joined_at_tick = group->ticks_started;
          if (s.Runnable(a)) s.MarkRunnable(r, a);  // for the next tick
        }
        // A free-running group's actors stay still until StartRestored: one that ran now
        // could send to (or call) an actor of a later batch that is not there yet.
      }
      r.actor_count.fetch_add(batch.size());
      return Status::Ok();
    }));
    WriterLock lock(s.directory_mu);
    for (auto& cell : cells) s.directory.emplace(cell->ref, std::move(cell));
  }
  return Status::Ok();
}

Status Runtime::StartRestored(const ActorGroup& group) {
  State& s = *state_;
  if (group.mode == SchedulingMode::kManual) return Status::Ok();  // Tick runs them
  for (auto& reactor : s.reactors) {
    REEF_RETURN_IF_ERROR(s.OnReactor(*reactor, [&](Reactor& r) {
      for (auto& [ref, actor] : r.actors) {
        if (actor->cell->group.get() == &group && s.Runnable(*actor)) s.MarkRunnable(r, *actor);
      }
      return Status::Ok();
    }));
  }
  return Status::Ok();
}

}  // namespace reef::actor
