// The JSON shapes of the image's results and events (docs/protocol.md "Image operations").
// Internal to src/image. Actor refs outside values are plain 21-character NanoID strings;
// values (state, messages) use core/json.h's form with {"$actor": ...} markers.
//
// Thread ownership: pure functions; any thread.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "actor/actor.h"
#include "actor/lifecycle_events.h"
#include "actor/log_store.h"

namespace reef::image::detail {

// {"id", "label"}.
nlohmann::json ImplementationJson(const std::string& id, const std::string& label);
// {"seq", "actor", "incarnation", "level", "message", "unix_ms"}.
nlohmann::json LogEntryJson(const actor::LogEntry& entry);
// {"seq", "kind", "actor", "incarnation", "detail", "unix_ms"}.
nlohmann::json EventJson(const actor::LifecycleEvent& event);
// The snapshot of `inspect`; `pending_label` is the label of the pending implementation.
nlohmann::json SnapshotJson(const actor::ActorSnapshot& snapshot, const std::string& pending_label);
// One row of `ps`: {"actor", "status", "incarnation", "implementation", "queued", "state"}.
nlohmann::json PsRowJson(const actor::ActorSnapshot& snapshot);

}  // namespace reef::image::detail
