// Runtime: the actor image. Spawns actors on reactors, delivers messages, runs invocations
// in budgeted slices, and applies lifecycle and repair operations (spec 001) with
// placement and backpressure (spec 003).
//
// Two ways to drive it:
// - Manual (RuntimeOptions::mode = kManual): nothing runs until Tick(count, budget), which
//   gives every runnable actor one slice per tick, in actor-ref order. Deterministic; for
//   tests. A manual ActorGroup brings the same to some actors of a free-running runtime (the
//   live image's REPL on the fleet).
// - Free-running (kFreeRunning): each reactor is an OS thread that drives its own actors,
//   with a slice budget and a per-turn message cap so one busy actor cannot starve others.
//
// Thread ownership: every public method may be called from any thread. Actor state is
// owned by the actor's reactor; calls that touch an actor run on that reactor (free-running)
// or under the runtime's lock (manual) and wait at most RuntimeOptions::call_timeout.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "actor/actor.h"
#include "actor/actor_group.h"
#include "actor/image_record.h"
#include "actor/lifecycle_events.h"
#include "actor/log_store.h"
#include "actor/runtime_types.h"
#include "core/limits.h"
#include "core/metrics.h"
#include "core/status.h"
#include "wasm/engine.h"

namespace reef::actor {

class Runtime {
 public:
  // Errors: InvalidArgument for zero reactors or zero capacities.
  static Result<std::unique_ptr<Runtime>> Create(RuntimeOptions options);
  // A free-running runtime with the other options at their defaults, to be shared as a fleet
  // (docs/runtime.md "One fleet"): `reactors` reactors, 0 = one per core (at least 2).
  // Errors: those of Create.
  static Result<std::shared_ptr<Runtime>> CreateFleet(uint32_t reactors);
  // Stops reactor threads (free-running) after their current slice.
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // ---- actors -------------------------------------------------------------------------

  // Creates an actor (incarnation 1, status idle) with an explicit initial state. Free-running,
  // from a thread other than the actor's reactor: returns without waiting for that reactor;
  // the actor's insertion is queued on it ahead of anything later done with the ref (sends,
  // inspects, lifecycle operations), so the actor is there for all of them.
  // Errors: LimitExceeded (state over the value limits), InvalidArgument (capacity 0),
  // FailedPrecondition (the named reactor is not Up, or none is), Unavailable (shutting down).
  Result<ActorRef> Spawn(std::shared_ptr<const Implementation> implementation, Value state,
                         const SpawnOptions& options = {});

  // ---- groups ---------------------------------------------------------------------------

