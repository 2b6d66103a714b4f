// ModuleRuntime: the event-sourced application layer of spec 000. It owns the module store and
// runs the active modules against the event store:
//   commands    executed on demand (ExecuteAsync): read by the command's query, fold, decide,
//               append under the DCB condition; conflicts retried with jittered backoff. An
//               execution is a task on the reactor fleet (actor::Runtime::Post): its guest
//               calls run there in slices, its reads, appends and records on I/O threads
//               (IoPool), so no thread waits for it
//   projectors  one subscription each, the guest on a reactor of the fleet and every SQL
//               statement on the projector's own SQLite thread; each event's handler and the
//               projector's position commit in one transaction of projectors/<name>.sqlite
//   effects     a dispatcher thread routes events by partition key to a global worker or one of
//               8 keyed workers, their guest calls on the fleet and each worker's SQL and
//               appends on an I/O thread of its own; the watermark (highest contiguous handled
//               position) is
//               persisted in effects/<name>.sqlite; failures retried with backoff 1 s doubling
//               to 600 s, reset after progress
// Lifecycle (spec 000 "Module lifecycle"): upload a version, activate (a rolling upgrade: the
// old version stops, then the new one resumes at its position), deactivate (state kept),
// replay (the module's database deleted, restart from position 0).
//
// Thread ownership: every public method may be called from any thread (the HTTP handler
// threads), the blocking ones (Execute, QueryProjector) not from a reactor of the fleet.
// Module threads are owned by the runtime and joined by Stop / the destructor.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "actor/runtime.h"
#include "apps/event_values.h"
#include "core/metrics.h"
#include "core/status.h"
#include "core/value.h"
#include "events/event_store.h"
#include "store/module_store.h"

