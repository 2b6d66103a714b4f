// The host side of the event-sourced module ABI (docs/abi.md, "Event-sourced modules"): the
// import manifests of the three kinds and one module instance that calls their exports.
//
// A module speaks ABI `reef` version 1 like an actor does: CBOR values in (ptr, len) buffers,
// inputs placed by one `reef_alloc` call per export call. The exports and imports differ by
// kind:
//   command    reef_command_init, reef_command_fold, reef_command_decide
//   projector  reef_query, reef_project                 + sql_exec, sql_query
//   effect     reef_query, reef_partition_key, reef_effect + sql_exec, sql_query, append
//   all        memory, reef_abi_version, reef_alloc     + log, fail, now_ms, random, env
//
// Thread ownership: the registries are immutable (any thread). A ModuleInstance and its
// context belong to the thread that created it (engine objects never cross threads).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/limits.h"
#include "core/status.h"
#include "core/value.h"
#include "store/module_store.h"
#include "wasm/engine.h"

struct sqlite3;

namespace reef::apps {

using store::ModuleKind;

// Limits on every value crossing the module boundary, both ways: depth 72 (event data nests 64
// levels inside an event inside a batch), 1,000,000 nodes, 32 MiB of string bytes, 32 MiB of
// CBOR per buffer. The guest's 16 MiB memory bounds them further.
ValueLimits ModuleValueLimits();

// Engine instructions one export call may take before it fails (about 10 s on the
// interpreter), and `reef_alloc`'s own budget.
inline constexpr uint64_t kModuleCallBudget = 1'000'000'000;
inline constexpr uint64_t kModuleAllocBudget = 1'000'000;
// Largest buffer `random` fills in one call, in bytes.
inline constexpr uint32_t kMaxRandomBytes = 65'536;

// One `sql_exec` or `sql_query` call of a module, as the import read it from the guest.
struct SqlRequest {
  bool query = false;  // sql_query (rows) or sql_exec (rows changed)
  std::string sql;
  Value params;
  uint32_t out_ptr = 0;  // sql_query: the guest's buffer for the rows
  uint32_t out_cap = 0;
};

// What one SQL call gave.
struct SqlOutcome {
  std::string error;          // non-empty: the call traps host_error ("sql_exec: ...")
  int64_t changes = 0;        // sql_exec: rows changed
  std::vector<uint8_t> rows;  // sql_query: its rows, a CBOR list of records (column -> value)
};

// Runs `request` on `db` within the bounds of every module SQL call (10 s, 32 MiB of rows,
// 64 MiB of SQLite heap). Thread: the one using `db`.
SqlOutcome RunSql(sqlite3* db, const SqlRequest& request);

// What the imports of one call act on. Set up by the host that owns the instance.
struct ModuleCallContext {
  ModuleKind kind = ModuleKind::kCommand;
  std::string label;  // "commands/register-account@1.0.0", in logs and errors
  std::map<std::string, std::string> env;
  // `now_ms`: fixed (commands) or the wall clock (nullopt).
  std::optional<int64_t> fixed_now_ms;
  // `random`: SHA-256(seed || counter) blocks (commands) or OpenSSL's CSPRNG (nullopt).
  std::optional<std::array<uint8_t, 32>> random_seed;
  uint64_t random_counter = 0;
  // `sql_exec`, `sql_query` (projectors and effects) and `append` (effects) are never run
  // inside the import: it leaves the SQL call in `pending_sql` or the events in
  // `pending_append` and suspends the invocation; the host runs it on a thread that may wait
  // and resumes the call (ModuleInstance::CompleteSql, CompleteAppend; DriveGuest in
  // apps/guest_driver.h does both). docs/runtime.md "One fleet".
  std::optional<SqlRequest> pending_sql;
  std::optional<Value> pending_append;

  // Set by `now_ms` and `random` when called; cleared by whoever wants to know (a fold that
  // reads the clock or random bytes is not kept in the fold cache).
  bool read_clock_or_random = false;

  // Set by the imports while a call runs; cleared by ModuleInstance::Call.
  std::optional<std::string> failure;  // the reason given to `fail`
  std::string host_error;              // why an import trapped (a SQL error, a bad value)
};

// An optional export of command modules: a function (no parameters, no results) whose presence
// says that `reef_command_fold` does not read its input, so decision states are shared across
// inputs in the fold cache (docs/abi.md "The fold cache"). The C SDK's REEF_FOLD_IGNORES_INPUT
// exports it.
inline constexpr std::string_view kFoldIgnoresInputExport = "reef_command_fold_ignores_input";

// The import manifest of `kind` (module "reef"). One shared immutable instance per kind.
const wasm::HostRegistry& ModuleRegistry(ModuleKind kind);

// Checks that `module` exports what `kind` requires (memory, reef_abi_version, reef_alloc and
// the kind's functions with their signatures). Errors: InvalidArgument naming each gap
// ("not a reef v1 projector module: missing export `reef_project` (function (i32, i32) ->
// (i32))").
Status CheckModuleExports(ModuleKind kind, const wasm::Module& module);

// One instantiated module with its own engine.
class ModuleInstance {
 public:
  // Checks the exports, instantiates the module and checks reef_abi_version() == 1.
  // Errors: those of CheckModuleExports and Engine::Instantiate; FailedPrecondition for
  // another ABI version.
  static Result<std::unique_ptr<ModuleInstance>> Create(ModuleKind kind,
                                                        std::shared_ptr<const wasm::Module> module,
                                                        std::string label,
                                                        wasm::EngineLimits limits = {});

