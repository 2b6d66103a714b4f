#include "spec/script_runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "spec/assertions.h"
#include "spec/linker.h"
#include "wasm/engine.h"
#include "wasm/invocation.h"
#include "wasm/module.h"

namespace reef::spec {

using wasm::WasmValue;

namespace {

using ModuleRef = std::shared_ptr<const wasm::Module>;

// What an action did: results, a trap, a refusal, or an error (not a wasm outcome at all).
struct Observation {
  enum class Kind : uint8_t { kResults, kTrap, kRefused, kError };
  Kind kind = Kind::kError;
  std::vector<WasmValue> results;
  wasm::TrapKind trap = wasm::TrapKind::kOther;
  Refusal refusal = Refusal::kReferenceValue;
  std::string observed;  // canonical (Outcome::observed)
  std::string detail;
  // Set when the action ran on (or called into) an instance whose state diverged from the
  // script's: why it diverged.
  std::string diverged;
};

Observation Error(std::string observed, std::string detail) {
  return {Observation::Kind::kError, {},
          wasm::TrapKind::kOther,    Refusal::kReferenceValue,
          std::move(observed),       std::move(detail)};
}

Observation RefusedAction(Refusal refusal, std::string detail) {
  return {Observation::Kind::kRefused,
          {},
          wasm::TrapKind::kOther,
          refusal,
          std::string(RefusalName(refusal)),
          std::move(detail)};
}

// How far a module got: where it stopped (nowhere: it is instantiated) and why.
struct Attempt {
  enum class Stop : uint8_t { kNone, kLoad, kLink, kInstantiate };
  Stop stop = Stop::kNone;
  Status status;                   // the load or Instantiate error
  bool unlinkable = false;         // the Linker found an unknown import or a kind mismatch
  std::optional<Refusal> refusal;  // declined on purpose, at any stage
  std::string detail;
  ModuleRef module;
  std::unique_ptr<wasm::Instance> instance;
};

class ScriptRun {
 public:
  ScriptRun(const WastScript& script, const Tier& tier)
      : script_(script), tier_(tier), linker_(tier.invocation_budget) {}

  // Builds the registry from the script's register commands, then the tier's engine.
  Status Prepare();
  Outcome Execute(const Command& command);

 private:
  using Handler = Outcome (ScriptRun::*)(const Command&);
  static Handler HandlerFor(CommandKind kind);

  Outcome OnModule(const Command& command);
  Outcome OnRegister(const Command& command);
  Outcome OnAction(const Command& command);
  Outcome OnAssertReturn(const Command& command);
  Outcome OnAssertTrap(const Command& command);
  Outcome OnAssertRejected(const Command& command);
  Outcome OnAssertUnlinkable(const Command& command);
  Outcome OnAssertUninstantiable(const Command& command);

  // The module of a command's file, loaded once per script.
  const Result<ModuleRef>& Load(const Command& command);
  Attempt TryInstantiate(const Command& command);
  void ClassifyInstantiateError(Attempt& attempt) const;
  // The module an action or register names ("" = current); null when there is none.
  std::shared_ptr<ModuleSlot> FindSlot(const std::string& name) const;
  // The instance `command`'s action runs on, or the observation that stops it: no module, or
  // a refused module (refused for its reason).
  ModuleSlot* FindTarget(const Command& command, Observation& blocked) const;
  // Marks `slot`, and every registered module it imports from (transitively), diverged.
  void Diverge(ModuleSlot& slot, const std::string& why);
  // A refused module may have written the modules it imports from.
  void DivergeSources(const Attempt& attempt, uint32_t line);
  Observation Perform(const Command& command);
  Observation Invoke(wasm::Instance& instance, const Action& action);
  Observation Get(const wasm::Instance& instance, const Action& action) const;

