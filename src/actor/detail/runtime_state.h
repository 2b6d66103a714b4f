// Internals of the actor runtime, shared by runtime.cc (host operations), transition.cc
// (slices and commits) and reactor.cc (placement, threads). Not a public header.
//
// Ownership: an Actor belongs to one Reactor and is touched only by the thread driving that
// reactor (a reactor thread in free-running mode; the caller holding State::manual_mu in
// manual mode). ActorCell is the part other threads may read: status and mailbox occupancy,
// both atomic, used to validate sends from other reactors.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "actor/runtime.h"
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
  bool wants_reply = true;          // false: completes (null) once queued (SendAsync)
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

// An actor, owned by its reactor.
struct Actor {
  std::shared_ptr<ActorCell> cell;
  std::shared_ptr<const Implementation> implementation;
  uint32_t incarnation = 1;
  CborValue state;  // committed
  std::deque<Envelope> queued;
  std::optional<Envelope> reserved;
  ActorStatus status = ActorStatus::kIdle;
  std::optional<ActorStatus> paused_from;
  bool stopping = false;
  std::shared_ptr<const Implementation> pending_install;
  std::optional<std::string> failure;
  uint32_t turn_commits = 0;  // free-running: completions in the current turn
  // FailurePolicy::kReset: the spawn state a failure or kill goes back to.
  std::optional<CborValue> reset_state;
  // The call the active invocation waits for (status awaiting, or paused from awaiting).
  std::optional<AwaitingCall> awaiting;
  uint64_t calls_started = 0;

  // The active invocation and the instance it borrowed.
  struct Active {
    std::unique_ptr<wasm::Instance> instance;
    std::unique_ptr<wasm::Invocation> invocation;
    bool shutdown = false;  // running on_shutdown rather than handle
  };
  std::optional<Active> active;
  // Stable address for the invocation's imports; holds the per-actor minimum log level.
  std::unique_ptr<ActorCallContext> context;

  void SetStatus(ActorStatus s) {
    status = s;
    cell->status.store(s, std::memory_order_release);
  }
  bool HasInput() const { return !queued.empty() || reserved.has_value(); }
};

// Idle instances of one implementation on one reactor.
struct PooledInstance {
  std::unique_ptr<wasm::Instance> instance;
  std::optional<ActorRef> last_actor;  // who used it last (diagnostics; it is reset anyway)
};

class Reactor {
 public:
  Reactor(uint32_t reactor_id, const RuntimeOptions& options);

  const uint32_t id;
  std::atomic<ReactorLiveness> liveness{ReactorLiveness::kUp};
  std::atomic<uint64_t> actor_count{0};
  // Host work posted here (Runtime::Post) and not run yet, and run so far (ReactorInfo).
  std::atomic<uint64_t> tasks_waiting{0};
  std::atomic<uint64_t> tasks_run{0};
  // The reactor this reactor's thread is blocked on in Runtime::Call, or -1: the edges of
  // the wait-for graph used to refuse call cycles.
  std::atomic<int32_t> waiting_for{-1};

  // ---- owned by the thread driving this reactor ----
  wasm::Engine engine;
  std::unordered_map<ActorRef, std::unique_ptr<Actor>, ActorRefHash> actors;
  std::map<std::string, std::vector<PooledInstance>> pool;  // by implementation id
  std::deque<ActorRef> run_queue;                           // free-running
  std::map<ActorRef, bool> queued_to_run;                   // members of run_queue

  // ---- cross-thread commands (free-running) ----
  using Command = std::function<void(Reactor&)>;
  void Post(Command command) EXCLUDES(mu_);
  // Takes every pending command; waits up to `timeout` when none is pending and `idle`.
  std::deque<Command> TakeCommands(bool idle, std::chrono::steady_clock::duration timeout)
      EXCLUDES(mu_);