  // A new group (ActorGroup), recording its changes in `durable` when given. Errors:
  // InvalidArgument (a free-running group in a manual runtime, or a durable group of a manual
  // runtime with several reactors), FailedPrecondition (no Up reactor to be a manual group's
  // home).
  Result<std::shared_ptr<ActorGroup>> CreateGroup(SchedulingMode mode,
                                                  std::shared_ptr<DurableImage> durable = nullptr);
  // Brings back the actors of durable `group` as DurableImage::Open recovered them, without
  // recording them again: same refs, incarnations, states, statuses, tags and messages in
  // order; on the home reactor of a manual group, spread over the Up reactors (as Spawn
  // places them) for a free-running one. An actor that was running or awaiting comes back idle with
  // its reserved message first, so that input is retried (spec 001's restart rule); one paused from
  // running or awaiting comes back paused from idle. `implementation_of` maps a recorded
  // implementation id to the implementation to run. May be called once per batch of actors.
  // Errors: InvalidArgument (not a durable group), NotFound (an implementation id
  // `implementation_of` does not know), AlreadyExists (a ref in use), FailedPrecondition (no
  // Up reactor), Unavailable (a reactor did not answer); nothing of the batch is restored then
  // (a reactor that did not answer may still restore its part).
  using ImplementationOf =
      std::function<std::shared_ptr<const Implementation>(std::string_view id)>;
  Status Restore(const std::shared_ptr<ActorGroup>& group, std::vector<ActorRecord> actors,
                 const ImplementationOf& implementation_of);
  // Lets the actors Restore brought back into free-running `group` run: Restore leaves them
  // still, so that none sends to (or calls) an actor of a batch not restored yet. Call it once,
  // after the last batch (a manual group's run at its ticks anyway: nothing to do).
  // Errors: Unavailable (a reactor did not answer). REQUIRES: not on a reactor thread.
  Status StartRestored(const ActorGroup& group);
  // The output gate of durable `group` (durable_image.h): runs `done(Ok)` once every change
  // this thread made to `after` before this call (null: to any actor of a manual group) is on
  // disk — including its deliveries to it still on their way: the wait goes the way a message
  // does, behind them, and follows the actor when it moves. `done(Unavailable)` when the
  // journal failed or the runtime stops first; `done(InvalidArgument)` for null with a
  // free-running group; at once `done(Ok)` when `group` is not durable. `done` runs on the
  // journal's writer thread, a reactor, or this thread, and must not block. Any thread.
  void WhenDurable(const ActorGroup& group, const std::optional<ActorRef>& after,
                   std::function<void(Status)> done);
  // Removes every actor of `group` for good (invocations dropped, calls cancelled, sends to
  // them NotFound). REQUIRES: not on a reactor thread. Errors: Unavailable (a reactor did not
  // answer within call_timeout; its actors of the group stay).
  Status RemoveGroup(const ActorGroup& group);
  // NotFound ("no actor @ref") unless `ref` is an actor of `group` (host operations on behalf
  // of one group: the image's ops). Any thread.
  Status CheckMember(const ActorRef& ref, const ActorGroup& group);

  // The snapshot of every actor of `group` (null = the default group), in actor-ref order.
  std::vector<ActorSnapshot> List(const ActorGroup* group = nullptr);
  // Errors: NotFound.
  Result<ActorSnapshot> Inspect(const ActorRef& ref);
  // Mailbox occupancy, status and incarnation from the actor's atomics (no reactor round
  // trip). Errors: NotFound.
  Result<MailboxUsage> Mailbox(const ActorRef& ref);

  // Removes an actor that has nothing to do (idle eviction, spec 003): no active
  // invocation, no input, no send on its way. Its ref is unknown afterwards (sends get
  // NotFound) and its retained log entries are dropped. Errors: NotFound; FailedPrecondition
  // when it is busy (nothing changes).
  Status Remove(const ActorRef& ref);
  // Removes a stopped or failed actor for good (`reef rm`): its state, its mailbox and its
  // place in ticks go; its ref is unknown afterwards (sends get NotFound). The messages still
  // in its mailbox are dropped and counted; a call waiting on one of them fails ("@REF was
  // removed"). Publishes a `removed` lifecycle event (detail: the dropped count); its
  // retained log entries are dropped. Returns the number of dropped messages.
  // Errors: NotFound; FailedPrecondition when it is not stopped or failed (stop or kill it
  // first), still stopping, or when a send to it is still on its way (nothing changes: try
  // again).
  Result<uint64_t> RemoveStopped(const ActorRef& ref);

  // ---- host-side sends (the sender is the host: actors see null) ------------------------

  // Never blocks. Errors (message returned): NotFound, FailedPrecondition (stopped or
  // failed actor), LimitExceeded (mailbox full), and the value limits.
  SendOutcome TrySend(const ActorRef& target, Value message);
  // Waits up to `timeout` for mailbox capacity (free-running; manual mode cannot make
  // capacity while the caller waits, so a full mailbox fails at once). Errors as TrySend,
  // Unavailable on timeout.
  SendOutcome Send(const ActorRef& target, Value message, std::chrono::milliseconds timeout);
  // Sends and waits for the handler's reply: the first message the target sends to the
  // reply address (the sender it sees) while handling it. Waits for mailbox capacity first,
  // within the same `timeout`. Errors as Send; Unavailable on timeout; FailedPrecondition
  // if the handler fails, is killed, or (ReplyPolicy::kRequired) commits without replying.
  // `queued`, when given, tells whether the message got into the mailbox (so an Unavailable
  // means "no reply in time", not "no room").
  Result<Value> Call(const ActorRef& target, Value message, std::chrono::milliseconds timeout,
                     ReplyPolicy reply = ReplyPolicy::kRequired, bool* queued = nullptr);

