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

#include "actor/detail/actor_cell.h"
#include "actor/detail/lazy_deque.h"
#include "actor/image_record.h"
#include "actor/runtime.h"
#include "core/mutex.h"

namespace reef::actor {

// An actor, owned by its reactor.
struct Actor {
  std::shared_ptr<ActorCell> cell;
  std::shared_ptr<const Implementation> implementation;
  uint32_t incarnation = 1;
  CborValue state;                     // committed
  detail::LazyDeque<Envelope> queued;  // allocates on its first message (lazy_deque.h)
  std::optional<Envelope> reserved;
  ActorStatus status = ActorStatus::kIdle;
  std::optional<ActorStatus> paused_from;
  bool stopping = false;
  std::shared_ptr<const Implementation> pending_install;
  std::optional<std::string> failure;
  uint32_t turn_commits = 0;  // free-running: completions in the current turn
  // Free-running: the actor waits in its reactor's run_queue. An entry popped while this is
  // false is stale (the actor ran from a later entry, or moved) and is skipped.
  bool in_run_queue = false;
  // Manual groups: ActorGroup::ticks_started when the actor joined; the tick under way then
  // does not run it (it starts with the next one).
  uint64_t joined_at_tick = 0;
  // FailurePolicy::kReset: the spawn state a failure or kill goes back to.
  std::optional<CborValue> reset_state;
  // Restored (Runtime::Restore) while a stop was asked in the middle of handling the reserved
  // input: that input is handled again first, then on_shutdown runs, as without the restart.
  bool finish_reserved_first = false;
  std::string tag;  // SpawnOptions::tag, kept in the durable image's actor records
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

// The mailbox slots a transition reserved on one target (ReserveEffects).
struct Reservation {
  ActorRef target;
  uint32_t sends = 0;               // sends of the transition to `target`
  uint32_t needed = 0;              // slots reserved (a self-send may reuse the acknowledged one)
  std::shared_ptr<ActorCell> cell;  // null for a call's reply address (no mailbox)
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
  // Idle instances by implementation; each entry keeps its implementation alive, so a key
  // is never the address of a later implementation.
  struct InstancePool {
    std::shared_ptr<const Implementation> implementation;
    std::vector<PooledInstance> idle;
  };
  std::unordered_map<const Implementation*, InstancePool> pool;
  std::vector<PooledInstance>& IdleInstances(const std::shared_ptr<const Implementation>& of) {
    InstancePool& entry = pool[of.get()];
    if (!entry.implementation) entry.implementation = of;
    return entry.idle;
  }
  std::deque<ActorRef> run_queue;  // free-running (Actor::in_run_queue)

  // ---- cross-thread commands (free-running) ----
  using Command = std::function<void(Reactor&)>;
  void Post(Command command) EXCLUDES(mu_);
  // Moves every pending command into `*taken` (emptied first); waits up to `timeout` when none
  // is pending and `idle`. Takes no lock when nothing is pending and not `idle`.
  void TakeCommands(bool idle, std::chrono::steady_clock::duration timeout,
                    std::vector<Command>* taken) EXCLUDES(mu_);

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
  std::vector<Command> taken_commands;    // Turn's buffer for TakeCommands (reactor thread)
  std::vector<Reservation> reservations;  // Commit's buffer (transition.cc)
  // Durable groups (durable_group.cc): set while Commit delivers the sends its commit record
  // holds already, so Deliver does not record them again; Commit's buffers of them.
  bool committing = false;
  std::vector<RecordedSend> recorded_sends;
  std::vector<uint64_t> send_origins;

 private:
  // Protected by mu_; cv_ is signalled when a command is posted.
  Mutex mu_;
  CondVar cv_;
  std::vector<Command> commands_ GUARDED_BY(mu_);
  // commands_.size(), readable without the lock (SpinBriefly in TakeCommands).
  std::atomic<size_t> posted_{0};
};

// The reactor whose thread is running the caller (free-running mode), or null (reactor.cc).
Reactor* CurrentReactor();

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
  std::unordered_map<ActorRef, std::shared_ptr<CallSlot>, ActorRefHash> calls GUARDED_BY(calls_mu);

