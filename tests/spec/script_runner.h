// RunScript: runs the commands of one spec-test script on one engine tier, through Reef's
// engine API only (Module::FromFile, Engine::Instantiate, Instance::Start, Invocation::Run,
// Instance::GetGlobal, HostRegistry).
//
// Each script gets one Engine (made by the tier) and one HostRegistry (linker.h); modules a
// script names or registers stay instantiated until the script ends. How each command kind is
// judged (a table of handlers in script_runner.cc):
//
//   module                 loads, links and instantiates; becomes the current module
//   register               makes a module importable by name
//   action                 invoke/get must finish
//   assert_return          results equal the expected bits or NaN patterns (assertions.h)
//   assert_trap            the action traps with a TrapKind that the spec message maps to
//   assert_exhaustion      the action traps call_stack_exhausted (or value_stack_exhausted)
//   assert_invalid         the module does not load
//   assert_malformed       the module (binary or .wat text) does not load
//   assert_unlinkable      the Linker or Engine::Instantiate refuses its imports (not_found)
//   assert_uninstantiable  Engine::Instantiate traps with the expected kind
//
// Commands Reef declines on purpose are refused with a reason (outcome.h); a command on a
// refused module is refused for the module's reason.
//
// Thread ownership: runs on the calling thread; the engine and instances it makes live and
// die inside the call.
#pragma once

#include <vector>

#include "core/status.h"
#include "spec/outcome.h"
#include "spec/tier.h"
#include "spec/wast_script.h"

namespace reef::spec {

// One Outcome per command of `script`, in order. Errors: Conflict when the script registers
// one name.field with two function signatures (the registry could not serve both).
Result<std::vector<Outcome>> RunScript(const WastScript& script, const Tier& tier);

}  // namespace reef::spec
