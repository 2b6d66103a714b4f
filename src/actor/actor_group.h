// ActorGroup: a set of actors of one actor runtime that share a scheduling mode, a log store
// and a lifecycle event stream (docs/runtime.md "One fleet"); and the scheduling modes.
//
// Thread ownership: below, per member.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <set>

#include "actor/actor.h"
#include "actor/durable_image.h"
#include "actor/lifecycle_events.h"
#include "actor/log_store.h"

namespace reef::actor {

// How actors run (runtime.h): only in Tick (manual) or on reactor threads (free-running).
enum class SchedulingMode : uint8_t { kManual, kFreeRunning };

// What Runtime::Tick ran.
struct TickReport {
  uint64_t slices = 0;        // slices run
  uint64_t instructions = 0;  // engine instructions charged
  uint64_t commits = 0;       // handlers that committed
  uint64_t failures = 0;      // handlers that failed
};

// A set of actors of one runtime that share a scheduling mode, a log store and a lifecycle
// event stream (docs/runtime.md "One fleet"). Every runtime has a default group (the
// runtime's mode, Runtime::logs() and events()). The live image is another: a manual group on
// the free-running fleet, whose actors all live on one reactor (`home`) and run only in
// Tick, one slice each in actor-ref order, with logs and events of their own. An actor of
// one group cannot send to or call an actor of another: to its guest code the other is
// unknown. Made by Runtime::CreateGroup; the runtime's actors keep it alive.
//
// Thread ownership: mode, home and durable are constant; logs, events and late_replies are
// thread-safe; members, ready and ticks_started belong to the thread driving `home` (manual_mu's
// holder in a manual runtime).
struct ActorGroup {
  ActorGroup(SchedulingMode group_mode, uint32_t home_reactor, const LogStoreOptions& log_options,
             std::shared_ptr<DurableImage> durable_image = nullptr)
      : mode(group_mode),
        home(home_reactor),
        durable(std::move(durable_image)),
        logs(log_options) {}

  const SchedulingMode mode;
  // A manual group in a free-running runtime: the reactor every actor of the group lives on.
  const uint32_t home;
  // Set: every change of the group's actors is recorded there (durable_image.h). Manual groups
  // only, whose actors all live on `home`.
  const std::shared_ptr<DurableImage> durable;
  LogStore logs;
  LifecycleEvents events;
  // Replies actors of this group sent to calls that had already ended (Runtime::LateReplies).
  std::atomic<uint64_t> late_replies{0};
  // Manual groups: the group's actors in ref order.
  std::set<ActorRef> members;
  // Manual groups: the members that may be runnable, in ref order, the order of Tick. Every
  // change that can make an actor runnable (a delivery, a resume, a restart, a call's outcome)
  // adds it (Runtime::State::MarkRunnable); Tick drops the ones it finds not runnable, so a
  // tick costs in proportion to these, not to all members (20,000 stopped actors cost nothing).
  std::set<ActorRef> ready;
  // Manual groups: the number of ticks begun (Actor::joined_at_tick).
  uint64_t ticks_started = 0;
};

}  // namespace reef::actor
