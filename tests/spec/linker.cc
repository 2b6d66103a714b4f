#include "spec/linker.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "wasm/invocation.h"

namespace reef::spec {

using wasm::ExternKind;
using wasm::FuncSignature;
using wasm::HostCall;
using wasm::HostCallOutcome;
using wasm::ValType;

namespace {

// The spec interpreter's `spectest` module (WebAssembly spec, interpreter/host/spectest.ml).
// The print functions print nothing here; the global, table and memory exports exist so that
// imports of them link the way the spec says, and are then refused (non_function_import).
struct SpectestExport {
  std::string_view name;
  ExternKind kind;
  FuncSignature signature;
};

const std::vector<SpectestExport>& SpectestExports() {
  static const std::vector<SpectestExport> kExports = {
      {"print", ExternKind::kFunc, {}},
      {"print_i32", ExternKind::kFunc, {{ValType::kI32}, {}}},
      {"print_i64", ExternKind::kFunc, {{ValType::kI64}, {}}},
      {"print_f32", ExternKind::kFunc, {{ValType::kF32}, {}}},
      {"print_f64", ExternKind::kFunc, {{ValType::kF64}, {}}},
      {"print_i32_f32", ExternKind::kFunc, {{ValType::kI32, ValType::kF32}, {}}},
      {"print_f64_f64", ExternKind::kFunc, {{ValType::kF64, ValType::kF64}, {}}},
      {"global_i32", ExternKind::kGlobal, {}},
      {"global_i64", ExternKind::kGlobal, {}},
      {"global_f32", ExternKind::kGlobal, {}},
      {"global_f64", ExternKind::kGlobal, {}},
      {"table", ExternKind::kTable, {}},
      {"memory", ExternKind::kMemory, {}},
  };
  return kExports;
}

LinkCheck Unlinkable(std::string detail) {
  return {LinkCheck::Result::kUnlinkable, Refusal::kNonFunctionImport, std::move(detail)};
}

LinkCheck RefusedLink(Refusal refusal, std::string detail) {
  return {LinkCheck::Result::kRefused, refusal, std::move(detail)};
}

}  // namespace

bool NumbersOnly(const FuncSignature& signature) {
  auto number = [](ValType t) { return wasm::IsNumberType(t); };
  return std::all_of(signature.params.begin(), signature.params.end(), number) &&
         std::all_of(signature.results.begin(), signature.results.end(), number);
}

Result<std::unique_ptr<wasm::HostRegistry>> Linker::BuildRegistry(
    std::span<const PlannedRegistration> planned) {
  auto registry = std::make_unique<wasm::HostRegistry>("spectest", 1);
  for (const SpectestExport& e : SpectestExports()) {
    if (e.kind != ExternKind::kFunc) continue;
    REEF_RETURN_IF_ERROR(
        registry->Add({"spectest", std::string(e.name), e.signature,
                       [](HostCall&) { return HostCallOutcome::kComplete; }, "prints nothing"}));
  }
  for (const PlannedRegistration& p : planned) {
    for (const wasm::ExportInfo& e : p.module->exports()) {
      if (e.kind != ExternKind::kFunc || !NumbersOnly(e.signature)) continue;
      if (const wasm::HostFunction* row = registry->Find(p.name, e.name)) {
        if (row->signature == e.signature) continue;
        return Status::Conflict(fmt::format("{}.{} is registered as {} and as {}", p.name, e.name,
                                            row->signature.ToString(), e.signature.ToString()));
      }
      REEF_RETURN_IF_ERROR(
          registry->Add({p.name, e.name, e.signature,
                         [this, module = p.name, field = e.name](HostCall& call) {
                           return Serve(module, field, call);
                         },
                         "runs the export of the module registered under this name"}));
    }
  }
  return registry;
}

void Linker::Register(const std::string& name, std::shared_ptr<ModuleSlot> slot) {
  registered_[name] = std::move(slot);
}

std::optional<Linker::Export> Linker::FindExport(std::string_view module,
                                                 std::string_view field) const {
  if (module == "spectest") {
    for (const SpectestExport& e : SpectestExports()) {
      if (e.name == field) return Export{e.kind, &e.signature, nullptr};
    }
    return std::nullopt;
  }
  auto it = registered_.find(module);
  if (it == registered_.end()) return std::nullopt;
  const wasm::ExportInfo* e = it->second->module->FindExport(field);
  if (e == nullptr) return std::nullopt;
  return Export{e->kind, &e->signature, it->second.get()};
}

std::optional<LinkCheck> Linker::CheckImport(const wasm::ImportInfo& import) const {
  const std::string qualified = import.module + "." + import.name;
  std::optional<Export> found = FindExport(import.module, import.name);
  if (!found) return Unlinkable(fmt::format("unknown import {}", qualified));
  if (found->kind != import.kind) {
    return Unlinkable(fmt::format("incompatible import type: {} is a {}, imported as a {}",
                                  qualified, wasm::ExternKindName(found->kind),
                                  wasm::ExternKindName(import.kind)));
  }
  if (import.kind != ExternKind::kFunc) {
    return RefusedLink(Refusal::kNonFunctionImport,
                       fmt::format("imports {} {}", wasm::ExternKindName(import.kind), qualified));
  }
  if (!NumbersOnly(import.signature)) {
    if (!(import.signature == *found->signature)) {
      return Unlinkable(fmt::format("incompatible import type: {} is {}, imported as {}", qualified,
                                    found->signature->ToString(), import.signature.ToString()));
    }
    return RefusedLink(Refusal::kReferenceValue,
                       fmt::format("imports {} {}", qualified, import.signature.ToString()));
  }
  if (found->slot != nullptr && found->slot->refusal) {
    return RefusedLink(*found->slot->refusal,
                       fmt::format("imports {} from the module of line {}, refused: {}", qualified,
                                   found->slot->line, found->slot->refusal_detail));
  }
  return std::nullopt;
}

LinkCheck Linker::Check(const wasm::Module& module) const {
  std::optional<LinkCheck> refused;
  for (const wasm::ImportInfo& import : module.imports()) {
    std::optional<LinkCheck> problem = CheckImport(import);
    if (!problem) continue;
    if (problem->result == LinkCheck::Result::kUnlinkable) return *problem;
    if (!refused) refused = std::move(problem);
  }
  return refused ? *refused : LinkCheck{};
}

std::vector<std::shared_ptr<ModuleSlot>> Linker::Sources(const wasm::Module& module) const {
  std::vector<std::shared_ptr<ModuleSlot>> sources;
  for (const wasm::ImportInfo& import : module.imports()) {
    auto it = registered_.find(import.module);
    if (it == registered_.end()) continue;
    if (std::find(sources.begin(), sources.end(), it->second) == sources.end()) {
      sources.push_back(it->second);
    }
  }
  return sources;
}

std::string Linker::TakeServedDivergence() {
  return std::exchange(served_divergence_, "");
}

std::optional<std::pair<Refusal, std::string>> Linker::TakeServedRefusal() {
  return std::exchange(served_refusal_, std::nullopt);
}

HostCallOutcome Linker::Serve(const std::string& module, const std::string& field, HostCall& call) {
  const std::string qualified = module + "." + field;
  auto it = registered_.find(module);
  if (it == registered_.end() || !it->second->instance) {
    return call.Fail(wasm::TrapKind::kHostError, qualified + " is not registered");
  }
  if (!it->second->diverged.empty() && served_divergence_.empty()) {
    served_divergence_ = fmt::format("calls {}: {}", qualified, it->second->diverged);
  }
  auto invocation = it->second->instance->Start(field, call.args());
  if (!invocation.ok()) {
    // The row's signature is the export's own and has number types only, so the arguments
    // fit; Start refuses such a call only when the export is a re-exported import.
    if (invocation.status().code() == Code::kInvalidArgument) {
      served_refusal_ = {Refusal::kReexportedImport,
                         fmt::format("{}: {}", qualified, invocation.status().message())};
    }
    return call.Fail(wasm::TrapKind::kHostError, invocation.status().ToString());
  }
  wasm::Invocation& run = **invocation;
  switch (run.Run(invocation_budget_)) {
    case wasm::RunState::kFinished:
      std::copy(run.results().begin(), run.results().end(), call.results().begin());
      return HostCallOutcome::kComplete;
    case wasm::RunState::kTrapped:
      return call.Fail(run.trap().kind, run.trap().ToString());
    case wasm::RunState::kBudgetExhausted:
    case wasm::RunState::kSuspended:
      break;
  }
  return call.Fail(wasm::TrapKind::kHostError, fmt::format("{} did not finish: {}", qualified,
                                                           wasm::RunStateName(run.state())));
}

}  // namespace reef::spec
