// The program manifest (docs/programs.md "The manifest"): which modules a program has and
// which units it offers, each unit naming its module, handler export, placement and limits
// (spec 003 "Program", "Routing").
//
// A manifest is JSON text written by people (program.json), so every field is checked here
// with an error naming the field and the rule; unknown fields are errors too, so a typo
// never silently falls back to a default.
//
// Thread ownership: plain values and pure functions; any thread.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/limits.h"
#include "core/status.h"
#include "core/value.h"

namespace reef::apps::program {

// Where a unit's instances live (spec 003 "Routing").
enum class Placement : uint8_t {
  kSingleton,   // one instance, pinned to a reactor on first invocation, never evicted
  kReplicated,  // up to instance_limit instances, spread round-robin over reactors, evicted
                // after idle_eviction_ms without an invocation
};
// "singleton" or "replicated".
std::string_view PlacementName(Placement placement);

inline constexpr std::string_view kDefaultHandlerExport = "reef_handle";
inline constexpr uint32_t kDefaultInboxCapacity = 256;     // messages per instance
inline constexpr uint32_t kDefaultInstanceLimit = 8;       // replicated units
inline constexpr uint64_t kDefaultIdleEvictionMs = 60'000;  // replicated units

// Bounds a manifest must stay within; each breach is an InvalidArgument naming it.
struct ManifestLimits {
  uint32_t max_modules = 64;
  uint32_t max_units = 1'024;
  uint32_t max_instance_limit = 10'000;
  uint32_t max_inbox_capacity = 1'000'000;
  uint64_t max_idle_eviction_ms = 7ull * 24 * 3'600'000;  // a week
  ValueLimits value_limits;                                // of each initial_state
};

struct UnitSpec {
  std::string name;  // the unit id: program-wide, stable across deploys
  std::string module;
  std::string handler = std::string(kDefaultHandlerExport);
  Placement placement = Placement::kReplicated;
  uint32_t instance_limit = kDefaultInstanceLimit;  // 1 for singletons
  uint32_t inbox_capacity = kDefaultInboxCapacity;  // messages per instance
  uint64_t idle_eviction_ms = kDefaultIdleEvictionMs;  // 0 = never; always 0 for singletons
  Value initial_state;                              // the state every instance starts from
  nlohmann::json initial_state_json;                // the same, as written
};

struct Manifest {
  std::string program;                          // the program's name
  std::map<std::string, std::string> modules;   // module name -> file, relative to the
                                                // program directory (informational here)
  std::map<std::string, UnitSpec> units;        // by unit name
};

// True for 1..64 characters of a-z, 0-9, '-' and '_', starting with a letter or digit: the
// names of programs, modules and units (they appear in URL paths).
bool IsValidName(std::string_view name);

// Checks and decodes a manifest (the parsed program.json).
// Errors: InvalidArgument naming the field and the rule ("units.worker.placement must be
// \"singleton\" or \"replicated\"", "unit counter names module cnt, which the manifest does
// not list", ...); LimitExceeded for an initial_state over the value limits.
Result<Manifest> ParseManifest(const nlohmann::json& manifest, const ManifestLimits& limits = {});

// The manifest's fields of one unit, as JSON (GET /programs/current, GET /units).
nlohmann::json UnitSpecJson(const UnitSpec& unit);

}  // namespace reef::apps::program