  const WastScript& script_;
  const Tier& tier_;
  std::map<std::string, Result<ModuleRef>> modules_;  // by file name
  // The registry is declared first so that it outlives every instance (engine.h REQUIRES):
  // instances die with their slots (current_, named_, then the linker's registrations), after
  // the engine, which they keep alive. The registry's rows call the linker only while an
  // instance runs.
  std::unique_ptr<wasm::HostRegistry> registry_;
  Linker linker_;
  std::unique_ptr<wasm::Engine> engine_;
  std::map<std::string, std::shared_ptr<ModuleSlot>> named_;
  std::shared_ptr<ModuleSlot> current_;
};

// ---------------------------------------------------------------------------------------
// Setup and dispatch

Status ScriptRun::Prepare() {
  std::vector<PlannedRegistration> planned;
  std::map<std::string, ModuleRef> named;
  ModuleRef current;
  for (const Command& command : script_.commands) {
    if (command.kind == CommandKind::kModule) {
      const Result<ModuleRef>& module = Load(command);
      current = module.ok() ? *module : nullptr;
      if (!command.name.empty()) named[command.name] = current;
    } else if (command.kind == CommandKind::kRegister) {
      ModuleRef module = command.name.empty() ? current : named[command.name];
      if (module) planned.push_back({command.as, module});
    }
  }
  REEF_ASSIGN_OR_RETURN(registry_, linker_.BuildRegistry(planned));
  engine_ = tier_.make_engine(*registry_, tier_.engine_limits);
  return Status::Ok();
}

ScriptRun::Handler ScriptRun::HandlerFor(CommandKind kind) {
  static const std::map<CommandKind, Handler> kHandlers = {
      {CommandKind::kModule, &ScriptRun::OnModule},
      {CommandKind::kRegister, &ScriptRun::OnRegister},
      {CommandKind::kAction, &ScriptRun::OnAction},
      {CommandKind::kAssertReturn, &ScriptRun::OnAssertReturn},
      {CommandKind::kAssertTrap, &ScriptRun::OnAssertTrap},
      {CommandKind::kAssertExhaustion, &ScriptRun::OnAssertTrap},
      {CommandKind::kAssertInvalid, &ScriptRun::OnAssertRejected},
      {CommandKind::kAssertMalformed, &ScriptRun::OnAssertRejected},
      {CommandKind::kAssertUnlinkable, &ScriptRun::OnAssertUnlinkable},
      {CommandKind::kAssertUninstantiable, &ScriptRun::OnAssertUninstantiable},
  };
  return kHandlers.at(kind);
}

Outcome ScriptRun::Execute(const Command& command) {
  Outcome outcome = (this->*HandlerFor(command.kind))(command);
  outcome.line = command.line;
  outcome.kind = command.kind;
  return outcome;
}

// ---------------------------------------------------------------------------------------
// Modules

const Result<ModuleRef>& ScriptRun::Load(const Command& command) {
  auto it = modules_.find(command.filename);
  if (it != modules_.end()) return it->second;
  Result<ModuleRef> module =
      wasm::Module::FromFile(script_.dir / command.filename, tier_.module_limits);
  return modules_.emplace(command.filename, std::move(module)).first->second;
}

Attempt ScriptRun::TryInstantiate(const Command& command) {
  Attempt attempt;
  const Result<ModuleRef>& module = Load(command);
  if (!module.ok()) {
    attempt.stop = Attempt::Stop::kLoad;
    attempt.status = module.status();
    attempt.detail = module.status().ToString();
    if (module.status().code() == Code::kLimitExceeded) attempt.refusal = Refusal::kModuleLimit;
    return attempt;
  }
  attempt.module = *module;
  LinkCheck link = linker_.Check(**module);
  if (link.result != LinkCheck::Result::kLinkable) {
    attempt.stop = Attempt::Stop::kLink;
    attempt.unlinkable = link.result == LinkCheck::Result::kUnlinkable;
    if (!attempt.unlinkable) attempt.refusal = link.refusal;
    attempt.detail = link.detail;
    return attempt;
  }
  Result<std::unique_ptr<wasm::Instance>> instance = engine_->Instantiate(*module);
  if (!instance.ok()) {
    attempt.stop = Attempt::Stop::kInstantiate;
    attempt.status = instance.status();
    attempt.detail = instance.status().ToString();
    ClassifyInstantiateError(attempt);
    return attempt;
  }
  attempt.instance = std::move(instance).value();
  return attempt;
}

// A limit, or a start function calling a host import (the engine traps it host_error: host
// functions run only inside invocations), is a refusal; other errors are what they are.
void ScriptRun::ClassifyInstantiateError(Attempt& attempt) const {
  if (attempt.status.code() == Code::kLimitExceeded) {
    attempt.refusal = Refusal::kEngineLimit;
  } else if (InstantiationTrapKind(attempt.status) == wasm::TrapKind::kHostError) {
    attempt.refusal = Refusal::kStartHostCall;
  }
}

Outcome ScriptRun::OnModule(const Command& command) {
  Attempt attempt = TryInstantiate(command);
  auto slot = std::make_shared<ModuleSlot>();
  slot->line = command.line;
  slot->module = attempt.module;
  slot->instance = std::move(attempt.instance);
  slot->refusal = attempt.refusal;
  slot->refusal_detail = attempt.detail;
  current_ = slot;
  if (!command.name.empty()) named_[command.name] = slot;
  if (attempt.refusal) {
    DivergeSources(attempt, command.line);
    return Refused(*attempt.refusal, attempt.detail);
  }
  if (attempt.stop == Attempt::Stop::kNone) return Passed("instantiated");
  if (attempt.unlinkable) return Failed("unlinkable", attempt.detail);
  return Failed(fmt::format("error {}", CodeName(attempt.status.code())), attempt.detail);
}

Outcome ScriptRun::OnRegister(const Command& command) {
  std::shared_ptr<ModuleSlot> slot = FindSlot(command.name);
  if (!slot) return Failed("error no_module", "register names no module");
  linker_.Register(command.as, slot);
  if (slot->refusal) {
    return Refused(*slot->refusal, fmt::format("registers the module of line {}, refused: {}",
                                               slot->line, slot->refusal_detail));
  }
  if (!slot->instance) {
    return Failed(
        "error no_instance",
        fmt::format("registers the module of line {}, which did not instantiate", slot->line));
  }
  return Passed("registered");
}

Outcome ScriptRun::OnAssertRejected(const Command& command) {
  const Result<ModuleRef>& module = Load(command);
  if (module.ok()) {
    return Failed("loaded",
                  fmt::format("the module loaded; the spec expects it rejected: {}", command.text));
  }
  if (module.status().code() == Code::kLimitExceeded) {
    return Refused(Refusal::kModuleLimit, module.status().ToString());
  }
  return Passed(fmt::format("rejected {}", CodeName(module.status().code())));
}

Outcome ScriptRun::OnAssertUnlinkable(const Command& command) {
  Attempt attempt = TryInstantiate(command);
  if (attempt.refusal) return Refused(*attempt.refusal, attempt.detail);
  if (attempt.unlinkable) return Passed("unlinkable");
  if (attempt.stop == Attempt::Stop::kInstantiate && attempt.status.code() == Code::kNotFound) {
    return Passed("unlinkable");
  }
  if (attempt.stop == Attempt::Stop::kNone) {
    return Failed("instantiated", "the module linked; the spec expects: " + command.text);
  }
  return Failed(fmt::format("error {}", CodeName(attempt.status.code())), attempt.detail);
}

Outcome ScriptRun::OnAssertUninstantiable(const Command& command) {
  Attempt attempt = TryInstantiate(command);
  if (attempt.refusal) {
    // The spec instantiates it up to the trap: segments before it write what it imports.
    DivergeSources(attempt, command.line);
    return Refused(*attempt.refusal, attempt.detail);
  }
  if (attempt.stop == Attempt::Stop::kNone) {
    return Failed("instantiated", "the module instantiated; the spec expects: " + command.text);
  }
  std::optional<wasm::TrapKind> kind = InstantiationTrapKind(attempt.status);
  std::span<const wasm::TrapKind> wanted = TrapKindsFor(command.text);
  if (kind && std::find(wanted.begin(), wanted.end(), *kind) != wanted.end()) {
    return Passed(fmt::format("trap {}", wasm::TrapKindName(*kind)));
  }
  std::string observed = kind ? fmt::format("trap {}", wasm::TrapKindName(*kind))
                              : fmt::format("error {}", CodeName(attempt.status.code()));
  return Failed(observed, fmt::format("{}; the spec expects: {}", attempt.detail, command.text));
}

// ---------------------------------------------------------------------------------------
// Actions

std::shared_ptr<ModuleSlot> ScriptRun::FindSlot(const std::string& name) const {
  if (name.empty()) return current_;
  auto it = named_.find(name);
  return it == named_.end() ? nullptr : it->second;
}

ModuleSlot* ScriptRun::FindTarget(const Command& command, Observation& blocked) const {
  std::shared_ptr<ModuleSlot> slot = FindSlot(command.action.module);
  if (!slot) {
    blocked = Error("error no_module", "the action names no module");
  } else if (slot->refusal) {
    blocked =
        RefusedAction(*slot->refusal, fmt::format("runs on the module of line {}, refused: {}",
                                                  slot->line, slot->refusal_detail));
  } else if (!slot->instance) {
    blocked = Error("error no_instance",
                    fmt::format("the module of line {} did not instantiate", slot->line));
  } else {
    return slot.get();
  }
  return nullptr;
}

void ScriptRun::Diverge(ModuleSlot& slot, const std::string& why) {
  if (!slot.diverged.empty()) return;
  slot.diverged = why;
  if (!slot.module) return;
  for (const auto& source : linker_.Sources(*slot.module)) Diverge(*source, why);
}

void ScriptRun::DivergeSources(const Attempt& attempt, uint32_t line) {
  if (!attempt.module) return;
  for (const auto& source : linker_.Sources(*attempt.module)) {
    Diverge(*source, fmt::format("the module of line {}, which imports from it, was refused ({})",
                                 line, RefusalName(*attempt.refusal)));
  }
}

Observation ScriptRun::Perform(const Command& command) {
  Observation blocked;
  ModuleSlot* slot = FindTarget(command, blocked);
  if (slot == nullptr) return blocked;
  if (command.action.type == Action::Type::kGet) {
    Observation observation = Get(*slot->instance, command.action);
    observation.diverged = slot->diverged;
    return observation;
  }
  linker_.TakeServedRefusal();
  linker_.TakeServedDivergence();
  Observation observation = Invoke(*slot->instance, command.action);
  if (auto served = linker_.TakeServedRefusal()) {
    observation = RefusedAction(served->first, served->second);
  }
  observation.diverged = slot->diverged.empty() ? linker_.TakeServedDivergence() : slot->diverged;
  if (observation.kind == Observation::Kind::kRefused) {
    // Whatever the call would have done to the instance did not happen.
    Diverge(*slot, fmt::format("the call at line {} was refused ({})", command.line,
                               RefusalName(observation.refusal)));
  }
  return observation;
}

Observation ScriptRun::Invoke(wasm::Instance& instance, const Action& action) {
  std::vector<WasmValue> args;
  for (const ScriptValue& arg : action.args) {
    std::optional<WasmValue> value = arg.ToWasmValue();
    if (!value) return RefusedAction(Refusal::kReferenceValue, "argument " + arg.ToString());
    args.push_back(*value);
  }
  const wasm::ExportInfo* exported = instance.module().FindExport(action.field);
  const bool numbers_only = exported != nullptr && exported->kind == wasm::ExternKind::kFunc &&
                            NumbersOnly(exported->signature);
  if (exported != nullptr && exported->kind == wasm::ExternKind::kFunc && !numbers_only) {
    return RefusedAction(Refusal::kReferenceValue,
                         fmt::format("`{}` is {}", action.field, exported->signature.ToString()));
  }
  auto started = instance.Start(action.field, args);
  if (!started.ok()) {
    // With a number signature and arguments of its types, Start refuses only a re-exported
    // import (engine.h); anything else, like wrong arguments, is the script's or the tier's.
    const bool args_fit =
        numbers_only && exported->signature.params.size() == args.size() &&
        std::equal(args.begin(), args.end(), exported->signature.params.begin(),
                   [](const WasmValue& v, wasm::ValType t) { return wasm::TypeOf(v) == t; });
    if (args_fit && started.status().code() == Code::kInvalidArgument) {
      return RefusedAction(Refusal::kReexportedImport, started.status().message());
    }
    return Error(fmt::format("error {}", CodeName(started.status().code())),
                 started.status().ToString());
  }
  wasm::Invocation& invocation = **started;
  switch (invocation.Run(tier_.invocation_budget)) {
    case wasm::RunState::kFinished:
      return {Observation::Kind::kResults,
              invocation.results(),
              wasm::TrapKind::kOther,
              Refusal::kReferenceValue,
              CanonicalResults(invocation.results()),
              ""};
    case wasm::RunState::kTrapped:
      return {Observation::Kind::kTrap,
              {},
              invocation.trap().kind,
              Refusal::kReferenceValue,
              fmt::format("trap {}", wasm::TrapKindName(invocation.trap().kind)),
              invocation.trap().ToString()};
    case wasm::RunState::kBudgetExhausted:
    case wasm::RunState::kSuspended:
      break;
  }
  return Error(fmt::format("error {}", wasm::RunStateName(invocation.state())),
               fmt::format("did not finish within {} instructions", tier_.invocation_budget));
}

Observation ScriptRun::Get(const wasm::Instance& instance, const Action& action) const {
  Result<WasmValue> value = instance.GetGlobal(action.field);
  if (value.ok()) {
    std::vector<WasmValue> results = {*value};
    return {Observation::Kind::kResults, results, wasm::TrapKind::kOther, Refusal::kReferenceValue,
            CanonicalResults(results),   ""};
  }
  // GetGlobal's InvalidArgument: the global has a reference type (engine.h).
  if (value.status().code() == Code::kInvalidArgument) {
    return RefusedAction(Refusal::kReferenceValue, value.status().message());
  }
  return Error(fmt::format("error {}", CodeName(value.status().code())), value.status().ToString());
}

// A mismatch is a failure, unless the instance's state had diverged from the script's: then
// the spec's expectation does not apply, and the command is refused (diverged_state) with
// what it observed.
Outcome Mismatch(const Observation& observation, std::string detail) {
  if (observation.diverged.empty()) return Failed(observation.observed, std::move(detail));
  Outcome outcome = Refused(Refusal::kDivergedState,
                            fmt::format("{}; state diverged: {}", detail, observation.diverged));
  outcome.observed += " " + observation.observed;
  return outcome;
}

// The outcome of an action whose observation is not what the command asserts.
Outcome Unexpected(const Observation& observation, std::string_view expectation) {
  if (observation.kind == Observation::Kind::kRefused) {
    return Refused(observation.refusal, observation.detail);
  }
  std::string detail = observation.detail.empty() ? observation.observed : observation.detail;
  return Mismatch(observation, fmt::format("{}; expected {}", detail, expectation));
}

Outcome ScriptRun::OnAction(const Command& command) {
  Observation observation = Perform(command);
  if (observation.kind == Observation::Kind::kResults) return Passed(observation.observed);
  return Unexpected(observation, "it to finish");
}

Outcome ScriptRun::OnAssertReturn(const Command& command) {
  for (const ScriptValue& value : command.expected) {
    if (value.is_number()) continue;
    Observation blocked;
    ModuleSlot* slot = FindTarget(command, blocked);
    if (slot == nullptr) return Unexpected(blocked, "a module");
    Diverge(*slot, fmt::format("the call at line {} was refused (reference_value)", command.line));
    return Refused(Refusal::kReferenceValue, "expects " + value.ToString());
  }
  Observation observation = Perform(command);
  if (observation.kind != Observation::Kind::kResults) {
    std::string expected;
    for (const ScriptValue& v : command.expected) expected += " " + v.ToString();
    return Unexpected(observation, "results" + expected);
  }
  std::string diff = CompareResults(command.expected, observation.results);
  if (diff.empty()) return Passed(observation.observed);
  return Mismatch(observation, diff);
}

Outcome ScriptRun::OnAssertTrap(const Command& command) {
  std::span<const wasm::TrapKind> wanted = TrapKindsFor(command.text);
  if (wanted.empty()) {
    return Failed("error unknown_trap_message",
                  fmt::format("no TrapKind for the spec's trap message `{}`", command.text));
  }
  Observation observation = Perform(command);
  if (observation.kind == Observation::Kind::kTrap &&
      std::find(wanted.begin(), wanted.end(), observation.trap) != wanted.end()) {
    return Passed(observation.observed);
  }
  return Unexpected(observation, fmt::format("trap \"{}\"", command.text));
}

}  // namespace

Result<std::vector<Outcome>> RunScript(const WastScript& script, const Tier& tier) {
  ScriptRun run(script, tier);
  REEF_RETURN_IF_ERROR(run.Prepare());
  std::vector<Outcome> outcomes;
  outcomes.reserve(script.commands.size());
  for (const Command& command : script.commands) outcomes.push_back(run.Execute(command));
  return outcomes;
}

}  // namespace reef::spec
