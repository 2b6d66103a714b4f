// Actor-to-actor calls: the `call` import suspends the caller's invocation (status awaiting)
// until the callee's reply, a timeout or an error resumes it (docs/abi.md "Calling another
// actor"). The call travels as a host call (State::StartHostSend) whose completion is posted
// to the caller's reactor, so the caller is resumed only there, and only if it still waits
// for that very call.
#include <fmt/format.h>

#include "actor/detail/runtime_state.h"
#include "actor/guest_abi.h"
#include "core/cbor.h"

namespace reef::actor {

namespace {

// The code `call` returns for a failed call. `queued`: the message reached the mailbox.
int32_t FailureCode(const Status& status, bool queued) {
  if (!queued) return kCallUnavailable;
  return status.code() == Code::kUnavailable ? kCallTimedOut : kCallNoReply;
}

// True when `ref`, on `reactor`, has an invocation suspended in a call: status awaiting, or
// paused while awaiting. On that reactor's thread.
bool SuspendedInCall(Reactor& reactor, const ActorRef& ref) {
  auto it = reactor.actors.find(ref);
  if (it == reactor.actors.end()) return false;
  const Actor& actor = *it->second;
  return actor.status == ActorStatus::kAwaiting ||
         (actor.status == ActorStatus::kPaused && actor.paused_from == ActorStatus::kAwaiting);
}

}  // namespace

int32_t Runtime::State::StartActorCall(Actor& actor, const ActorRef& target, CborValue message,
                                       std::chrono::milliseconds timeout) {
  const ActorRef& self = actor.cell->ref;
  if (target == self) return kCallCycle;
  if (target.is_reply_address()) return kCallUnavailable;
  std::shared_ptr<ActorCell> cell = FindCell(target, actor.cell->group.get());
  if (!CheckTarget(cell, target).ok()) return kCallUnavailable;
  {
    // Following the wait-for edges from the target: back here means a cycle. The edge is
    // added under the same lock, so two actors calling each other at once cannot both pass.
    MutexLock lock(awaits_mu);
    ActorRef next = target;
    for (size_t hops = 0; hops <= awaits.size(); ++hops) {
      auto edge = awaits.find(next);
      if (edge == awaits.end()) break;
      if (edge->second == self) return kCallCycle;
      next = edge->second;
    }
    awaits.insert_or_assign(self, target);
  }
  uint64_t id = ++actor.calls_started;
  auto slot = std::make_shared<CallSlot>();
  slot->reply = ReplyPolicy::kRequired;
  slot->from_host = false;
  // An actor with an active invocation never moves (Drain leaves it), so its reactor now is
  // where it is resumed.
  Reactor* home = reactors[actor.cell->reactor.load(std::memory_order_acquire)].get();
  slot->on_done = [this, home, self, id](Result<CborValue> reply, bool queued) {
    // Completed on the caller's own reactor while it is suspended in this call (a callee
    // there replied, or the deadline fired): resumed here and now. From another thread, or
    // before the invocation suspended (the send failed at once, inside this very import),
    // by a task posted there, which runs after the invocation has suspended.
    if (CurrentReactor() == home && SuspendedInCall(*home, self)) {
      return ResumeCall(*home, self, id, std::move(reply), queued);
    }
    auto outcome = std::make_shared<Result<CborValue>>(std::move(reply));
    home->Post([this, self, id, outcome, queued](Reactor& r) {
      ResumeCall(r, self, id, std::move(*outcome), queued);
    });
  };
  actor.awaiting = AwaitingCall{id, target, std::chrono::steady_clock::now(), timeout, slot};
  StartHostSend(std::move(slot), target, std::move(message), timeout);
  return 0;
}

void Runtime::State::ResumeCall(Reactor& reactor, const ActorRef& ref, uint64_t id,
                                Result<CborValue> reply, bool queued) {
  auto it = reactor.actors.find(ref);
  if (it == reactor.actors.end()) return;
  Actor& actor = *it->second;
  // A wait that ended first (kill, stop, restart, cancel) cancelled its call: nothing to do.
  if (!actor.awaiting || actor.awaiting->id != id || !actor.active) return;
  int32_t code = 0;
  actor.context->call_reply.clear();
  if (reply.ok()) {
    // Checked against this runtime's value limits when the callee sent it.
    actor.context->call_reply.assign(reply->bytes().begin(), reply->bytes().end());
    code = static_cast<int32_t>(actor.context->call_reply.size());
  } else {
    code = FailureCode(reply.status(), queued);
  }
  {
    MutexLock lock(awaits_mu);
    awaits.erase(ref);
  }
  actor.awaiting.reset();
  const wasm::WasmValue result[] = {code};
  Status resumed = actor.active->invocation->CompleteHostCall(result);
  (void)resumed;  // suspended in `call`, whose one i32 result this is: cannot fail
  if (actor.status == ActorStatus::kPaused) {
    actor.paused_from = ActorStatus::kRunning;  // resume runs it on
    return;
  }
  actor.SetStatus(ActorStatus::kRunning);
  MarkRunnable(reactor, actor);
}

void Runtime::State::CancelAwait(Actor& actor) {
  if (!actor.awaiting) return;
  std::shared_ptr<CallSlot> slot = std::move(actor.awaiting->slot);
  actor.awaiting.reset();
  {
    MutexLock lock(awaits_mu);
    awaits.erase(actor.cell->ref);
  }
  // Its completion posts a resume that finds no wait and does nothing; a reply that comes
  // later finds the call ended and is dropped as late.
  slot->Complete(Status::FailedPrecondition("the caller's invocation ended"));
}

void Runtime::State::DropLateReply(const Actor& replier, const ActorRef& address) {
  replier.cell->group->late_replies.fetch_add(1, std::memory_order_relaxed);
  std::string message = fmt::format(
      "dropped a late reply to @{}: that call was answered already or had ended (timed out, "
      "or its caller was stopped, killed or restarted)",
      address.str());
  auto seq = replier.cell->group->logs.Append(replier.cell->ref, replier.incarnation,
                                              LogLevel::kWarn, message);
  if (seq.ok()) Publish(LifecycleKind::kLog, replier, "warn: " + message);
}

}  // namespace reef::actor
