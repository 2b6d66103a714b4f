// Linker: the import side of a spec script — the `spectest` host module, the modules a script
// registers under a name, and the HostRegistry through which Reef's engine reaches them.
//
// Reef's engine resolves function imports against a HostRegistry fixed before the Engine is
// made, so the registry is built once per script from every `register` command in it: the
// `spectest` print functions, plus one row per function export of each registered module,
// whose handler runs that export on the registered Instance (a nested invocation of the same
// Engine). Which names are registered *at a given command* is the Linker's to track: Check
// decides unknown names and kind mismatches the way the spec does, refuses what Reef does not
// link (non-function imports), and leaves function signature checks to the engine.
//
// Thread ownership: single-threaded, like the Engine whose host functions it serves. The
// Linker must outlive the registry it builds.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"
#include "spec/outcome.h"
#include "wasm/engine.h"
#include "wasm/host.h"
#include "wasm/module.h"

namespace reef::spec {

// A module of a script as the tier took it: instantiated, or refused with a reason.
struct ModuleSlot {
  uint32_t line = 0;  // the command that made it
  std::shared_ptr<const wasm::Module> module;
  std::unique_ptr<wasm::Instance> instance;  // null when refused
  std::optional<Refusal> refusal;            // set when refused
  std::string refusal_detail;
  // Why the instance's state no longer follows the script (Refusal::kDivergedState); empty
  // while it does. A command on a diverged instance that does not match is refused.
  std::string diverged;
};

// A `register` command as seen before the script runs: the name and the module's exports.
struct PlannedRegistration {
  std::string name;
  std::shared_ptr<const wasm::Module> module;
};

// Whether a module's imports can be resolved now.
struct LinkCheck {
  enum class Result : uint8_t { kLinkable, kUnlinkable, kRefused };
  Result result = Result::kLinkable;
  Refusal refusal = Refusal::kNonFunctionImport;  // when kRefused
  std::string detail;                             // when not kLinkable
};

// True when every parameter and result of `signature` is a number type (i32, i64, f32, f64):
// the only functions a script can call or link through Reef's WasmValue.
bool NumbersOnly(const wasm::FuncSignature& signature);

class Linker {
 public:
  // `invocation_budget`: engine instructions of each call served to an importer.
  explicit Linker(uint64_t invocation_budget) : invocation_budget_(invocation_budget) {}
  Linker(const Linker&) = delete;
  Linker& operator=(const Linker&) = delete;

  // The registry of a script whose register commands are `planned` (in script order).
  // Function exports with reference types get no row (the registry passes numbers only).
  // Errors: Conflict when one name.field is registered with two signatures.
  Result<std::unique_ptr<wasm::HostRegistry>> BuildRegistry(
      std::span<const PlannedRegistration> planned);

  // Makes `slot` importable as `name` from now on (replacing an earlier registration).
  void Register(const std::string& name, std::shared_ptr<ModuleSlot> slot);

  // Resolves `module`'s imports against `spectest` and the current registrations: unknown
  // names and kind mismatches are unlinkable; a global, table or memory import that would
  // link is refused (non_function_import); a function import of a refused module is refused
  // for that module's reason. Function signatures are the engine's to check (the registry
  // rows carry the exporters' signatures), except where a reference type keeps them out of
  // the registry.
  LinkCheck Check(const wasm::Module& module) const;

  // The registered modules `module` imports anything from (not spectest), each once.
  std::vector<std::shared_ptr<ModuleSlot>> Sources(const wasm::Module& module) const;

  // A refusal met by a host function serving an import since the last call (the export is a
  // re-exported import); clears it.
  std::optional<std::pair<Refusal, std::string>> TakeServedRefusal();
  // Why an instance that served an import since the last call had diverged (ModuleSlot::
  // diverged), or ""; clears it.
  std::string TakeServedDivergence();

 private:
  struct Export {
    wasm::ExternKind kind;
    const wasm::FuncSignature* signature;  // functions only; lifetime: the exporter's module
    const ModuleSlot* slot;                // null for spectest
  };
  // The export `field` of the module importable as `module`, or nullopt.
  std::optional<Export> FindExport(std::string_view module, std::string_view field) const;
  // Checks one import; returns an unlinkable or refused reason, or nullopt when it links.
  std::optional<LinkCheck> CheckImport(const wasm::ImportInfo& import) const;
  // Handler of registry row module.field: runs the export on the registered instance.
  wasm::HostCallOutcome Serve(const std::string& module, const std::string& field,
                              wasm::HostCall& call);

  uint64_t invocation_budget_;
  std::map<std::string, std::shared_ptr<ModuleSlot>, std::less<>> registered_;
  std::optional<std::pair<Refusal, std::string>> served_refusal_;
  std::string served_divergence_;
};

}  // namespace reef::spec
