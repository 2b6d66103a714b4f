// DriveGuest: runs a call of a projector's or effect's export on a reactor of the fleet
// (docs/runtime.md "One fleet"), a slice per reactor turn, serving the host I/O it suspends in
// (ModuleCallContext::pending_sql and pending_append) on the module's own I/O thread.
//
// Thread ownership: DriveGuest and `then` run on `reactor`'s thread, which owns the instance;
// `run_sql` and `run_append` run through `on_io`, one at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "actor/runtime.h"
#include "apps/module_abi.h"

namespace reef::apps {

struct GuestDriver {
  std::shared_ptr<actor::Runtime> fleet;
  uint32_t reactor = 0;
  // Runs a step on the module's I/O thread (the one that owns its database); false when it
  // cannot (stopping).
  std::function<bool(std::function<void()>)> on_io;
  // On the I/O thread: one SQL call, one append (effects; empty for projectors).
  std::function<SqlOutcome(const SqlRequest&)> run_sql;
  std::function<Result<uint64_t>(const Value&)> run_append;
};

using GuestResults = Result<std::vector<wasm::WasmValue>>;

// Runs the call StartCall began on `instance` to its end, then `then` with its results, on
// the reactor; or with the error of a hop that could not be made (the fleet or the I/O thread
// stopping), on the thread that tried. REQUIRES: on driver.reactor's thread; `instance` lives
// until `then` runs.
void DriveGuest(std::shared_ptr<const GuestDriver> driver, ModuleInstance* instance,
                std::function<void(GuestResults)> then);

}  // namespace reef::apps