  // Calls export `name`: encodes `inputs` (deterministic CBOR), places them in one
  // `reef_alloc` buffer (called exactly once, also with no inputs), passes their (ptr, len)
  // pairs and runs the export within `budget` instructions. Returns its results.
  // Errors: Trapped "<label>: <export> failed: <reason>" (the guest called `fail`, trapped, or
  // an import trapped: the reason says which); LimitExceeded when the budget runs out or an
  // input breaks ModuleValueLimits; FailedPrecondition when reef_alloc misbehaves. After any
  // error the instance is reset (Reset), so a trap never leaks into the next call.
  Result<std::vector<wasm::WasmValue>> Call(std::string_view name,
                                            std::initializer_list<const Value*> inputs,
                                            uint64_t budget = kModuleCallBudget);
  // The same call in slices, for a reactor (docs/runtime.md "One fleet"): StartCall places
  // the inputs and starts export `name` (errors as Call); each RunSlice then runs up to `slice`
  // more instructions of it, and gives nullopt while the call goes on, else its results or
  // its error (as Call's: the instance is reset after an error). `budget` bounds the whole
  // call. Starting another call abandons one in progress.
  Status StartCall(std::string_view name, std::initializer_list<const Value*> inputs,
                   uint64_t budget = kModuleCallBudget);
  std::optional<Result<std::vector<wasm::WasmValue>>> RunSlice(uint64_t slice);
  // True while the call in progress waits in a host import (RunSlice gave nullopt), e.g. an
  // SQL call left in context().pending_sql or an append in pending_append.
  bool suspended() const;
  // Resumes a call suspended in an SQL import with what the SQL call gave: sql_query's rows
  // are written to the guest's buffer when they fit (the call returns their length either
  // way), sql_exec returns the rows changed, and an outcome's error traps the call
  // (host_error, kept in context().host_error). Errors: FailedPrecondition when no call is
  // suspended.
  Status CompleteSql(const SqlRequest& request, const SqlOutcome& outcome);
  // Resumes a call suspended in `append` with the append's last position, or traps it
  // (host_error "append: ...") with the append's error. Errors: FailedPrecondition when no
  // call is suspended.
  Status CompleteAppend(const Result<uint64_t>& appended);
  // Decodes the packed i64 result (ptr | len << 32) of export `name` as one value.
  // Errors: InvalidArgument when the buffer is outside memory or not a value.
  Result<Value> ValueOf(std::string_view name, const std::vector<wasm::WasmValue>& results);

  // Call, then decodes the packed i64 result (ptr | len << 32) as one value.
  // Errors: those of Call; InvalidArgument when the buffer is outside memory or not a value.
  Result<Value> CallForValue(std::string_view name, std::initializer_list<const Value*> inputs,
                             uint64_t budget = kModuleCallBudget);
  // Call, then returns the i32 result.
  Result<int32_t> CallForStatus(std::string_view name, std::initializer_list<const Value*> inputs,
                                uint64_t budget = kModuleCallBudget);

  // Restores memory and globals to their state after instantiation (wasm::Instance::Reset).
  Status Reset() { return instance_->Reset(); }
  // True when a new ModuleInstance of this module would run on another engine tier (its
  // native code became ready): callers that keep one for reuse replace it between calls.
  bool Outdated() const { return engine_->Outdated(*instance_); }
  wasm::Tier tier() const { return instance_->tier(); }
  // Engine instructions the last finished call ran (its export, not reef_alloc; 0 before the
  // first). On the native tier, what the instruction counter charged (docs/engine.md).
  uint64_t last_call_instructions() const { return last_call_instructions_; }
  ModuleCallContext& context() { return context_; }
  const wasm::Module& module() const { return instance_->module(); }

 private:
  ModuleInstance(ModuleKind kind, wasm::EngineLimits limits);
  // Places the inputs and starts the export (pending_); reef_alloc runs here, to its end.
  Status StartOnce(std::string_view name, std::initializer_list<const Value*> inputs,
                   uint64_t budget);

  // The call in progress (StartCall .. the RunSlice that ends it).
  struct Pending {
    std::string name;
    std::unique_ptr<wasm::Invocation> invocation;
    uint64_t budget = 0;
    uint64_t charged = 0;    // instructions run so far
    bool suspended = false;  // waiting in a host import
  };

  ModuleCallContext context_;
  std::unique_ptr<wasm::Engine> engine_;
  std::unique_ptr<wasm::Instance> instance_;
  uint64_t last_call_instructions_ = 0;
  std::unique_ptr<Pending> pending_;  // declared last: it ends before the instance
};

}  // namespace reef::apps
