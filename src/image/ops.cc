// The image's protocol operations: one table row per op (name, accepted args, whether it
// changes the image, handler, summary), registered by Image::RegisterOps (register_ops.cc). The
// wire shapes are in docs/protocol.md "Image operations"; the JSON builders in wire.cc.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <array>
#include <functional>
#include <string>
#include <vector>

#include "actor/guest_abi.h"
#include "code/source.h"
#include "image/detail/args.h"
#include "image/detail/image_state.h"
#include "image/detail/op_table.h"
#include "image/detail/wire.h"
#include "wasm/engine.h"

namespace reef::image {
namespace {

using json = nlohmann::json;
using detail::Args;
using detail::Changes;
using detail::Ctx;
using detail::Handler;
using detail::OpPool;
using detail::OpSpec;

std::string RefText(const ActorRef& ref) {
  return std::string(ref.str());
}

const ValueLimits& Limits(Ctx& c) {
  return c.s.runtime->options().value_limits;
}

// The actor named by argument `name`: an actor of the image (the fleet's other actors, program
// units, are not the image's to see or touch: NotFound as for an unknown ref).
Result<ActorRef> ImageActor(Ctx& c, std::string_view name = "actor") {
  REEF_ASSIGN_OR_RETURN(ActorRef ref, c.args.Actor(name));
  REEF_RETURN_IF_ERROR(c.s.runtime->CheckMember(ref, *c.s.group));
  return ref;
}

// Instantiates `implementation` once under the runtime's engine limits, the first time it is
// seen, so a module that can never run (an unknown import, memory over the page limit, a
// start function that traps or exceeds its budget) is refused at spawn/reload/become with
// the engine's error instead of failing at its first tick. The start function is guest code:
// it runs on the image's reactor, like all of the image's guest code, while this thread (a
// compile-pool one) waits.
Status CheckInstantiates(Image::State& s, const actor::Implementation& implementation) {
  {
    MutexLock lock(s.mu);
    if (s.instantiable.contains(implementation.id)) return Status::Ok();
  }
  Status instantiated = Status::Ok();
  REEF_RETURN_IF_ERROR(s.runtime->PostAndWait(s.group->home, [&] {
    try {
      wasm::Engine engine(actor::AbiV1Registry(), s.runtime->options().engine_limits);
      instantiated = engine.Instantiate(implementation.module).status();
    } catch (const std::exception& e) {  // on a reactor: never let it end the process
      instantiated = Status::Internal(fmt::format("instantiating failed: {}", e.what()));
    }
  }));
  if (!instantiated.ok()) {
    // An unknown import is the module's fault, not a missing resource: invalid_argument, so
    // it is not mistaken for "no source at this path" (not_found).
    Status status = instantiated;
    if (status.code() == Code::kNotFound) status = Status::InvalidArgument(status.message());
    return status.WithContext(fmt::format("{} cannot be instantiated", implementation.label));
  }
  MutexLock lock(s.mu);
  s.instantiable.insert(implementation.id);
  return Status::Ok();
}

// The implementation of a working source or revision, labelled with its source path (the
// label is what reload recompiles).
Result<std::shared_ptr<const actor::Implementation>> Build(Image::State& s,
                                                           const code::SourceFile& file) {
  REEF_ASSIGN_OR_RETURN(auto implementation, s.cache->Get(file));
  REEF_RETURN_IF_ERROR(CheckInstantiates(s, *implementation));
  if (implementation->label == file.path) return implementation;
  auto relabelled = std::make_shared<actor::Implementation>(*implementation);
  relabelled->label = file.path;
  return std::shared_ptr<const actor::Implementation>(std::move(relabelled));
}

// ---- actors -------------------------------------------------------------------------------------

Result<json> Spawn(Ctx& c) {
  REEF_ASSIGN_OR_RETURN(std::string path, c.args.String("path"));
  REEF_ASSIGN_OR_RETURN(Value state, c.args.RequiredValue("state", Limits(c)));
  REEF_ASSIGN_OR_RETURN(
      auto capacity,
      c.args.OptionalUint("mailbox_capacity", 1, c.s.options.limits.max_mailbox_capacity));
  REEF_ASSIGN_OR_RETURN(code::SourceFile file, c.s.store->Read(path));
  REEF_ASSIGN_OR_RETURN(auto implementation, Build(c.s, file));
  actor::SpawnOptions options;
  options.group = c.s.group;
  if (capacity) options.mailbox_capacity = static_cast<uint32_t>(*capacity);
  REEF_ASSIGN_OR_RETURN(ActorRef ref,
                        c.s.runtime->Spawn(implementation, std::move(state), options));
  c.change.actors = std::vector<std::string>{RefText(ref)};
  c.change.paths = {path};
  return json{
      {"actor", RefText(ref)},
      {"implementation", detail::ImplementationJson(implementation->id, implementation->label)},
      {"source_id", file.id}};
}

Result<json> Send(Ctx& c) {
  REEF_ASSIGN_OR_RETURN(ActorRef ref, ImageActor(c));
  REEF_ASSIGN_OR_RETURN(Value message, c.args.RequiredValue("message", Limits(c)));
  actor::SendOutcome outcome = c.s.runtime->TrySend(ref, std::move(message));
  REEF_RETURN_IF_ERROR(outcome.status);
  c.change.actors = std::vector<std::string>{RefText(ref)};
  return json{{"queued", true}};
}

// Runs on the fleet: the ticks hop from task to task on the image's reactor, so they hold
// no server thread and other ops (from any connection) run between two ticks. A client that
// went away stops the rest of its ticks.
void Tick(Ctx& c, server::OpDone done) {
  const ImageLimits& limits = c.s.options.limits;
  auto count = c.args.OptionalUint("count", 1, limits.max_tick_count);
  if (!count.ok()) return done(count.status());
  auto budget = c.args.OptionalUint("budget", 0, limits.max_tick_budget);
  if (!budget.ok()) return done(budget.status());
  uint64_t ticks = count->value_or(1);
  uint64_t slice = budget->value_or(0);
  uint64_t effective = slice == 0 ? c.s.runtime->options().manual_slice : slice;
  if (ticks * effective > limits.max_tick_instructions) {
    return done(Status::LimitExceeded(
        fmt::format("tick: count {} x budget {} = {} instructions per actor is over "
                    "max_tick_instructions ({}); ask for fewer ticks or a smaller budget",
                    ticks, effective, ticks * effective, limits.max_tick_instructions)));
  }
  c.change.actors = std::nullopt;
  std::weak_ptr<server::Connection> handle = c.connection->Handle();
  auto keep_going = [handle, tracked = !handle.expired()] {
    if (!tracked) return true;  // a connection without shared ownership (test fakes)
    auto connection = handle.lock();
    return connection != nullptr && !connection->closed();
  };
  c.s.runtime->TickAsync(c.s.group, static_cast<uint32_t>(ticks), slice, std::move(keep_going),
                         [done = std::move(done)](Result<actor::TickReport> report) {
                           if (!report.ok()) return done(report.status());
                           done(json{{"slices", report->slices},
                                     {"instructions", report->instructions},
                                     {"commits", report->commits},
                                     {"failures", report->failures}});
                         });
}

std::string PendingLabel(Image::State& s, const ActorRef& ref) {
  MutexLock lock(s.mu);
  auto it = s.pending_labels.find(ref);
  return it == s.pending_labels.end() ? std::string() : it->second;
}

Result<json> Inspect(Ctx& c) {
  REEF_ASSIGN_OR_RETURN(ActorRef ref, ImageActor(c));
  REEF_ASSIGN_OR_RETURN(actor::ActorSnapshot snapshot, c.s.runtime->Inspect(ref));
  return detail::SnapshotJson(snapshot, PendingLabel(c.s, ref));
}

Result<json> Ps(Ctx& c) {
  json actors = json::array();
  for (const actor::ActorSnapshot& snapshot : c.s.runtime->List(c.s.group.get())) {
    actors.push_back(detail::PsRowJson(snapshot));
  }
  return json{{"actors", std::move(actors)}};
}

Result<json> Events(Ctx& c) {
  const ImageLimits& limits = c.s.options.limits;
  REEF_ASSIGN_OR_RETURN(auto after, c.args.OptionalUint("after", 0, UINT64_MAX));
  REEF_ASSIGN_OR_RETURN(auto limit, c.args.OptionalUint("limit", 1, limits.max_page));
  actor::LifecycleFilter filter;
  REEF_ASSIGN_OR_RETURN(filter.kinds, c.args.KindList("kinds", limits.max_filter_entries));
  REEF_ASSIGN_OR_RETURN(filter.actors, c.args.ActorList("actors", limits.max_filter_entries));
  uint64_t start = 0;
  if (after) {
    start = *after;
  } else {
    MutexLock lock(c.s.mu);
    start = c.s.ConnectionLocked(*c.connection).events_cursor;
  }
  REEF_ASSIGN_OR_RETURN(
      actor::LifecyclePage page,
      c.s.group->events.Recent(start, limit.value_or(limits.default_page), filter));
  if (!after) {
    // Requests of one connection are handled in order, so nothing moved the cursor since.
    MutexLock lock(c.s.mu);
    c.s.ConnectionLocked(*c.connection).events_cursor = page.next_after;
  }
  json events = json::array();
  for (const actor::LifecycleEvent& event : page.events) events.push_back(detail::EventJson(event));
  return json{{"events", std::move(events)},
              {"next_after", page.next_after},
              {"more", page.more},
              {"missed", start + 1 < page.first_retained}};
}

// stop, kill, restart, pause, resume: one runtime call, then the actor's new status.
Handler Lifecycle(Status (actor::Runtime::*call)(const ActorRef&)) {
  return [call](Ctx& c) -> Result<json> {
    REEF_ASSIGN_OR_RETURN(ActorRef ref, ImageActor(c));
    REEF_RETURN_IF_ERROR((c.s.runtime.get()->*call)(ref));
    c.change.actors = std::vector<std::string>{RefText(ref)};
    REEF_ASSIGN_OR_RETURN(actor::ActorSnapshot snapshot, c.s.runtime->Inspect(ref));
    return json{{"actor", RefText(ref)},
                {"status", std::string(actor::ActorStatusName(snapshot.status))},
                {"incarnation", snapshot.incarnation}};
  };
}

// rm: removes a stopped or failed actor for good, with whatever its mailbox still holds.
Result<json> Rm(Ctx& c) {
  REEF_ASSIGN_OR_RETURN(ActorRef ref, ImageActor(c));
  REEF_ASSIGN_OR_RETURN(uint64_t dropped, c.s.runtime->RemoveStopped(ref));
  {
    MutexLock lock(c.s.mu);
    c.s.pending_labels.erase(ref);
  }
  c.change.actors = std::vector<std::string>{RefText(ref)};
  return json{{"actor", RefText(ref)}, {"removed", true}, {"dropped_messages", dropped}};
}

// Compiles the working source at `path` and queues it for `ref`'s next handler boundary.
Result<json> InstallFrom(Ctx& c, const ActorRef& ref, const std::string& path) {
  REEF_ASSIGN_OR_RETURN(code::SourceFile file, c.s.store->Read(path));
  REEF_ASSIGN_OR_RETURN(auto implementation, Build(c.s, file));
  {
    MutexLock lock(c.s.mu);
    c.s.pending_labels[ref] = implementation->label;
  }
  REEF_RETURN_IF_ERROR(c.s.runtime->Install(ref, implementation));
  REEF_ASSIGN_OR_RETURN(actor::ActorSnapshot snapshot, c.s.runtime->Inspect(ref));
  c.change.actors = std::vector<std::string>{RefText(ref)};
  c.change.paths = {path};
  return json{
      {"actor", RefText(ref)},
      {"pending_install", detail::ImplementationJson(implementation->id, implementation->label)},
      {"installed",
       !snapshot.pending_install.has_value() && snapshot.implementation_id == implementation->id},
      {"source_id", file.id}};
}

Result<json> Reload(Ctx& c) {
  REEF_ASSIGN_OR_RETURN(ActorRef ref, ImageActor(c));
  REEF_ASSIGN_OR_RETURN(actor::ActorSnapshot snapshot, c.s.runtime->Inspect(ref));
  const std::string& path = snapshot.implementation_label;
  if (!code::ValidateSourcePath(path).ok()) {
    return Status::FailedPrecondition(fmt::format(
        "reload: the implementation of @{} is labelled '{}', which is not a source path; use "
        "become with a path",
        ref.str(), path));
  }
  return InstallFrom(c, ref, path);
}

Result<json> Become(Ctx& c) {
  REEF_ASSIGN_OR_RETURN(ActorRef ref, ImageActor(c));
  REEF_ASSIGN_OR_RETURN(std::string path, c.args.String("path"));
  return InstallFrom(c, ref, path);
}

// ---- repair -------------------------------------------------------------------------------------

Result<json> SetState(Ctx& c) {
  REEF_ASSIGN_OR_RETURN(ActorRef ref, ImageActor(c));
  REEF_ASSIGN_OR_RETURN(Value state, c.args.RequiredValue("state", Limits(c)));
  REEF_RETURN_IF_ERROR(c.s.runtime->SetState(ref, std::move(state)));
  c.change.actors = std::vector<std::string>{RefText(ref)};
  return json{{"actor", RefText(ref)}};
}

Result<json> SetMessages(Ctx& c) {
  REEF_ASSIGN_OR_RETURN(ActorRef ref, ImageActor(c));
  if (const json* raw = c.args.Find("reserved");
      raw != nullptr && raw->is_array() && raw->size() > 1) {
    return c.args.Invalid("reserved", "holds zero or one message (the reserved input)");
  }
  REEF_ASSIGN_OR_RETURN(auto reserved, c.args.ValueList("reserved", 1, Limits(c)));
  REEF_ASSIGN_OR_RETURN(
      auto queued, c.args.ValueList("queued", c.s.options.limits.max_queued_messages, Limits(c)));
  REEF_RETURN_IF_ERROR(c.s.runtime->SetMessages(ref, std::move(reserved), std::move(queued)));
  c.change.actors = std::vector<std::string>{RefText(ref)};
  return json{{"actor", RefText(ref)}};
}

Result<json> LogLevelOp(Ctx& c) {
  REEF_ASSIGN_OR_RETURN(ActorRef ref, ImageActor(c));
  REEF_ASSIGN_OR_RETURN(auto level, c.args.OptionalLevel("level"));
  if (!level)
    return c.args.Invalid("level", "is required (trace, debug, info, warn, error, fatal)");
  REEF_RETURN_IF_ERROR(c.s.runtime->SetLogLevel(ref, *level));
  c.change.actors = std::vector<std::string>{RefText(ref)};
  return json{{"actor", RefText(ref)}, {"level", std::string(actor::LogLevelName(*level))}};
}

// ---- logs and subscriptions ---------------------------------------------------------------------

Result<actor::LogFilter> LogFilterArgs(Ctx& c) {
  actor::LogFilter filter;
  REEF_ASSIGN_OR_RETURN(filter.actors,
                        c.args.ActorList("actors", c.s.options.limits.max_filter_entries));
  REEF_ASSIGN_OR_RETURN(auto level, c.args.OptionalLevel("min_level"));
  filter.min_level = level.value_or(actor::LogLevel::kTrace);
  // A named actor must exist: a typo would otherwise read as "no logs" forever.
  for (const ActorRef& ref : filter.actors) {
    REEF_RETURN_IF_ERROR(c.s.runtime->CheckMember(ref, *c.s.group));
  }
  return filter;
}

Result<json> Logs(Ctx& c) {
  const ImageLimits& limits = c.s.options.limits;
  REEF_ASSIGN_OR_RETURN(actor::LogFilter filter, LogFilterArgs(c));
  REEF_ASSIGN_OR_RETURN(auto after, c.args.OptionalUint("after", 0, UINT64_MAX));
  REEF_ASSIGN_OR_RETURN(auto limit, c.args.OptionalUint("limit", 1, limits.max_page));
  REEF_ASSIGN_OR_RETURN(
      actor::LogPage page,
      c.s.group->logs.History(filter, after.value_or(0), limit.value_or(limits.default_page)));
  json entries = json::array();
  for (const actor::LogEntry& entry : page.entries) entries.push_back(detail::LogEntryJson(entry));
  return json{
      {"entries", std::move(entries)}, {"next_after", page.next_after}, {"more", page.more}};
}

Result<std::string> Topic(Ctx& c) {
  REEF_ASSIGN_OR_RETURN(std::string topic, c.args.String("topic"));
  if (topic != "logs" && topic != "changes") {
    return c.args.Invalid("topic",
                          fmt::format("is \"{}\"; topics are \"logs\" and \"changes\"", topic));
  }
  return topic;
}

Result<json> Subscribe(Ctx& c) {
  REEF_ASSIGN_OR_RETURN(std::string topic, Topic(c));
  if (topic == "changes") {
    for (std::string_view name : {"actors", "min_level"}) {
      if (c.args.Find(name) != nullptr) {
        return c.args.Invalid(name, "applies to topic \"logs\" only");
      }
    }
    c.s.SetChanges(*c.connection, true);
    return json{{"topic", topic}, {"after", c.s.group->events.last_seq()}};
  }
  REEF_ASSIGN_OR_RETURN(actor::LogFilter filter, LogFilterArgs(c));
  REEF_ASSIGN_OR_RETURN(uint64_t after, c.s.FollowLogs(*c.connection, std::move(filter)));
  return json{{"topic", topic}, {"after", after}};
}

Result<json> Unsubscribe(Ctx& c) {
  REEF_ASSIGN_OR_RETURN(std::string topic, Topic(c));
  if (topic == "changes") {
    c.s.SetChanges(*c.connection, false);
  } else {
    c.s.UnfollowLogs(c.connection->id());
  }
  return json{{"topic", topic}, {"subscribed", false}};
}

// ---- the table ----------------------------------------------------------------------------------

const std::vector<OpSpec>& Table() {
  using R = actor::Runtime;
  using enum Changes;
  static const std::vector<OpSpec> table = {
      {"spawn",
       {"path", "state", "mailbox_capacity"},
       kActors,
       Spawn,
       "Compile the working source at path and spawn an actor with an explicit initial state",
       nullptr,
       OpPool::kCompile},
      {"send", {"actor", "message"}, kActors, Send, "Queue a message (sender: the host)"},
      {"tick",
       {"count", "budget"},
       kActors,
       nullptr,
       "Advance the scheduler count ticks, one slice of budget instructions per runnable actor",
       Tick},
      {"inspect", {"actor"}, kNothing, Inspect, "One actor's snapshot", nullptr, OpPool::kControl},
      {"ps", {}, kNothing, Ps, "Every actor, in actor order", nullptr, OpPool::kControl},
      {"events",
       {"after", "limit", "kinds", "actors"},
       kNothing,
       Events,
       "Lifecycle events; without after, drains this connection's queue"},
      {"stop",
       {"actor"},
       kActors,
       Lifecycle(&R::Stop),
       "Graceful stop: finish the handler, run on_shutdown",
       nullptr,
       OpPool::kControl},
      {"kill",
       {"actor"},
       kActors,
       Lifecycle(&R::Kill),
       "Drop the invocation now; keep state and input",
       nullptr,
       OpPool::kControl},
      {"restart",
       {"actor"},
       kActors,
       Lifecycle(&R::Restart),
       "New incarnation; the reserved input goes to the front",
       nullptr,
       OpPool::kControl},
      {"rm",
       {"actor"},
       kActors,
       Rm,
       "Remove a stopped or failed actor for good; its mailbox is dropped",
       nullptr,
       OpPool::kControl},
      {"pause",
       {"actor"},
       kActors,
       Lifecycle(&R::Pause),
       "Stop scheduling the actor",
       nullptr,
       OpPool::kControl},
      {"resume",
       {"actor"},
       kActors,
       Lifecycle(&R::Resume),
       "Schedule a paused actor again",
       nullptr,
       OpPool::kControl},
      {"reload",
       {"actor"},
       kActors,
       Reload,
       "Recompile the actor's source path and switch at the next handler boundary",
       nullptr,
       OpPool::kCompile},
      {"become",
       {"actor", "path"},
       kActors,
       Become,
       "Compile the source at path and switch the actor to it at the next handler boundary",
       nullptr,
       OpPool::kCompile},
      {"sources", {}, kNothing, detail::SourcesOp, "Every working source, ordered by path"},
      {"read",
       {"path", "revision"},
       kNothing,
       detail::ReadOp,
       "The source (text, or a wasm binary in base64) of a working source or a revision"},
      {"write",
       {"path", "kind", "text", "base64", "expected"},
       kSources,
       detail::WriteOp,
       "Save working source; expected is the source_id last seen (null creates)"},
      {"commit",
       {"path", "message"},
       kSources,
       detail::CommitOp,
       "Snapshot the working source as a revision"},
      {"history", {"path"}, kNothing, detail::HistoryOp, "The revisions of a path, newest first"},
      {"rollback",
       {"path", "revision"},
       kSources,
       detail::RollbackOp,
       "Restore a revision as working source (no commit)"},
      {"logs",
       {"actors", "after", "limit", "min_level"},
       kNothing,
       Logs,
       "Read retained log entries in pages (non-destructive)"},
      {"subscribe",
       {"topic", "actors", "min_level"},
       kNothing,
       Subscribe,
       "Receive \"log\" events (topic logs) or \"changed\" events (topic changes)"},
      {"unsubscribe", {"topic"}, kNothing, Unsubscribe, "End a subscription of this connection"},
      {"set-state",
       {"actor", "state"},
       kActors,
       SetState,
       "Replace the committed state of a paused, stopped or failed actor",
       nullptr,
       OpPool::kControl},
      {"set-messages",
       {"actor", "reserved", "queued"},
       kActors,
       SetMessages,
       "Replace the reserved and queued messages of a paused, stopped or failed actor",
       nullptr,
       OpPool::kControl},
      {"log-level",
       {"actor", "level"},
       kActors,
       LogLevelOp,
       "Set an actor's minimum log level",
       nullptr,
       OpPool::kControl},
  };
  return table;
}

}  // namespace

namespace detail {

const std::vector<OpSpec>& OpTable() {
  return Table();
}

}  // namespace detail
}  // namespace reef::image
