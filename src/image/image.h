// Image: the live image behind `reef serve` (spec 001; issue 4). It composes a manual group of
// actors on the node's reactor fleet (actor/runtime.h ActorGroup), the source store in the data
// directory (code/source_store.h) and the compile cache (code/compile_cache.h), and exposes them as
// the protocol operations of docs/protocol.md ("Image operations", "Subscriptions and events"): one
// table of ops (STYLE.md habit 6, image/ops.cc) registered on a ProtocolDispatcher.
//
// Per-connection state (the `events` cursor, the log-follow subscription, the "changes"
// subscription) is keyed by Connection::id() and dropped by OnDisconnect. A log follow is a
// Subscription<LogEntry> drained by one pump thread per follow (at most
// ImageLimits::max_log_followers), which pushes "log" events and, when the follower lagged,
// one "subscription-failed" event.
//
// Thread ownership: any thread. Ops run concurrently on the server's handler threads; the
// runtime, store and cache are thread-safe; per-connection state is protected by an internal
// mutex. REQUIRES: the server whose dispatcher holds the ops is stopped before the Image is
// destroyed (the ops refer to it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string_view>

#include "actor/runtime.h"
#include "code/compile_cache.h"
#include "code/compiler.h"
#include "code/source_store.h"
#include "core/status.h"
#include "server/protocol.h"
#include "server/server.h"

namespace reef::image {

// Bounds on what one request may ask for; each breach is an invalid_argument or
// limit_exceeded error naming the bound (docs/protocol.md "Image operations").
struct ImageLimits {
  uint32_t max_tick_count = 100'000;  // ticks per `tick` request (count is 1..this)
  // Engine instructions per slice a `tick` may ask for (budget is 0..this; 0 = default).
  uint64_t max_tick_budget = 10'000'000;
  // count * budget of one `tick` request, in engine instructions per actor.
  uint64_t max_tick_instructions = 1'000'000'000;
  uint32_t max_page = 10'000;                 // `limit` of events and logs (1..this)
  uint32_t default_page = 1'000;              // `limit` when absent
  uint32_t max_mailbox_capacity = 1'000'000;  // `mailbox_capacity` of spawn (1..this)
  std::size_t max_filter_entries = 1'024;     // entries of an `actors` or `kinds` array
  std::size_t max_queued_messages = 100'000;  // `queued` array of set-messages
  std::size_t max_log_followers = 64;         // live log follows across all connections
  // Threads that run the ops that compile (spawn, reload, become), and how many such ops may
  // wait for one; past that they are refused with `unavailable`.
  uint32_t compile_threads = 2;
  uint32_t max_waiting_compiles = 256;
  // Threads that run the ops that wait for an actor's reactor (inspect, ps, stop, kill,
  // restart, pause, resume, set-state, set-messages, log-level), so no server thread waits
  // for a busy reactor, and how many such ops may wait; past that: `unavailable`.
  uint32_t control_threads = 4;
  uint32_t max_waiting_controls = 256;
};

struct ImageOptions {
  // The data directory; the source store is <data_dir>/reef.sqlite (DESIGN.md "Persistence").
  std::filesystem::path data_dir = "reef-data";
  // Keep the image's actors in <data_dir>/image (docs/operations.md "Durable image"): every
  // change recorded before anything acknowledges it, everything restored by Open. False
  // (`reef serve --ephemeral`): the actors live in memory only.
  bool durable = true;
  // The durable image's journal files are closed at this size, and compacted into a snapshot
  // once the closed ones hold as much (and at least the last snapshot's size).
  uint64_t journal_bytes = 64ull << 20;
  // The reactor fleet the image's actors live on (a manual group: they run only on `tick`,
  // on one reactor, between the fleet's other work). Null: the image makes its own, a
  // free-running runtime of one reactor with `runtime`'s options.
  std::shared_ptr<actor::Runtime> fleet;
  actor::RuntimeOptions runtime;
  code::CompilerOptions compiler;
  ImageLimits limits;
};

// One example source embedded in the binary at build time (examples/*/ *.c).
struct BundledSource {
  std::string_view path;  // canonical source path, e.g. "actors/counter"
  code::SourceKind kind = code::SourceKind::kC;
  std::string_view text;  // the example file's exact bytes
};

// The examples the image puts into working source on Open: actors/counter (the counter of
// spec 001), actors/hello and actors/asker (calls another actor). Static storage; any thread.
std::span<const BundledSource> BundledSources();

class Image {
 public:
  // Opens (creating when missing) the data directory and its source store, creates the
  // runtime and the compile cache, and writes every BundledSources() entry into working
  // source where its path is absent (an existing working source, edited or not, is kept).
  // A durable image then replays its journal and brings its actors back (Runtime::Restore).
  // Errors: those of SourceStore::Open (Unavailable, DataLoss), Runtime::Create
  // (InvalidArgument), SourceStore::Write, DurableImage::Open (DataLoss: damage, refused
  // with the file and offset or record; Unavailable: I/O, or another process has it open);
  // InvalidArgument when a recorded module no longer loads.
  static Result<std::unique_ptr<Image>> Open(ImageOptions options);

  // Closes every log follow and joins its pump thread, and removes the image's actors from
  // the fleet.
  ~Image();
  Image(const Image&) = delete;
  Image& operator=(const Image&) = delete;

  // Registers every image op of docs/protocol.md on `dispatcher`.
  // REQUIRES: this Image outlives every call of the registered handlers.
  // Errors: AlreadyExists when an op name is taken.
  Status RegisterOps(server::ProtocolDispatcher& dispatcher);

  // RegisterOps(options.dispatcher) and sets options.on_disconnect to OnDisconnect.
  Status Attach(server::ServerOptions& options);

  // Drops the connection's cursor and subscriptions (closing its log follow). Idempotent;
  // any thread, including a pump thread.
  void OnDisconnect(uint64_t connection_id);

  actor::Runtime& runtime();   // the fleet
  actor::ActorGroup& group();  // the image's actors on it
  code::SourceStore& sources();
  code::CompileCache& cache();
  const ImageOptions& options() const;

  struct State;  // internals (image/detail/image_state.h)

 private:
  explicit Image(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace reef::image
