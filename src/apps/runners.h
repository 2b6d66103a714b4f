// Internal to src/apps: the threads that run one active projector or effect (module_runtime.h
// describes the behaviour), and helpers shared by the runtime's parts.
//
// Thread ownership: a Runner is started and stopped by the runtime under its lifecycle lock;
// Snapshot may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "actor/runtime.h"
#include "apps/event_values.h"
#include "apps/module_runtime.h"
#include "core/io_pool.h"
#include "core/mutex.h"
#include "events/event_store.h"
#include "wasm/module.h"
#include "wasm/tier.h"

struct sqlite3;

namespace reef::apps {

// The 64-bit FNV-1a hash of `bytes` (offset basis 14695981039346656037, prime 1099511628211;
// draft-eastlake-fnv): how effects spread partition keys over their workers (docs/abi.md).
uint64_t Fnv1a64(std::string_view bytes);

// Bounds of QueryReadModel: rows per answer, bytes of row data per answer (also the largest
// string or blob a statement may build), bytes of SQL text, the time one query may run, and
// the SQLite heap one query may hold (SqlHeapBudget; sorts larger than the page cache spill
// to temporary files, so this bounds aggregates and the like, not the size of a read model).
// How long a projector or effect runner waits for new events before it looks at its stop
// flag again (and an effect runner persists its watermark).
inline constexpr auto kRunnerPollTimeout = std::chrono::milliseconds(100);

inline constexpr size_t kMaxReadModelRows = 10'000;
inline constexpr uint64_t kMaxReadModelAnswerBytes = 16u << 20;
inline constexpr uint64_t kMaxReadModelSqlBytes = 64u << 10;
inline constexpr std::chrono::seconds kMaxReadModelQueryTime{5};
// How long a query may wait for a query thread before it is refused (Unavailable) instead of
// run: a client waiting longer has most likely given up.
inline constexpr std::chrono::seconds kMaxReadModelQueryWait{10};
inline constexpr int64_t kMaxReadModelQueryHeapBytes = 64 << 20;

// Runs one read-only statement `sql` with positional `params` (a JSON array of scalars) on the
// SQLite database at `path`, opened read-only, and returns its rows as JSON objects.
// `cancel`, when given, interrupts the statement once it is true (a server stopping).
// Errors: InvalidArgument (not one read-only statement, bad params, SQL errors), LimitExceeded
// (a bound above; the time bound interrupts the statement), Unavailable (cannot open, or
// cancelled).
Result<nlohmann::json> QueryReadModel(const std::filesystem::path& path, std::string_view sql,
                                      const nlohmann::json& params,
                                      const std::atomic<bool>* cancel = nullptr);

// Opens (creating) a module database with WAL and a busy timeout. Errors: Unavailable.
Result<sqlite3*> OpenModuleDatabase(const std::filesystem::path& path);
// Runs SQL text without results. Errors: Internal with SQLite's message.
Status ExecSql(sqlite3* db, const char* sql);

// The host's one-row bookkeeping table of a module database: `table` (reef_projector or
// reef_effect) holds in `column` (position or watermark) how far the module got, and the
// version that got there. Load creates the table when missing and gives 0 for a new database.
// `table` and `column` are the host's constants, never user input. Errors: Internal.
Result<uint64_t> LoadRunnerPosition(sqlite3* db, const char* table, const char* column);
Status SaveRunnerPosition(sqlite3* db, const char* table, const char* column, uint64_t position,
                          const std::string& version);

// What a runner needs to start.
struct RunnerSpec {
  store::ModuleKind kind = store::ModuleKind::kProjector;
  std::string name;
  std::string version;
  std::shared_ptr<const wasm::Module> module;
  std::map<std::string, std::string> env;
  std::filesystem::path db_path;  // projectors/<name>.sqlite or effects/<name>.sqlite
  events::EventStore* events = nullptr;
  KeyRing* keys = nullptr;
  const RuntimeOptions* options = nullptr;
  uint64_t restarts = 0;
  uint64_t initial_position = 0;  // the status's position until the runner reads its own
  // Projectors: the fleet their guest calls run on, and the reactor (docs/runtime.md "One
  // fleet").
  std::shared_ptr<actor::Runtime> fleet;
  uint32_t reactor = 0;
  // Effects: the pool their workers' SQL and appends share (outlives the runner).
  IoPool* effect_io = nullptr;
  // Effects: the module store, for the lease and the shared watermark when several processes
  // share it (outlives the runner); and how the runner asks for a fresh runner after losing
  // its lease (runs the restart elsewhere: the runner is stopped and replaced).
  store::ModuleStore* store = nullptr;
  std::function<void()> restart;
};

class Runner {
 public:
  virtual ~Runner() = default;
  // Starts the module's threads. Failures while starting are reported through the status.
  virtual void Start() = 0;
  // Asks the threads to stop and joins them; idempotent.
  virtual void Stop() = 0;
  virtual ModuleStatus Snapshot() const = 0;
};

std::unique_ptr<Runner> MakeProjectorRunner(RunnerSpec spec);
std::unique_ptr<Runner> MakeEffectRunner(RunnerSpec spec);

// The mutable status of a runner, shared by its threads.
class RunnerStatus {
 public:
  explicit RunnerStatus(const RunnerSpec& spec);
  void SetState(std::string state);
  void Fail(std::string error);          // state "failed", up = false, failures + 1
  void CountFailure(std::string error);  // failures + 1, error kept, still up
  void SetPosition(uint64_t position);
  void SetBackoff(double seconds);
  void SetQuery(events::Query query);
  // The tier instance `slot` (the runner's own numbering) runs on now. The status says
  // "native" once every slot does, else "interp".
  void SetTier(uint32_t slot, wasm::Tier tier);
  ModuleStatus Get() const;

 private:
  mutable Mutex mu_;
  ModuleStatus status_ GUARDED_BY(mu_);
  std::map<uint32_t, wasm::Tier> tiers_ GUARDED_BY(mu_);  // by slot
};

}  // namespace reef::apps
