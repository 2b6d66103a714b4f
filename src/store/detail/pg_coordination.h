// Internal to src/store: how the PostgreSQL module store coordinates the processes that share
// it (pg_module_store.cc uses these; pg_coordination.cc implements them).
//
// Thread ownership: plain functions; each uses the connection or pool it is given (a pool from
// any thread; a connection from one thread at a time).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"
#include "pg/pg.h"
#include "store/module_store.h"

namespace reef::store::detail {

// The NOTIFY channel of module changes; a payload is "<token> module:<kind>/<name>" or
// "<token> key:<scope>", the token naming the process that changed it.
inline constexpr const char* kModulesChannel = "reef_modules";

// The key of a module's (or key scope's) transaction lock: FNV-1a of `text`, clear of the
// ranges Reef reserves. A collision only makes two changes take turns.
int64_t ChangeLockKey(std::string_view text);

// A transaction on `conn`: BEGIN, the change lock on `lock_text`, `body`, then COMMIT, with a
// pg_notify of `lock_text` from `token` when `notify`; ROLLBACK when anything fails.
Status InTransaction(pg::Connection& conn, const std::string& token, const std::string& lock_text,
                     const std::function<Status()>& body, bool notify = true);

// ModuleStore::TryLease: a session advisory lock, keyed by the lease's id in reef_lease_ids,
// on a connection of its own; nullptr when another process holds it.
Result<std::unique_ptr<ModuleLease>> TakeLease(pg::Pool& pool, const pg::ConnectOptions& connect,
                                               ModuleKind kind, std::string_view name);

// ModuleStore's LoadWatermark, SaveWatermark, ResetWatermark on reef_effect_watermarks (the
// reset announced with `token`, like a module change).
Result<ModuleStore::EffectWatermark> LoadEffectWatermark(pg::Pool& pool, std::string_view name);
Result<bool> SaveEffectWatermark(pg::Pool& pool, std::string_view name, uint64_t watermark,
                                 std::string_view version, int64_t epoch);
Status ResetEffectWatermark(pg::Pool& pool, const std::string& token, std::string_view name);

// The watcher thread's body: LISTEN on its own connection (reconnecting with backoff) and hand
// each change another process made to `on_change` (StoreChange::kEverything after each
// (re)connection), until `stop`.
void FollowChanges(const pg::ConnectOptions& connect, const std::string& token,
                   const std::atomic<bool>& stop,
                   const std::function<void(const StoreChange&)>& on_change);

// One notification's payload handed to `on_change` unless `token` sent it or it is malformed.
void DispatchChange(std::string_view payload, const std::string& token,
                    const std::function<void(const StoreChange&)>& on_change);

}  // namespace reef::store::detail