  // ---- timers (free-running), owned by the reactor thread ----
  using TimePoint = std::chrono::steady_clock::time_point;
  struct Timer {
    std::weak_ptr<void> owner;  // expired: the timer is moot and is dropped unrun
    Command fire;
  };
  // Runs `fire` on this reactor's thread at `at` or soon after, unless `owner` is gone by
  // then. Any thread. Timers that never fire (the reactor stopped) are destroyed unrun.
  void AddTimer(TimePoint at, std::weak_ptr<void> owner, Command fire);
  // Runs the timers that are due; returns how long until the next one (at most `cap`).
  std::chrono::steady_clock::duration FireDueTimers(std::chrono::steady_clock::duration cap);
  std::multimap<TimePoint, Timer> timers;
  size_t timers_after_sweep = 0;  // timers left by the last sweep of moot ones

  std::thread thread;

 private:
  // Protected by mu_; cv_ is signalled when a command is posted.
  Mutex mu_;
  CondVar cv_;
  std::deque<Command> commands_ GUARDED_BY(mu_);
  // commands_.size(), readable without the lock (SpinBriefly in TakeCommands).
  std::atomic<size_t> posted_{0};
};

struct Runtime::State {
  explicit State(RuntimeOptions opts);

  RuntimeOptions options;
  // Actors spawned without a group: the runtime's mode, logs() and events().
  std::shared_ptr<ActorGroup> default_group;
  std::vector<std::unique_ptr<Reactor>> reactors;  // constant after Create
  std::atomic<bool> shutting_down{false};
  std::atomic<uint32_t> round_robin{0};
  // The owner of timers that always fire (Runtime::Post with a delay): lives as long as this.
  std::shared_ptr<void> timer_owner = std::make_shared<bool>(true);

  // Manual mode: serializes every operation (the caller thread drives all reactors). Not a
  // capability: it guards no member of its own (the reactor-owned state it serializes is
  // also touched without it, by reactor threads in free-running mode) and is reentrant.
  std::recursive_mutex manual_mu;

  // ref -> cell, for every actor. Readers: any thread; writers: Spawn, Remove.
  SharedMutex directory_mu;
  std::unordered_map<ActorRef, std::shared_ptr<ActorCell>, ActorRefHash> directory
      GUARDED_BY(directory_mu);

  Mutex calls_mu;
  // Calls waiting for a reply, by reply address (ActorRef::GenerateReplyAddress). A send to a
  // reply address that is not here is a late reply: dropped, never an error for its sender.
  std::map<ActorRef, std::shared_ptr<CallSlot>> calls GUARDED_BY(calls_mu);

  // The wait-for graph of actor calls: caller -> callee for every awaiting call, so a call
  // that would close a cycle (A calls B calls A) is refused at once, across reactors.
  Mutex awaits_mu;
  std::map<ActorRef, ActorRef> awaits GUARDED_BY(awaits_mu);

  // ---- helpers (runtime.cc) ----
  // The cell of `ref`; with `group` set, null unless the actor is of that group (what guest
  // code of one group sees of another).
  std::shared_ptr<ActorCell> FindCell(const ActorRef& ref, const ActorGroup* group = nullptr)
      EXCLUDES(directory_mu);
  // True when `actor` runs only in Tick although its runtime is free-running (a manual group).
  bool Ticked(const Actor& actor) const;
  // One tick of manual `group` (Runtime::Tick), on the thread driving its actors.
  void RunTick(ActorGroup& group, uint64_t budget, TickReport* report);
  // Part of a tick: runs the slices of `order` from order[*next] on (advancing *next) until
  // the tick ends (true) or `until` has passed after a slice (false: more of the tick is left).
  bool RunTickPart(const std::vector<ActorRef>& order, size_t* next, uint64_t budget,
                   TickReport* report, std::chrono::steady_clock::time_point until);
  std::shared_ptr<CallSlot> FindCall(const ActorRef& ref) EXCLUDES(calls_mu);
  // Ends a call's registration; a later send to its address is a late reply.
  void RetireCall(const ActorRef& ref) EXCLUDES(calls_mu);
  // Registers `slot` under a fresh address and starts sending (SendAsync, CallAsync): one
  // attempt now, retries on reactor timers while the mailbox is full, and for a call a
  // deadline timer. Completes the slot at once on errors and when shutting down.
  void StartHostSend(std::shared_ptr<CallSlot> slot, const ActorRef& target, CborValue message,
                     std::chrono::milliseconds timeout) EXCLUDES(calls_mu);
  // One send attempt of StartHostSend, then the next step (a retry timer, a deadline timer or
  // completion).
  void TryHostSend(std::shared_ptr<CallSlot> slot, const ActorRef& address, const ActorRef& target,
                   std::shared_ptr<CborValue> message, Reactor::TimePoint deadline,
                   std::chrono::milliseconds timeout, std::chrono::microseconds pause);
  // Completes every registered host send or call with Unavailable(`why`) (StopThreads,
  // Runtime::FailPendingCalls).
  void FailPendingHostCalls(const std::string& why = "the actor runtime is shutting down")
      EXCLUDES(calls_mu);
  // Runs `fn` on the reactor owning `ref` and returns its result, waiting up to
  // options.call_timeout. Errors: NotFound, Unavailable (timeout or shutdown).
  Status OnActor(const ActorRef& ref, const std::function<Status(Reactor&, Actor&)>& fn);
  // Runs `fn` on `reactor` (inline under manual_mu in manual mode) and returns its result,
  // waiting up to options.call_timeout for it to start. `fn` never runs after this returns:
  // Unavailable (timeout) means it did not run; once started it is waited for to its end.
  Status OnReactor(Reactor& reactor, const std::function<Status(Reactor&)>& fn);