namespace reef::apps {

struct RuntimeOptions {
  // Where reef.sqlite, projectors/, effects/ and cache/ live.
  std::filesystem::path data_dir;
  // Commands: how often a conflicting append is retried (after the first attempt), and the
  // base of the jittered backoff between attempts (attempt n waits a random time in
  // [0, base * 2^n]).
  uint32_t command_max_retries = 5;
  std::chrono::milliseconds command_retry_base{2};
  // Commands: bytes of decision states kept between executions (docs/abi.md "The fold
  // cache"), so an execution folds only the events appended since; 0 turns the cache off.
  uint64_t command_fold_cache_bytes = 64ull << 20;
  // Effects: the first retry delay of a failed event, doubling up to the cap.
  std::chrono::milliseconds effect_backoff_initial{1'000};
  std::chrono::milliseconds effect_backoff_max{600'000};
  // Effects: events dispatched and not yet handled, at most (the dispatcher waits beyond it).
  uint32_t effect_max_in_flight = 4'096;
  // Projectors: events per SQLite transaction while catching up.
  uint32_t projector_batch_events = 512;
  // The reactor fleet command executions, projectors and effects run on (shared with the
  // program runtime by `reef serve`); empty: the runtime starts a free-running fleet of its own
  // with `reactors` reactors (0: one per core, at least 2).
  std::shared_ptr<actor::Runtime> fleet;
  uint32_t reactors = 0;
  // Threads for the executions' event-store reads, appends and idempotency records, and
  // threads for projector queries (5 s of SQLite at most each: fewer at once keeps each within
  // its time bound); the work waiting for them is bounded by max_executions.
  uint32_t io_threads = 16;
  uint32_t query_threads = 8;
  // Threads shared by every effect's workers for their SQL and appends (each worker's work
  // runs in order, one item at a time, on any of them: core/serial_queue.h).
  uint32_t effect_io_threads = 8;
  // Command executions and projector queries in progress at once, at most; past that they are
  // refused with Unavailable (HTTP 503) at once.
  uint32_t max_executions = 1'024;
  store::ModuleStoreOptions store;
  // "" = the embedded module store in data_dir/reef.sqlite; else a PostgreSQL connection string
  // or URI: the module store several processes share (store::ModuleStore::OpenPostgres), whose
  // changes this runtime follows and whose effects run in one process at a time.
  std::string store_conninfo;
};

// The fold cache's counters since the process started (RuntimeOptions::command_fold_cache_bytes).
struct FoldCacheStats {
  uint64_t hits = 0;     // executions that started from a kept decision state
  uint64_t misses = 0;   // executions that folded from the first event
  uint64_t entries = 0;  // decision states kept now
  uint64_t bytes = 0;    // their size, as charged against the bound
};

// What the caller of a command learns.
struct CommandOutcome {
  enum class Kind { kAppended, kRejected };
  Kind kind = Kind::kAppended;
  std::string message;                         // kRejected: the module's exact message
  std::vector<events::SequencedEvent> events;  // kAppended: what was appended
  std::vector<Value> event_data;               // their data as the module wrote it
  events::Position position = 0;               // kAppended: last appended position
  std::string execution_id;                    // causation id of the appended events
  uint32_t attempts = 1;                       // 1 + conflicts retried
  bool replayed = false;                       // answered from the idempotency record
};

struct ExecuteOptions {
  std::string idempotency_key;  // the Idempotency-Key header; empty = none
  std::string correlation_id;   // the X-Correlation-Id header; empty = the execution id
};

// A running (or stopped) projector or effect, or an active command, as status and metrics see it.
struct ModuleStatus {
  store::ModuleKind kind = store::ModuleKind::kCommand;
  std::string name;
  std::string version;
  std::string state;           // "running", "catching_up", "backoff", "failed", "stopped", "active"
  std::string error;           // the last failure ("" when none)
  bool up = false;             // running without a failure
  uint64_t position = 0;       // projectors: last committed; effects: the watermark
  uint64_t failures = 0;       // handler failures since the runtime started
  uint64_t restarts = 0;       // starts after the first (activations, replays, env changes)
  double backoff_seconds = 0;  // effects: the current retry delay, 0 when none
  // The engine tier its newest instance runs on (wasm::TierName: "interp" or "native"); ""
  // until one was made. Under `--engine auto` it turns "native" once the module's code is
  // compiled (docs/engine.md "Choosing a tier").
  std::string tier;
  std::optional<events::Query> query;  // projectors / effects: their query
};

class ModuleRuntime {
 public:
  // Opens data_dir/reef.sqlite and starts every active projector and effect.
  // REQUIRES: `events` outlives the runtime. Errors: those of ModuleStore::Open.
  static Result<std::unique_ptr<ModuleRuntime>> Open(events::EventStore& events,
                                                     RuntimeOptions options);
  ~ModuleRuntime();
  ModuleRuntime(const ModuleRuntime&) = delete;
  ModuleRuntime& operator=(const ModuleRuntime&) = delete;

  // Validates `wasm` (a wasm binary with the kind's exports) and stores it (idempotent for the
  // same bytes; AlreadyExists for other bytes under the same version). With `activate`, then
  // activates it. Errors: InvalidArgument (bad name, version or module), LimitExceeded, those
  // of Activate.
  Result<store::UploadResult> Upload(store::ModuleKind kind, std::string_view name,
                                     std::string_view version, std::span<const uint8_t> wasm,
                                     bool activate);
  // Makes `version` the active one; a running projector or effect is stopped first and the new
  // version resumes from its position. Errors: NotFound; those of loading the module.
  // Commands: once it returns, no execution of the version it replaced appends; one in flight
  // that had not appended (or had decided a rejection) runs again on the new version. The
  // same holds for Deactivate, SetEnv, DeleteEnv and DeleteModule, against what they leave.
  Status Activate(store::ModuleKind kind, std::string_view name, std::string_view version);
  // Stops the module and clears its active version; its database and position are kept.
  Status Deactivate(store::ModuleKind kind, std::string_view name);
  // Projectors and effects: stops, deletes the module's database, restarts from position 0.
  // Errors: InvalidArgument for commands; FailedPrecondition when the module is not active.
  Status Replay(store::ModuleKind kind, std::string_view name);
  // Env changes restart a running projector or effect so it sees them.
  Status SetEnv(store::ModuleKind kind, std::string_view name, std::string_view key,
                std::string_view value);
  Status DeleteEnv(store::ModuleKind kind, std::string_view name, std::string_view key);
  Status DeleteVersion(store::ModuleKind kind, std::string_view name, std::string_view version);
  Status DeleteModule(store::ModuleKind kind, std::string_view name);

  // Runs the active version of command `name` on `input`, and gives the outcome to `done`,
  // exactly once, on an I/O thread or a reactor (or the caller's thread, for errors found at
  // once); `done` must not block. Never waits.
  // Errors: NotFound (no active command), Conflict (still conflicting after the retries),
  // Trapped (the module failed), InvalidArgument (the module returned a malformed decision or
  // events the store refuses), Unavailable (max_executions in progress, or stopping), those of
  // the event store.
  using CommandDone = std::function<void(Result<CommandOutcome>)>;
  void ExecuteAsync(std::string_view name, Value input, ExecuteOptions options, CommandDone done);
  // ExecuteAsync, waiting for the outcome. REQUIRES: not on a reactor of the fleet.
  Result<CommandOutcome> Execute(std::string_view name, const Value& input,
                                 const ExecuteOptions& options = {});

  // Runs one read-only SQL query on projector `name`'s database: rows as JSON objects.
  // Errors: NotFound (no such projector database), InvalidArgument (SQL errors, a statement
  // that writes, bad params), LimitExceeded (more than 10,000 rows).
  Result<nlohmann::json> QueryProjector(std::string_view name, std::string_view sql,
                                        const nlohmann::json& params);
  // QueryProjector on an I/O thread, the rows (or error) given to `done` there (or on the
  // caller's thread for Unavailable: max_executions in progress, or stopping).
  using QueryDone = std::function<void(Result<nlohmann::json>)>;
  void QueryProjectorAsync(std::string name, std::string sql, nlohmann::json params,
                           QueryDone done);

  // Shreds the scope's keys (crypto-shredding). Errors: NotFound when the scope has no key.
  Status ShredScope(std::string_view scope);

  // Status of every active or running module of `kind` (all kinds when nullopt), by name.
  std::vector<ModuleStatus> Statuses(std::optional<store::ModuleKind> kind = std::nullopt);
  std::optional<ModuleStatus> StatusOf(store::ModuleKind kind, std::string_view name);

  // Adds the module and event-store series of GET /metrics (docs/http-api.md "GET /metrics")
  // to `out`: a MetricsCollector. Any thread.
  void CollectMetrics(MetricFamilies& out);
  // The fold cache's counters. Any thread.
  FoldCacheStats FoldCache();

  const RuntimeOptions& options() const;
  store::ModuleStore& modules();
  KeyRing& keys();
  events::EventStore& event_store();

  // Refuses new executions and queries, waits for those in progress, and stops every module
  // thread (idempotent; the destructor calls it).
  void Stop();
  // The start of a shutdown, before the server's graceful stop, without waiting: new
  // executions and queries are refused, executions that have not appended end at their next
  // step, queries not started are not run and running ones are interrupted (all answered
  // Unavailable while the server still answers). Idempotent; any thread.
  void BeginStop();

  struct Impl;

 private:
  explicit ModuleRuntime(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace reef::apps
