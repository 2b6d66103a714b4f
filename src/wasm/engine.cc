#include "wasm/engine.h"

#include <fmt/format.h>

#include "core/mutex.h"
#include "wasm/detail/backend.h"
#include "wasm/native/code_source.h"

namespace reef::wasm {

namespace detail {

std::string HostCallFromStartMessage(std::string_view qualified) {
  return fmt::format(
      "{} called from a start function; host imports are available only in invocations", qualified);
}

std::string TooManyNestedInvocationsMessage(uint32_t running, uint32_t limit) {
  return fmt::format(
      "{} invocations are already running on this engine (host functions running other "
      "instances' invocations); limit max_nested_invocations={}",
      running, limit);
}

Status StartFunctionOutcome(const Invocation& start, uint64_t budget) {
  switch (start.state()) {
    case RunState::kFinished:
      return Status::Ok();
    case RunState::kTrapped:
      return Status::Trapped("start function trapped: " + start.trap().ToString());
    case RunState::kBudgetExhausted:
    case RunState::kSuspended:
      break;
  }
  return Status::LimitExceeded(fmt::format(
      "start function did not finish within {} instructions or suspended in a host call", budget));
}

Status CheckSuspended(RunState state) {
  if (state == RunState::kSuspended) return Status::Ok();
  return Status::FailedPrecondition(
      fmt::format("invocation is {}, not suspended", RunStateName(state)));
}

Status CheckHostCallResults(RunState state, const HostFunction* function,
                            std::string_view suspended_in, std::span<const WasmValue> results) {
  REEF_RETURN_IF_ERROR(CheckSuspended(state));
  const FuncSignature& sig = function->signature;
  bool ok = results.size() == sig.results.size();
  for (size_t i = 0; ok && i < results.size(); ++i) ok = TypeOf(results[i]) == sig.results[i];
  if (ok) return Status::Ok();
  return Status::InvalidArgument(
      fmt::format("host call {} returns {}; results do not match", suspended_in, sig.ToString()));
}

bool CallArgsMatch(const FuncSignature& signature, std::span<const WasmValue> args) {
  bool ok = args.size() == signature.params.size();
  for (size_t i = 0; ok && i < args.size(); ++i) ok = TypeOf(args[i]) == signature.params[i];
  for (ValType t : signature.results) ok = ok && IsNumberType(t);
  return ok;
}

Status ZeroCallBudget() {
  return Status::InvalidArgument("Call needs a budget of at least 1 instruction");
}

Status CallOutcome(const Invocation& invocation, std::string_view name, uint64_t budget,
                   std::vector<WasmValue>& results) {
  switch (invocation.state()) {
    case RunState::kTrapped:
      return Status::Trapped(invocation.trap().ToString());
    case RunState::kSuspended:
      return Status::FailedPrecondition(
          fmt::format("`{}` suspended in host call {}; use Start/Run to drive it", name,
                      invocation.suspended_in()));
    case RunState::kBudgetExhausted:
      return Status::LimitExceeded(
          fmt::format("`{}` did not finish within its budget of {} instructions", name, budget));
    case RunState::kFinished:
      break;
  }
  results.assign(invocation.results().begin(), invocation.results().end());
  return Status::Ok();
}

Status CallArgsMismatch(std::string_view name, const FuncSignature& signature,
                        std::span<const WasmValue> args) {
  std::string got;
  for (const WasmValue& a : args) got += (got.empty() ? "" : ", ") + FormatValue(a);
  return Status::InvalidArgument(
      fmt::format("`{}` has signature {}; got ({})", name, signature.ToString(), got));
}

}  // namespace detail

namespace {

// The import that function `index` of `module` is, or nullptr for a defined function.
const ImportInfo* FunctionImport(const Module& module, uint32_t index) {
  for (const ImportInfo& import : module.imports()) {
    if (import.kind != ExternKind::kFunc) continue;
    if (index == 0) return &import;
    --index;
  }
  return nullptr;
}

// OK when every memory and table `module` declares starts within `limits`.
Status CheckDeclaredLimits(const Module& module, const EngineLimits& limits) {
  for (size_t i = 0; i < module.memories().size(); ++i) {
    const DeclaredLimits& m = module.memories()[i];
    if (m.initial > limits.max_memory_pages) {
      return Status::LimitExceeded(
          fmt::format("memory {} declares {} initial pages; limit max_memory_pages={} ({} MiB)", i,
                      m.initial, limits.max_memory_pages, limits.max_memory_pages / 16));
    }
  }
  for (size_t i = 0; i < module.tables().size(); ++i) {
    const DeclaredLimits& t = module.tables()[i];
    if (t.initial > limits.max_table_elements) {
      return Status::LimitExceeded(
          fmt::format("table {} declares {} initial elements; limit max_table_elements={}", i,
                      t.initial, limits.max_table_elements));
    }
  }
  return Status::Ok();
}

}  // namespace

namespace {

struct DefaultEngineOptions {
  Mutex mu;
  EngineOptions options GUARDED_BY(mu);
};

DefaultEngineOptions& Defaults() {
  static auto* defaults = new DefaultEngineOptions();  // never destroyed: engines may outlive exit
  return *defaults;
}

}  // namespace

void Engine::SetDefaultOptions(EngineOptions options) {
  MutexLock lock(Defaults().mu);
  Defaults().options = std::move(options);
}

EngineOptions Engine::DefaultOptions() {
  MutexLock lock(Defaults().mu);
  return Defaults().options;
}

Engine::Engine(const HostRegistry& registry, EngineLimits limits)
    : Engine(registry, limits, DefaultOptions()) {}

Engine::Engine(const HostRegistry& registry, EngineLimits limits, EngineOptions options)
    : registry_(registry), limits_(limits), options_(std::move(options)) {
  if (options_.native_code == nullptr) options_.native_code = native::CodeSource::Default();
  if (options_.tier != TierChoice::kNative) {
    interp_ = detail::MakeInterpBackend(registry, limits);
  }
  if (options_.tier != TierChoice::kInterp) {
    native_ = detail::MakeNativeBackend(registry, limits, options_.native_code);
  }
}

Engine::~Engine() = default;

void Engine::ReleaseThreadResources() {
  if (native_) native_->ReleaseThreadResources();
}

bool Engine::Outdated(const Instance& instance) const {
  // One way only: native code that left the loaded-code cache is loaded again on the next
  // instantiation; instances that run it stay.
  return instance.tier() == Tier::kInterp && TierOf(instance.module()) == Tier::kNative;
}

Tier Engine::TierOf(const Module& module) const {
  switch (options_.tier) {
    case TierChoice::kInterp:
      return Tier::kInterp;
    case TierChoice::kNative:
      return Tier::kNative;
    case TierChoice::kAuto:
      break;
  }
  return options_.native_code->IsLoaded(module) ? Tier::kNative : Tier::kInterp;
}

Result<std::vector<size_t>> Engine::ResolveImports(const Module& module) const {
  std::vector<std::string> problems;
  std::vector<size_t> rows;
  for (const ImportInfo& import : module.imports()) {
    std::string qualified = import.module + "." + import.name;
    if (import.kind != ExternKind::kFunc) {
      problems.push_back(fmt::format("unsupported import {} ({}): the host provides functions only",
                                     qualified, ExternKindName(import.kind)));
      continue;
    }
    const HostFunction* f = registry_.Find(import.module, import.name);
    if (f == nullptr) {
      problems.push_back(
          fmt::format("unknown import {} {}", qualified, import.signature.ToString()));
      continue;
    }
    if (!(f->signature == import.signature)) {
      problems.push_back(fmt::format("import {} has signature {}; the host provides {}", qualified,
                                     import.signature.ToString(), f->signature.ToString()));
      continue;
    }
    rows.push_back(static_cast<size_t>(f - registry_.functions().data()));
  }
  if (problems.empty()) return rows;
  std::string message =
      fmt::format("module {} cannot be instantiated against ABI {}/{}: ", module.id().substr(0, 12),
                  registry_.abi_name(), registry_.abi_version());
  for (size_t i = 0; i < problems.size(); ++i) message += (i ? "; " : "") + problems[i];
  return Status::NotFound(std::move(message));
}

Result<std::unique_ptr<Instance>> Engine::Instantiate(std::shared_ptr<const Module> module) {
  REEF_RETURN_IF_ERROR(CheckDeclaredLimits(*module, limits_));
  REEF_ASSIGN_OR_RETURN(std::vector<size_t> rows, ResolveImports(*module));
  if (std::optional<uint32_t> start = module->start_function()) {
    if (const ImportInfo* import = FunctionImport(*module, *start)) {
      // The spec calls an imported start function while instantiating; Reef's host functions
      // run only inside invocations, exactly as when a start function calls one.
      std::string qualified = import->module + "." + import->name;
      Trap refused{TrapKind::kHostError, detail::HostCallFromStartMessage(qualified), qualified, 0};
      return Status::Trapped("start function trapped: " + refused.ToString());
    }
  }
  detail::Backend* backend = native_ != nullptr ? native_.get() : interp_.get();
  if (options_.tier == TierChoice::kAuto && options_.native_code->Find(*module) == nullptr) {
    options_.native_code->Request(module);  // meanwhile, and if it fails: the interpreter
    backend = interp_.get();
  }
  REEF_ASSIGN_OR_RETURN(auto instance, backend->Instantiate(module, rows));
  ++stats_.instances_created;
  return instance;
}

Result<std::vector<WasmValue>> Instance::Call(std::string_view name,
                                              std::span<const WasmValue> args, void* context,
                                              uint64_t budget) {
  std::vector<WasmValue> results;
  REEF_RETURN_IF_ERROR(CallInto(name, args, results, context, budget));
  return results;
}

Status Instance::CallInto(std::string_view name, std::span<const WasmValue> args,
                          std::vector<WasmValue>& results, void* context, uint64_t budget) {
  results.clear();
  if (budget == 0) return detail::ZeroCallBudget();
  REEF_ASSIGN_OR_RETURN(auto invocation, Start(name, args, context));
  invocation->Run(budget);
  return detail::CallOutcome(*invocation, name, budget, results);
}

}  // namespace reef::wasm
