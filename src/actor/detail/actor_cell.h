// The parts of an actor that other threads touch (ActorCell), and the records of host sends
// and calls in flight (CallSlot, AwaitingCall). Internals of the actor runtime, included by
// detail/runtime_state.h. Not a public header.
//
// Thread ownership: ActorCell's atomics and route_mu-guarded members are read and written by
// any thread; a CallSlot completes once, from any thread; an AwaitingCall belongs to its
// actor's reactor.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

#include "actor/runtime.h"
#include "core/cbor.h"
#include "core/mutex.h"

namespace reef::actor {

// The cross-thread face of an actor.
struct ActorCell {
  explicit ActorCell(ActorRef r, uint32_t cap, uint32_t reactor_id,
                     std::shared_ptr<ActorGroup> actor_group)
      : ref(r), capacity(cap), reactor(reactor_id), group(std::move(actor_group)) {}

  // Reserves `n` mailbox slots; false (nothing reserved) when that would pass capacity.
  bool Reserve(uint32_t n);
  void Release(uint32_t n) { used.fetch_sub(n, std::memory_order_acq_rel); }
  bool Accepting() const {
    ActorStatus s = status.load(std::memory_order_acquire);
    return s != ActorStatus::kStopped && s != ActorStatus::kFailed;
  }

  const ActorRef ref;
  std::atomic<uint32_t> capacity;
  std::atomic<uint32_t> reactor;            // owner; changes only when draining moves the actor
  const std::shared_ptr<ActorGroup> group;  // never null

  // Moving between reactors (free-running Drain) without reordering messages: while
  // `moving`, other threads wait to route here, and the old owner forwards what it still
  // holds to `moving_to`; a fence command on the old owner then switches `reactor`.
  Mutex route_mu;
  CondVar route_cv;  // signalled when a move ends
  bool moving GUARDED_BY(route_mu) = false;
  uint32_t moving_to GUARDED_BY(route_mu) = 0;
  std::atomic<ActorStatus> status{ActorStatus::kIdle};
  std::atomic<uint32_t> used{0};  // queued + reserved + slots reserved by senders in flight
  // Set by Runtime::Remove. A sender checks it after reserving a slot and backs off, so no
  // message is ever routed to a removed actor.
  std::atomic<bool> removed{false};
  std::atomic<uint32_t> incarnation{1};  // mirrors Actor::incarnation for Runtime::Mailbox
};

// Whether `cell` (State::FindCell's answer for `target`) takes messages now. Any thread.
// Errors: NotFound (no such actor), FailedPrecondition (stopped or failed).
Status CheckTarget(const std::shared_ptr<ActorCell>& cell, const ActorRef& target);

// A host send or call in progress (Runtime::SendAsync, CallAsync, Call). Registered in
// State::calls under its address until it completes; for a call the address is the reply
// address the handler sees as its sender (a fresh ref that is never an actor).
struct CallSlot {
  ReplyPolicy reply = ReplyPolicy::kRequired;
  bool wants_reply = true;  // false: completes (null) once queued (SendAsync)
  // False for an actor's call (the call import): a shutdown leaves it to end with its
  // invocation, uncommitted, instead of handing the caller an error to commit.
  bool from_host = true;
  std::atomic<bool> queued{false};  // the message got into the mailbox
  std::atomic<bool> done{false};
  // The reply as it travels (bytes); Runtime::HostDone's callers get it as a Value.
  using Done = std::function<void(Result<CborValue> reply, bool queued)>;
  Done on_done;  // moved out by the one Complete that runs it
  // Completes once, on the calling thread; later completions are ignored. Returns whether
  // this call completed it.
  bool Complete(Result<CborValue> result);
};

// A call an actor's invocation is suspended in (the `call` import, calls.cc).
struct AwaitingCall {
  uint64_t id = 0;  // Actor::calls_started when it began: tells a stale resume from this one
  ActorRef target;
  std::chrono::steady_clock::time_point started;
  std::chrono::milliseconds timeout{0};
  std::shared_ptr<CallSlot> slot;  // completed (cancelled) when the invocation ends first
};

}  // namespace reef::actor