  // ---- host-side sends that never block the caller (free-running) ------------------------

  // What an asynchronous send or call ended with: the reply (CallAsync; null for SendAsync)
  // or an error as the blocking twin returns it, and whether the message got into the
  // mailbox (so Unavailable with `queued` means "no reply in time", without it "no room").
  using HostDone = std::function<void(Result<Value> reply, bool queued)>;
  // Send without blocking: `done` runs once, when the message is queued or cannot be (errors
  // as Send); a full mailbox is retried on a reactor timer (20 us .. 2 ms backoff). `done`
  // runs on any thread (the caller's, a reactor's, or the destroying thread's at shutdown
  // with Unavailable) and must not block. Manual mode: one TrySend, answered at once.
  void SendAsync(const ActorRef& target, Value message, std::chrono::milliseconds timeout,
                 HostDone done);
  // Call without blocking: as Call, with the reply (or error) given to `done`, exactly once,
  // within `timeout` (a reactor timer ends the wait) or at shutdown (Unavailable). A reply
  // that comes later is dropped. `done` as for SendAsync. Errors: those of Call;
  // FailedPrecondition in manual mode.
  void CallAsync(const ActorRef& target, Value message, std::chrono::milliseconds timeout,
                 ReplyPolicy reply, HostDone done);
  // Ends every host send and call still waiting (queued or not) with Unavailable(`why`), at
  // once: for a shutdown that should answer its callers rather than wait out their timeouts.
  // Later sends and calls are not affected, nor are actors' calls (an invocation waiting in
  // one ends uncommitted with the runtime, and a durable group retries it). Any thread.
  void FailPendingCalls(const std::string& why);

  // ---- scheduling -----------------------------------------------------------------------

  // `count` ticks of manual `group` (null = default): each gives its runnable actors one slice
  // of `budget` instructions (0 = manual_slice) in actor-ref order; what arrived meanwhile
  // (sends, replies, timers) is taken between two ticks. Free-running runtime: one reactor
  // task per tick on the group's home. Errors: FailedPrecondition (free-running group),
  // Unavailable (stopped first). REQUIRES (free-running): not on a reactor thread.
  Result<TickReport> Tick(uint32_t count, uint64_t budget = 0, ActorGroup* group = nullptr);
  // Tick without blocking: `done` gets the result once, on the home reactor (the caller's
  // thread for an error found at once, and in a manual runtime), and must not block.
  // `keep_going` (optional) is asked before every tick, the first too: false ends there.
  using TickDone = std::function<void(Result<TickReport>)>;
  void TickAsync(std::shared_ptr<ActorGroup> group, uint32_t count, uint64_t budget,
                 std::function<bool()> keep_going, TickDone done);

  // ---- lifecycle (host-only system messages; spec 001) ----------------------------------

  // Finishes the handler, then runs on_shutdown; no draining. An actor awaiting a call does
  // not finish it: the call is cancelled and the invocation dropped (the input stays
  // reserved). Kill, Restart and Cancel cancel a call the same way; its reply is then late.
  Status Stop(const ActorRef& ref);
  // Drops the invocation now; keeps state and input (FailurePolicy::kReset: resets instead,
  // and FailedPrecondition when no invocation runs, so a late kill never wipes state).
  Status Kill(const ActorRef& ref);
  Status Restart(const ActorRef& ref);  // incarnation + 1; reserved input to the front
  Status Pause(const ActorRef& ref);    // keep the invocation; not scheduled
  Status Resume(const ActorRef& ref);   // restore the prior status
  Status Cancel(const ActorRef& ref);   // drop the invocation; reserved input to the front
  // Queues a switch to `implementation` for the next handler boundary (reload and become
  // are both this; the caller compiled it). The current one stays if compiling failed.
  Status Install(const ActorRef& ref, std::shared_ptr<const Implementation> implementation);
  // Switches implementation at an idle safe point (no active invocation, no reserved input),
  // replacing the state with migration(state). If the migration fails or its result breaks
  // the value limits, neither state nor implementation changes.
  // Errors: FailedPrecondition (not at a safe point), the migration's error.
  Status InstallWithMigration(const ActorRef& ref,
                              std::shared_ptr<const Implementation> implementation,
                              const Migration& migration);

