// Image::State: what the image ops share (internal to src/image). The op handlers live in
// ops.cc; connection bookkeeping, log-follow pumps and change notifications in image.cc.
//
// Thread ownership: components are constant after Open and thread-safe themselves; the
// per-connection map is protected by mu.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "actor/log_store.h"
#include "core/io_pool.h"
#include "core/mutex.h"
#include "image/image.h"

namespace reef::image {

// One live log follow: its subscription and the thread that pumps it to the connection.
struct LogFollow {
  std::shared_ptr<actor::Subscription<actor::LogEntry>> subscription;
  std::thread pump;
};

// What the image keeps for one connection.
struct ConnectionState {
  std::weak_ptr<server::Connection> handle;  // for pushes after the op returned
  uint64_t events_cursor = 0;                // lifecycle seq the next `events` starts after
  bool changes = false;                      // subscribed to "changes"
  std::unique_ptr<LogFollow> follow;         // subscribed to "logs"
};

// What a mutating op changed, for the "changed" notification.
struct Change {
  std::optional<std::vector<std::string>> actors;  // nullopt = any (tick)
  std::vector<std::string> paths;
};

struct Image::State {
  // ---- Constant after Open ------------------------------------------------------------------
  ImageOptions options;
  std::unique_ptr<code::SourceStore> store;
  std::unique_ptr<code::CompileCache> cache;
  // The fleet the image's actors live on (ImageOptions::fleet, or the image's own), and their
  // group: manual, so they run only in `tick`, with logs and events of their own.
  std::shared_ptr<actor::Runtime> runtime;
  std::shared_ptr<actor::ActorGroup> group;
  // The journal the group records its changes in (null: ephemeral).
  std::shared_ptr<actor::DurableImage> durable;

  // Opens the journal in <data dir>/image, creates `group` durable and restores its actors
  // (durable.cc). Errors: those of Image::Open for the durable image.
  Status OpenDurable();
  // The output gate (docs/operations.md "Durable image"): runs `done(Ok)` once every change
  // made to the image's actors before this call is on disk (at once when ephemeral), or
  // `done(Unavailable)` when that cannot be. A barrier on the image's reactor first, so that a
  // change posted there (a send, a spawn) is recorded. Any thread; `done` must not block.
  void AfterDurable(std::function<void(Status)> done);

  // ---- Protected by mu ----------------------------------------------------------------------
  Mutex mu;
  std::unordered_map<uint64_t, ConnectionState> connections GUARDED_BY(mu);
  // Label of the implementation last queued by reload/become per actor (the snapshot's
  // pending_install holds only its id).
  std::map<ActorRef, std::string> pending_labels GUARDED_BY(mu);
  // Implementation ids that instantiated once under the runtime's engine limits (ops.cc
  // CheckInstantiates); bounded by the compile cache's size.
  std::set<std::string> instantiable GUARDED_BY(mu);

  // The connection's state, created on first use (records its handle).
  ConnectionState& ConnectionLocked(server::Connection& connection) REQUIRES(mu);

  // Replaces the connection's log follow with one for `filter`; returns the log seq at the
  // time of subscribing. Errors: LimitExceeded past ImageLimits::max_log_followers.
  Result<uint64_t> FollowLogs(server::Connection& connection, actor::LogFilter filter);
  // Ends the connection's log follow, if any (closes it and joins its pump).
  void UnfollowLogs(uint64_t connection_id);
  // Sets or clears the connection's "changes" subscription.
  void SetChanges(server::Connection& connection, bool subscribed);
  // Pushes {"op", "actors", "paths"} as a "changed" event to every connection subscribed to
  // "changes". Never blocks on a client (Push is bounded).
  void NotifyChanged(std::string_view op, const Change& change);
  // Drops a connection's state (OnDisconnect).
  void Forget(uint64_t connection_id);

  // ---- Last, so destroyed first: its running jobs use everything above -------------------
  // Threads for the ops that compile (spawn, reload, become): they run here, not on a server
  // thread, and answer when done (ImageLimits::compile_threads, max_waiting_compiles).
  std::unique_ptr<IoPool> compile_pool;
  std::unique_ptr<IoPool> control_pool;  // ops that wait for an actor's reactor
};

}  // namespace reef::image
