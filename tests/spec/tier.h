// Tier: an engine configuration the spec-suite runner can run the suite on (`--engine`).
//
// Every command runs through the same Reef engine API (Module, Engine, Instance,
// Invocation); a tier only says how to make the Engine and with which limits. Adding a tier
// (the native tier) is one row in tier.cc; comparing two tiers is diffing their `--outcomes`.
//
// Thread ownership: the table is constant; any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "wasm/engine.h"
#include "wasm/host.h"
#include "wasm/module_limits.h"

namespace reef::spec {

struct Tier {
  std::string_view name;     // the `--engine` value, e.g. "interp"
  std::string_view summary;  // one line for `--help`
  wasm::EngineLimits engine_limits;
  wasm::ModuleLimits module_limits;
  // Budget of one top-level invocation, and of each call a registered module serves to an
  // importer (engine instructions); a command that runs out of it fails.
  uint64_t invocation_budget;
  // Makes the tier's engine. REQUIRES: `registry` outlives the engine.
  std::unique_ptr<wasm::Engine> (*make_engine)(const wasm::HostRegistry& registry,
                                               const wasm::EngineLimits& limits);
};

// Every tier, in `--help` order.
std::span<const Tier> Tiers();
// The tier named `name`, or nullptr.
const Tier* FindTier(std::string_view name);

}  // namespace reef::spec
