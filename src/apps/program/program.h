// Program: the immutable deployment artifact of spec 003 — validated modules plus the
// manifest's units, each unit bound to its module's implementation with its handler export.
//
// BuildProgram checks everything a deploy could trip on before anything is published: the
// manifest (manifest.h), every module's bytes (base64, wasm validation, a trial
// instantiation against the ABI's imports) and every unit's handler export. A Program is
// never changed after it is built; the runtime swaps whole Programs (program_runtime.h).
//
// Thread ownership: a built Program is immutable and shared (shared_ptr<const Program>); any
// thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "actor/actor.h"
#include "apps/program/manifest.h"
#include "core/status.h"
#include "wasm/engine.h"

namespace reef::apps::program {

// Bounds of one deploy request (POST /programs).
struct ProgramLimits {
  ManifestLimits manifest;
  uint64_t max_module_bytes = 32ull << 20;  // one .wasm, decoded
  wasm::EngineLimits engine;                // the trial instantiation's limits
};

struct ProgramModule {
  std::string name;
  std::string sha256;  // lowercase hex of the .wasm bytes
  uint64_t size_bytes = 0;
  std::shared_ptr<const wasm::Module> module;
};

struct ProgramUnit {
  UnitSpec spec;
  std::shared_ptr<const actor::Implementation> implementation;  // module + handler export
  // What decides whether a redeploy keeps the unit's instances: its module's bytes, handler,
  // placement and initial state (limits may change without replacing instances).
  std::string code_fingerprint;
};

struct Program {
  uint64_t generation = 0;  // 1, 2, 3, ... per data directory
  int64_t deployed_at_ms = 0;
  Manifest manifest;
  std::map<std::string, ProgramModule> modules;  // by module name
  std::map<std::string, ProgramUnit> units;      // by unit name
};

// Instantiates `module` once, to find what would fail at its first invocation (unknown
// imports, memories over the limits, a start function that traps or runs out of budget).
// Returns the engine's error. ProgramRuntime runs it on a reactor of the fleet: the start
// function is guest code.
using TrialInstantiate = std::function<Status(const std::shared_ptr<const wasm::Module>& module)>;

// Builds a Program from a deploy request body:
//   {"manifest": <program.json>, "modules": {"<name>": "<base64 of the .wasm bytes>", ...}}
// with exactly the modules the manifest lists.
// Errors: InvalidArgument naming the field, module or unit and what is wrong (manifest
// rules, missing or extra module bytes, bad base64, invalid wasm with its byte offset,
// unknown imports, a handler export missing or with the wrong signature); LimitExceeded for
// a module over max_module_bytes or the engine limits.
// `trial` runs once per module (null: on the calling thread, with limits.engine).
Result<std::shared_ptr<const Program>> BuildProgram(const nlohmann::json& body, uint64_t generation,
                                                    int64_t deployed_at_ms,
                                                    const ProgramLimits& limits = {},
                                                    const TrialInstantiate& trial = nullptr);

}  // namespace reef::apps::program