  // ---- repair (spec 001: paused, stopped or failed; no active invocation) ---------------

  Status SetState(const ActorRef& ref, Value state);
  // `reserved` holds zero or one message. Messages equal to the one at the same position
  // keep their sender; others become host-originated. Every check runs before any change.
  Status SetMessages(const ActorRef& ref, std::vector<Value> reserved, std::vector<Value> queued);
  // Minimum level of accepted log entries; takes effect at once, also mid-invocation.
  Status SetLogLevel(const ActorRef& ref, LogLevel level);
  // Replaces the actor's SpawnOptions::tag (recorded in a durable group). Errors: NotFound,
  // InvalidArgument (over kMaxTagBytes), Unavailable (its reactor did not answer).
  Status SetTag(const ActorRef& ref, std::string tag);

  // ---- reactors and placement (spec 003) ------------------------------------------------

  std::vector<ReactorInfo> Reactors();
  // Stops new placement on `reactor` and moves its actors that have no active invocation
  // (state and mailbox, order kept) to Up reactors. The reactor is Down once it hosts no
  // actor; actors busy at the time stay (call Drain again later), and so do the actors of
  // a manual group in a free-running runtime (they run only on their home). Errors: NotFound,
  // FailedPrecondition when no other reactor is Up.
  Status Drain(uint32_t reactor);

  // ---- host work on the reactors (free-running) --------------------------------------------

  // Runs `work` on reactor `reactor`'s thread between actor turns, soon or after `delay`: how
  // host-driven guest code (command executions) shares the reactors. `work` must not block
  // (it hands waits to other threads, which Post the rest back). Work pending when the
  // runtime stops is destroyed unrun on the destroying thread, so what it owns must answer
  // its waiter when destroyed. Any thread.
  // Errors (`work` destroyed unrun): NotFound (no such reactor), FailedPrecondition (manual
  // mode), Unavailable (shutting down).
  Status Post(uint32_t reactor, std::function<void()> work,
              std::chrono::microseconds delay = std::chrono::microseconds(0));
  // Post, then waits until `work` has run. REQUIRES: not on a reactor thread of this runtime.
  // Errors: those of Post, and Unavailable when the runtime stopped before `work` ran (in
  // both cases `work` did not run).
  Status PostAndWait(uint32_t reactor, std::function<void()> work);
  // The number of reactors (constant). Any thread.
  uint32_t ReactorCount() const;
  // The reactor the next piece of host work should go to: the next Up one in turn (like
  // Spawn's round-robin placement), so a drained reactor gets no new work. Any thread.
  // Errors: FailedPrecondition when no reactor is Up.
  Result<uint32_t> PlaceWork();

  // ---- observation ----------------------------------------------------------------------

  LogStore& logs();           // the default group's
  LifecycleEvents& events();  // the default group's
  const RuntimeOptions& options() const;
  // Replies by actors of `group` (null = default) to calls that had ended (timed out, caller
  // stopped, killed or restarted), dropped. Any thread.
  uint64_t LateReplies(const ActorGroup* group = nullptr) const;
  // Adds `group`'s series to a /metrics scrape, labelled runtime=`name`:
  // reef_actor_late_replies_total. Any thread.
  void CollectMetrics(std::string_view name, MetricFamilies& out,
                      const ActorGroup* group = nullptr) const;

  struct State;  // internals (detail/runtime_state.h)

 private:
  explicit Runtime(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace reef::actor