  // ---- actor calls (calls.cc), on the caller's reactor ----
  // The `call` import of `actor`: sends `message` to `target` now with a fresh reply address
  // and records the wait. Returns 0 (the invocation suspends) or a negative CallCode.
  int32_t StartActorCall(Actor& actor, const ActorRef& target, CborValue message,
                         std::chrono::milliseconds timeout) EXCLUDES(awaits_mu);
  // Resumes `ref`'s invocation with the outcome of its call `id`, unless that wait ended.
  void ResumeCall(Reactor& reactor, const ActorRef& ref, uint64_t id, Result<CborValue> reply,
                  bool queued) EXCLUDES(awaits_mu);
  // Ends `actor`'s wait, if any, without resuming it: the call is cancelled, so its reply
  // (if one comes) is dropped as late. DropInvocation calls it.
  void CancelAwait(Actor& actor) EXCLUDES(awaits_mu);
  // Counts and logs a reply that came for a call that already ended (transition.cc).
  void DropLateReply(const Actor& replier, const ActorRef& address);

  // ---- transitions (transition.cc), on the owning reactor ----
  // Runs one slice of `actor`; starts the next input first when there is no invocation.
  // Returns the instructions charged.
  uint64_t RunSlice(Reactor& reactor, Actor& actor, uint64_t budget, TickReport* report);
  bool Runnable(const Actor& actor) const;
  // Delivers an envelope whose mailbox slot is already reserved.
  void Deliver(Reactor& reactor, Actor& actor, Envelope envelope);
  // Ends the active invocation without effects and returns its instance to the pool.
  void DropInvocation(Reactor& reactor, Actor& actor);
  // Applies a queued reload/become at a handler boundary.
  void ApplyPendingInstall(Actor& actor);
  // FailurePolicy::kReset after a failure or kill (`why`): drops the reserved input, restores
  // the spawn state, incarnation + 1, idle, runnable if input waits.
  void ResetPoisoned(Reactor& reactor, Actor& actor, std::string_view why);
  void Publish(LifecycleKind kind, const Actor& actor, std::string detail = {});

  // ---- reactors (reactor.cc) ----
  // Where a new actor of `group` goes. Errors: as Spawn's.
  Result<Reactor*> Place(const SpawnOptions& options, const ActorGroup& group);
  void StartThreads();
  void StopThreads();
  // Queues `actor` for a turn (free-running; not for actors that only Tick runs).
  void MarkRunnable(Reactor& reactor, const Actor& actor);
  // Routes an envelope to `cell`'s owner (inline in manual mode).
  void Route(const std::shared_ptr<ActorCell>& cell, Envelope envelope);
};

}  // namespace reef::actor