  // The wait-for graph of actor calls: caller -> callee for every awaiting call, so a call
  // that would close a cycle (A calls B calls A) is refused at once, across reactors.
  Mutex awaits_mu;
  std::unordered_map<ActorRef, ActorRef, ActorRefHash> awaits GUARDED_BY(awaits_mu);

  // ---- helpers (runtime.cc) ----
  // A new actor, not yet on any reactor or in the directory (Spawn, Restore).
  std::unique_ptr<Actor> NewActor(const ActorRef& ref,
                                  std::shared_ptr<const Implementation> implementation,
                                  CborValue state, uint32_t capacity, uint32_t reactor_id,
                                  std::shared_ptr<ActorGroup> group, LogLevel log_level);
  // The cell of `ref`; with `group` set, null unless the actor is of that group (what guest
  // code of one group sees of another).
  std::shared_ptr<ActorCell> FindCell(const ActorRef& ref, const ActorGroup* group = nullptr)
      EXCLUDES(directory_mu);
  // True when `actor` runs only in Tick although its runtime is free-running (a manual group).
  bool Ticked(const Actor& actor) const;
  // One tick of manual `group` (Runtime::Tick), on the thread driving its actors.
  void RunTick(ActorGroup& group, uint64_t budget, TickReport* report);
  // Part of tick number `tick` of `group`: walks group.ready in ref order after `*last` (from
  // the start when empty), giving each runnable actor one slice and setting *last, until the
  // tick ends (true) or `until` has passed after a slice (false: more of the tick is left).
  // An actor made runnable during the tick runs in it if its turn is still to come, as if the
  // tick had checked every member in order; one that joined during the tick does not. Drops
  // from group.ready the actors it finds not runnable.
  bool RunTickPart(ActorGroup& group, uint64_t tick, std::optional<ActorRef>* last, uint64_t budget,
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
  // Runtime::FailPendingCalls); actors' calls are left to end with their invocations.
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
  // Delivers an envelope whose mailbox slot is reserved; `origin`: its routed commit's number.
  void Deliver(Reactor& reactor, Actor& actor, Envelope envelope, uint64_t origin = 0);
  // Ends the active invocation without effects and returns its instance to the pool.
  void DropInvocation(Reactor& reactor, Actor& actor);
  // Applies a queued reload/become at a handler boundary.
  void ApplyPendingInstall(Actor& actor);
  // FailurePolicy::kReset after a failure or kill (`why`): drops the reserved input, restores
  // the spawn state, incarnation + 1, idle, runnable if input waits.
  void ResetPoisoned(Reactor& reactor, Actor& actor, std::string_view why);
  void Publish(LifecycleKind kind, const Actor& actor, std::string detail = {});

  // ---- durable groups (durable_group.cc), on the thread changing the actor ----
  // Each appends one record (image_record.h) when `actor`'s group is durable, else nothing.
  // The header (spawn: `spawned`; a poisoned input dropped: `dropped_first`).
  void RecordActor(const Actor& actor, bool spawned = false, bool dropped_first = false);
  // A committed transition: its new state, whether it acknowledged its input or ended a stop,
  // and its sends to actors (not reply addresses), in one record; a free-running group's leaves
  // the origins of its sends in reactor.send_origins for Route (0: delivered within it).
  void RecordCommit(Reactor& reactor, const Actor& actor, bool acknowledges, bool stopped,
                    const Effects& effects);
  void RecordArrival(const Actor& actor, uint64_t origin);  // an in-flight message arrived
  void RecordMessages(const Actor& actor);                  // set-messages
  void RecordDelivery(const Actor& actor, const Envelope& envelope);  // not a commit's send
  void RecordRemoval(const Actor& actor);

  // ---- reactors (reactor.cc) ----
  // Where a new actor of `group` goes. Errors: as Spawn's.
  Result<Reactor*> Place(const SpawnOptions& options, const ActorGroup& group);
  void StartThreads();
  void StopThreads();
  // Queues `actor` for a turn (free-running; not for actors that only Tick runs).
  void MarkRunnable(Reactor& reactor, Actor& actor);
  // Routes an envelope to `cell`'s owner (inline in manual mode, or on the owner's thread).
  void Route(const std::shared_ptr<ActorCell>& cell, Envelope envelope, uint64_t origin = 0);
};

}  // namespace reef::actor
