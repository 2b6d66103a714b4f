// Backend: what one engine tier implements behind Engine.
//
// Engine does the tier-independent work of instantiation (declared limits, import resolution
// against the HostRegistry, refusing an imported start function), so both tiers give the same
// errors; a Backend compiles the module its own way, instantiates it, runs its start function
// and returns an Instance whose Invocations it drives.
//
// Thread ownership: reactor-owned, like the Engine that owns it. Instances keep their backend
// alive (shared ownership), so an Engine and its instances may be destroyed in any order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "wasm/engine.h"
#include "wasm/tier.h"

namespace reef::wasm::detail {

class Backend {
 public:
  virtual ~Backend() = default;

  virtual Tier tier() const = 0;

  // Engine::ReleaseThreadResources.
  virtual void ReleaseThreadResources() {}

  // Instantiates `module`: its declared limits were checked and every import is a function
  // the registry provides, `import_rows[i]` being the registry row of the i-th function
  // import. Runs the start function (never an import) within
  // EngineLimits::max_start_instructions. Errors: those of Engine::Instantiate.
  virtual Result<std::unique_ptr<Instance>> Instantiate(const std::shared_ptr<const Module>& module,
                                                        std::span<const size_t> import_rows) = 0;
};

// The interpreter tier (src/wasm/interp/).
std::shared_ptr<Backend> MakeInterpBackend(const HostRegistry& registry,
                                           const EngineLimits& limits);
// The native tier (src/wasm/native/), its code from `code` (REQUIRES: not null).
std::shared_ptr<Backend> MakeNativeBackend(const HostRegistry& registry, const EngineLimits& limits,
                                           std::shared_ptr<native::CodeSource> code);

// The outcome of running a start function to `RunState` `state` with `budget` instructions:
// OK when it finished; Trapped "start function trapped: <trap>"; LimitExceeded when it ran out
// of budget or suspended. The same words on every tier.
Status StartFunctionOutcome(const Invocation& start, uint64_t budget);

// Instance::Call's answers, the same words on every tier: InvalidArgument for a zero budget;
// for an invocation Run once with `budget`, OK with its results assigned to `results` or the
// error Instance::Call documents.
Status ZeroCallBudget();
Status CallOutcome(const Invocation& invocation, std::string_view name, uint64_t budget,
                   std::vector<WasmValue>& results);

// True when `args` match the parameters of `signature` and its results are all number types.
bool CallArgsMatch(const FuncSignature& signature, std::span<const WasmValue> args);
// InvalidArgument "`<name>` has signature <sig>; got (<args>)": the same words on every tier.
Status CallArgsMismatch(std::string_view name, const FuncSignature& signature,
                        std::span<const WasmValue> args);

// Whether an invocation in `state`, suspended in `suspended_in` (calling `function`), may
// resume with `results`: FailedPrecondition "invocation is <state>, not suspended" unless
// suspended; InvalidArgument when the results do not match the import's result types.
// `function` may be null unless suspended. The same words on every tier.
Status CheckHostCallResults(RunState state, const HostFunction* function,
                            std::string_view suspended_in, std::span<const WasmValue> results);

// FailedPrecondition "invocation is <state>, not suspended" unless `state` is kSuspended.
Status CheckSuspended(RunState state);

// The host_error trap message of an invocation whose Run would pass
// EngineLimits::max_nested_invocations (`limit`) with `running` Runs active.
std::string TooManyNestedInvocationsMessage(uint32_t running, uint32_t limit);

// The trap message of host function `qualified` ("module.name") called while instantiating.
std::string HostCallFromStartMessage(std::string_view qualified);

}  // namespace reef::wasm::detail
