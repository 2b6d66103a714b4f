// Outcome: what one spec-test command did on one engine tier, and the reasons a tier may
// refuse a command on purpose.
//
// A command passes, fails, or is refused: Reef declines it by design (the engine API does not
// carry the values or imports it needs, or it passes a documented limit). Refusals are not
// failures, but each has a reason from the table below, and the expected count of each reason
// per file is checked in (tests/spec/expected_refusals.txt).
//
// Thread ownership: plain values; any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "spec/wast_script.h"

namespace reef::spec {

// The refusal reasons, one row each: enumerator, stable name (outcome lines, the expected
// refusals table), and why Reef declines such a command (docs/engine.md "Conformance").
#define REEF_SPEC_REFUSALS(X)                                                                  \
  X(kReferenceValue, "reference_value",                                                        \
    "a funcref or externref argument, result or global read at the host boundary: the engine " \
    "API passes numbers only")                                                                 \
  X(kNonFunctionImport, "non_function_import",                                                 \
    "the module imports a global, table or memory: a Reef host provides functions only")       \
  X(kReexportedImport, "reexported_import",                                                    \
    "the invoked export is a re-exported import, which Instance::Start does not call")         \
  X(kStartHostCall, "start_host_call",                                                         \
    "the start function calls a host import or is one: host functions run only in "            \
    "invocations")                                                                             \
  X(kModuleLimit, "module_limit", "the module passes a ModuleLimits limit")                    \
  X(kEngineLimit, "engine_limit", "the module or call passes an EngineLimits limit")           \
  X(kDivergedState, "diverged_state",                                                          \
    "a mismatch on an instance whose state no longer follows the script: a refused module "    \
    "imported from it (and may have written its table, memory or globals), or a call on it "   \
    "was refused")

enum class Refusal : uint8_t {
#define REEF_X(name, text, why) name,
  REEF_SPEC_REFUSALS(REEF_X)
#undef REEF_X
};

std::string_view RefusalName(Refusal refusal);
std::string_view RefusalSummary(Refusal refusal);
// The refusal named `name` (RefusalName's inverse), or nullopt.
std::optional<Refusal> RefusalFromName(std::string_view name);

enum class Verdict : uint8_t { kPassed, kFailed, kRefused };

// "passed", "failed", "refused".
std::string_view VerdictName(Verdict verdict);

struct Outcome {
  uint32_t line = 0;
  CommandKind kind = CommandKind::kModule;
  Verdict verdict = Verdict::kPassed;
  std::optional<Refusal> refusal;  // set when verdict == kRefused
  // What the tier did, canonically: "results i32:0x00000001", "trap integer_divide_by_zero",
  // "rejected invalid_argument", "instantiated". Equal lines mean equal behaviour, so two
  // tiers' outcome lines can be compared command by command.
  std::string observed;
  // Why it failed or was refused, for people (messages differ between tiers).
  std::string detail;

  // "i32.wast:45 assert_return passed results i32:0x00000002"; a refusal adds its reason
  // ("refused non_function_import ...").
  std::string ToLine(std::string_view file) const;
};

// Builders of the three verdicts.
Outcome Passed(std::string observed);
Outcome Failed(std::string observed, std::string detail);
Outcome Refused(Refusal refusal, std::string detail);

}  // namespace reef::spec
