// ModuleRuntime::Impl: the state behind ModuleRuntime (apps/module_runtime.h), shared by the
// three files that implement it:
//   module_runtime.cc     modules, runners and their lifecycle
//   command_execution.cc  command executions and their idempotency records
//   module_status.cc      statuses and the /metrics text
// Internal to src/apps.
//
// Thread ownership: as ModuleRuntime (any thread); each member says what guards it.
#pragma once

#include <fmt/format.h>
#include <sqlite3.h>

#include <array>
#include <atomic>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "apps/detail/fold_cache.h"
#include "apps/detail/keyed_turns.h"
#include "apps/module_abi.h"
#include "apps/module_runtime.h"
#include "apps/runners.h"
#include "core/io_pool.h"
#include "core/mutex.h"
#include "wasm/module.h"

namespace reef::apps {

// "projectors/balances": how logs and errors name a module.
inline std::string Key(store::ModuleKind kind, std::string_view name) {
  return fmt::format("{}/{}", store::ModuleKindPlural(kind), name);
}

// The (kind, name) key of the runners map and the counters.
using ModuleKey = std::pair<store::ModuleKind, std::string>;

// A command's counters since the server started.
struct CommandCounters {
  uint64_t appended = 0;
  uint64_t rejected = 0;
  uint64_t conflicts = 0;  // attempts retried after a conflict
  uint64_t failed = 0;
  std::string last_error;  // the last failure's message ("" until one)
  std::string tier;        // of the newest instance (ModuleStatus::tier)
};

struct ModuleRuntime::Impl {
  events::EventStore& events;
  RuntimeOptions options;
  std::unique_ptr<store::ModuleStore> store;
  std::unique_ptr<KeyRing> keys;
  sqlite3* results_db GUARDED_BY(results_mu) = nullptr;  // command_results in reef.sqlite
  Mutex results_mu;

  Mutex compiled_mu;
  std::map<std::string, std::shared_ptr<const wasm::Module>> compiled
      GUARDED_BY(compiled_mu);  // by SHA-256

  // Command executions with the same query take turns from read to append (by the query's
  // CBOR bytes), so they never conflict with each other; executions with the same command and
  // idempotency key take turns for the whole execution (command_execution.cc).
  detail::KeyedTurns query_turns;
  detail::KeyedTurns key_turns;

  class Execution;  // one command execution in flight (command_execution.cc)

  // Where executions run: guest calls on the fleet's reactors, store work on `io`.
  std::shared_ptr<actor::Runtime> fleet;
  std::unique_ptr<IoPool> io;
  // Projector queries have threads of their own (RuntimeOptions::query_threads): slow ones
  // neither hold up the executions' store work nor run so many at once that each misses its
  // time bound.
  std::unique_ptr<IoPool> query_io;
  // The effects' workers' SQL and appends (RuntimeOptions::effect_io_threads), shared.
  std::unique_ptr<IoPool> effect_io;
  // Idle command instances by module SHA-256, one pool per reactor (index = reactor id), each
  // touched only on its reactor's thread: an execution takes one for an attempt's guest calls
  // and gives it back, reset before its next use, so no execution sees another's memory.
  std::vector<std::map<std::string, std::vector<std::unique_ptr<ModuleInstance>>>>
      reactor_instances;
  // Executions and projector queries in progress (max_executions), and whether Stop began.
  Mutex flight_mu;
  CondVar flight_cv;
  uint32_t in_flight GUARDED_BY(flight_mu) = 0;
  // Whether the stop began (BeginStop): Enter refuses, executions end at their next attempt or
  // fold, queries not started are not run and running ones are interrupted. Read without the
  // lock on those paths; written under flight_mu, so Stop's wait sees no later Enter.
  std::atomic<bool> stop_requested{false};
  // Counts one more in flight; false (nothing counted) when stopping or at max_executions.
  Status Enter(std::string_view what) EXCLUDES(flight_mu);
  void Leave() EXCLUDES(flight_mu);

  // Serializes lifecycle changes (activate, deactivate, replay, env, delete).
  Mutex lifecycle_mu;
  // Guards runners, restarts, carried_failures, switching, command_counters, env_cache,
  // active_commands and command_generations.
  mutable Mutex mu;
  std::map<ModuleKey, std::unique_ptr<Runner>> runners GUARDED_BY(mu);
  std::map<ModuleKey, uint64_t> restarts GUARDED_BY(mu);
  std::map<ModuleKey, uint64_t> carried_failures GUARDED_BY(mu);
  // The last status of runners being replaced (StartRunner), shown until the next one runs.
  std::map<ModuleKey, ModuleStatus> switching GUARDED_BY(mu);
  std::map<std::string, CommandCounters, std::less<>> command_counters GUARDED_BY(mu);
  std::map<std::string, std::map<std::string, std::string>, std::less<>> env_cache
      GUARDED_BY(mu);  // commands
  // Active command versions (nullopt: none), so an execution does not query reef.sqlite.
  std::map<std::string, std::optional<store::ActiveModule>, std::less<>> active_commands
      GUARDED_BY(mu);
  // Per command, bumped by every lifecycle change (Forget). A fact read from the store is
  // cached only if no change came in between, and an execution whose version was resolved
  // under an older generation neither appends nor answers: it starts again (ExecuteOnce).
  std::map<std::string, uint64_t, std::less<>> command_generations GUARDED_BY(mu);

