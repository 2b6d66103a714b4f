// Opening a durable group: its journal (DurableImage::Open), the group, and its actors
// brought back (Runtime::Restore) with implementations rebuilt from their recorded module
// bytes. Shared by the live image (<data dir>/image) and the program runtime's unit instances
// (<data dir>/units); docs/operations.md "Durable image".
//
// Thread ownership: OpenDurableGroup runs on any thread but a reactor's (it waits for them).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "actor/durable_image.h"
#include "actor/runtime.h"

namespace reef::actor {

struct OpenedGroup {
  std::shared_ptr<DurableImage> durable;
  std::shared_ptr<ActorGroup> group;
  size_t restored = 0;  // actors brought back
  // Actors restored with a reload/become pending: (actor, the pending implementation's label).
  std::vector<std::pair<ActorRef, std::string>> pending_installs;
  // Actors restored with a tag (SpawnOptions::tag): (actor, tag).
  std::vector<std::pair<ActorRef, std::string>> tags;
};

// Opens `options.journal.dir`, creates a durable group of `mode` on `runtime` and restores the
// recovered actors in batches of 10,000 (records freed as they go: a million idle actors are
// never held twice). Logs what it restored, a torn tail it cut, and a used directory that has
// no journal any more; `what` names the group in those lines ("image", "unit instances").
// Errors: those of DurableImage::Open, Runtime::CreateGroup and Runtime::Restore; a recorded
// module that no longer loads (InvalidArgument). Nothing stays restored then.
Result<OpenedGroup> OpenDurableGroup(Runtime& runtime, SchedulingMode mode,
                                     const DurableImageOptions& options, std::string_view what);

}  // namespace reef::actor