  // Held shared by an execution from its generation check to the end of its append, and
  // exclusively (briefly) by Forget after bumping a generation: once a deactivate or an
  // activation answers, no execution of the version it replaced can still append.
  SharedMutex append_gate;

  // Decision states of command executions, by what their fold depends on (ExecuteOnce).
  detail::FoldCache fold_cache{options.command_fold_cache_bytes};

  Impl(events::EventStore& e, RuntimeOptions o) : events(e), options(std::move(o)) {}

  std::filesystem::path DatabasePath(store::ModuleKind kind, std::string_view name) const {
    return options.data_dir / store::ModuleKindPlural(kind) / (std::string(name) + ".sqlite");
  }

  // The validated module of one stored version: from memory, else from cache/<sha256>.wasm,
  // else from the module store (which checks the SHA-256), then written to the cache.
  Result<std::shared_ptr<const wasm::Module>> LoadModule(store::ModuleKind kind,
                                                         std::string_view name,
                                                         std::string_view version,
                                                         std::string_view sha256);

  // Stops the runner of (kind, name), if any, and returns its last status (failures carried
  // over included); nullopt when none ran. With `handing_over`, the statuses show it as up and
  // "restarting" from the moment it is taken out until StartRunner puts the next one in.
  std::optional<ModuleStatus> StopRunner(const ModuleKey& key, bool handing_over = false)
      REQUIRES(lifecycle_mu);

  // Starts the active version of a projector or effect (stopping a running one first). While
  // one runner hands over to the next, the statuses show the old one as up and "restarting",
  // so an upgrade is not an outage and no counter goes back (docs/operations.md "Monitoring").
  Status StartRunner(store::ModuleKind kind, const std::string& name) REQUIRES(lifecycle_mu);

  // Refreshes what depends on the module's env (commands: the cache; others: a restart).
  Status EnvChanged(store::ModuleKind kind, const std::string& name) REQUIRES(lifecycle_mu);

  // ---- Several processes on one module store (ModuleStore::Watch) ----

  // Brings this process in line with a change another process made: a module's active version
  // or env (its runner started, replaced or stopped; a command's cached facts dropped), a
  // shredded key scope (cached keys and decision states dropped), or everything after the
  // store lost track. Runs on the store's watcher thread; does nothing once stopping.
  void OnStoreChange(const store::StoreChange& change) EXCLUDES(lifecycle_mu);
  // Starts, replaces or stops the runner of (kind, name) to match the store; a command's facts
  // are forgotten. Nothing happens when the runner already runs the active version and env.
  Status SyncModule(store::ModuleKind kind, const std::string& name) REQUIRES(lifecycle_mu);
  // The epoch of an effect's shared watermark (a replay through any node starts a new one);
  // 0 for projectors and on a store no other process shares.
  Result<int64_t> WatermarkEpoch(store::ModuleKind kind, const std::string& name);
  // What each runner was started with (SyncModule compares).
  struct RunnerFacts {
    std::string version;
    std::map<std::string, std::string> env;
    int64_t epoch = 0;  // effects on a shared store: their watermark's epoch (replays)
  };
  std::map<ModuleKey, RunnerFacts> runner_facts GUARDED_BY(mu);

  // The command's active version (nullopt: none), from the cache or the store.
  Result<std::optional<store::ActiveModule>> ActiveCommand(std::string_view name);

  // Drops cached facts about module (kind, name) after a lifecycle change; for a command, also
  // bumps its generation and waits for appends in progress (append_gate).
  // REQUIRES: the store holds the change.
  void Forget(store::ModuleKind kind, std::string_view name) REQUIRES(lifecycle_mu);

  Result<std::map<std::string, std::string>> CommandEnv(std::string_view name);

  // The command's active version, module and env when all three are in memory (the usual
  // case), so an execution starts without a trip to the module store; nullopt otherwise.
  struct CachedCommandFacts {
    store::ActiveModule active;
    std::shared_ptr<const wasm::Module> module;
    std::map<std::string, std::string> env;
  };
  std::optional<CachedCommandFacts> CachedCommand(std::string_view name);

  // The command's lifecycle generation (command_generations; 0 before any change).
  uint64_t CommandGeneration(std::string_view name);

  // ---- Command idempotency records ----

  Status OpenResults();

  std::optional<nlohmann::json> FindResult(std::string_view command, std::string_view key);

  void SaveResult(std::string_view command, std::string_view key, const nlohmann::json& response);

  void Count(std::string_view command, const CommandCounters& delta);

  // The outcome of an earlier execution from its idempotency record: the events are read back
  // from the store, so shredded data reads as null like everywhere else.
  Result<CommandOutcome> ReplayOutcome(const nlohmann::json& record);

  // Adds a stored event of an earlier execution to `out`, with its data as modules see it.
  Status AddStoredEvent(CommandOutcome& out, events::SequencedEvent event);

  // The outcome of an execution with `key` whose events are in the store but whose record is
  // not (the process stopped between the append and the record, or another node ran it):
  // found by the events' ids. nullopt when the store holds none of them.
  Result<std::optional<CommandOutcome>> RecoverOutcome(std::string_view command,
                                                       std::string_view key);
};

}  // namespace reef::apps
