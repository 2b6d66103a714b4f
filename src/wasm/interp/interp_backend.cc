#include "wasm/interp/interp_backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "wabt/binary-reader.h"
#include "wabt/interp/binary-reader-interp.h"
#include "wasm/interp/wabt_access.h"

namespace reef::wasm {

namespace interp = wabt::interp;

// ---------------------------------------------------------------------------------------
// Value conversions

interp::Value ToInterpValue(const WasmValue& value) {
  return std::visit([](auto v) { return interp::Value::Make(v); }, value);
}

WasmValue FromInterpValue(interp::Value value, interp::ValueType type) {
  switch (type) {
    case interp::ValueType::I64:
      return value.Get<int64_t>();
    case interp::ValueType::F32:
      return value.Get<float>();
    case interp::ValueType::F64:
      return value.Get<double>();
    default:
      return value.Get<int32_t>();
  }
}

namespace {

FuncSignature FromInterpFuncType(const interp::FuncType& type) {
  FuncSignature sig;
  for (auto t : type.params) sig.params.push_back(detail::FromWabtType(t));
  for (auto t : type.results) sig.results.push_back(detail::FromWabtType(t));
  return sig;
}

}  // namespace

// ---------------------------------------------------------------------------------------
// CompiledModule and InterpBackend

std::string CompiledModule::FunctionAt(uint32_t code_offset, uint32_t* function_start) const {
  auto it = std::upper_bound(function_starts.begin(), function_starts.end(),
                             std::make_pair(code_offset, std::numeric_limits<uint32_t>::max()));
  if (it == function_starts.begin()) {
    *function_start = 0;
    return "?";
  }
  --it;
  *function_start = it->first;
  return module->FunctionName(it->second);
}

InterpBackend::InterpBackend(const HostRegistry& host_registry, const EngineLimits& engine_limits)
    : registry(host_registry),
      limits(engine_limits),
      host_funcs(host_registry.functions().size()) {}

InterpBackend::~InterpBackend() {
  // Threads and RefPtrs must go before the store (they unregister from it).
  thread_pool.clear();
  host_funcs.clear();
  out_of_fuel.reset();
  compiled.clear();
}

Result<CompiledModule*> InterpBackend::Compile(const std::shared_ptr<const Module>& module) {
  auto found = compiled.find(module->id());
  if (found != compiled.end()) return found->second.get();

  REEF_ASSIGN_OR_RETURN(detail::MeteredBinary metered, detail::MeterBinary(module->bytes()));
  wabt::Errors errors;
  wabt::Features features;
  wabt::ReadBinaryOptions options(features, nullptr, /*read_debug_names=*/false,
                                  /*stop_on_first_error=*/true,
                                  /*fail_on_custom_section_error=*/false);
  interp::ModuleDesc desc;
  if (wabt::Failed(interp::ReadBinaryInterp("module", metered.bytes.data(), metered.bytes.size(),
                                            options, &errors, &desc))) {
    std::string why = errors.empty() ? "unknown error" : errors.front().message;
    return Status::InvalidArgument(fmt::format("module {}: {}", module->id(), why));
  }
  // Growth limits: the interpreter refuses memory.grow / table.grow past a declared maximum,
  // so the maximum becomes min(declared, configured).
  for (interp::MemoryDesc& m : desc.memories) {
    auto& l = m.type.limits;
    l.max =
        l.has_max ? std::min<uint64_t>(l.max, limits.max_memory_pages) : limits.max_memory_pages;
    l.has_max = true;
  }
  for (interp::TableDesc& t : desc.tables) {
    auto& l = t.type.limits;
    l.max = l.has_max ? std::min<uint64_t>(l.max, limits.max_table_elements)
                      : limits.max_table_elements;
    l.has_max = true;
  }

  auto out = std::make_unique<CompiledModule>();
  out->module = module;
  out->meter = metered.layout;
  uint32_t imported_funcs = 0;
  for (const interp::ImportDesc& import : desc.imports) {
    if (import.type.type->kind == wabt::ExternalKind::Func) ++imported_funcs;
  }
  for (size_t i = 0; i < desc.funcs.size(); ++i) {
    out->function_starts.emplace_back(desc.funcs[i].code_offset,
                                      imported_funcs + static_cast<uint32_t>(i));
  }
  std::sort(out->function_starts.begin(), out->function_starts.end());
  // The start function runs under Reef's budget (Engine::Instantiate), not wabt's unbounded
  // Func::Call, so it is taken out of the description.
  desc.starts.clear();
  out->code = interp::Module::New(store, std::move(desc));
  CompiledModule* result = out.get();
  compiled.emplace(module->id(), std::move(out));
  return result;
}

interp::HostFunc::Ptr InterpBackend::HostFuncFor(size_t row) {
  if (!host_funcs[row]) {
    const HostFunction& f = registry.functions()[row];
    interp::ValueTypes params, results;
    for (ValType t : f.signature.params) params.push_back(detail::ToWabtType(t));
    for (ValType t : f.signature.results) results.push_back(detail::ToWabtType(t));
    host_funcs[row] = interp::HostFunc::New(
        store, interp::FuncType(params, results),
        [this, row](interp::Thread&, const interp::Values& args, interp::Values& out,
                    interp::Trap::Ptr* out_trap) -> wabt::Result {
          if (running == nullptr) {  // called outside Reef's Run: e.g. never; fail safe
            *out_trap = interp::Trap::New(store, "host function called outside an invocation");
            return wabt::Result::Error;
          }
          return running->OnHostCall(row, args, out, out_trap);
        });
  }
  return host_funcs[row];
}

interp::HostFunc::Ptr InterpBackend::OutOfFuelFunc() {
  if (!out_of_fuel) {
    out_of_fuel = interp::HostFunc::New(
        store, interp::FuncType({}, {}),
        [this](interp::Thread&, const interp::Values&, interp::Values&,
               interp::Trap::Ptr* out_trap) -> wabt::Result {
          if (running == nullptr) {
            *out_trap = interp::Trap::New(store, "out of fuel outside an invocation");
            return wabt::Result::Error;
          }
          return running->OnOutOfFuel(out_trap);
        });
  }
  return out_of_fuel;
}

std::unique_ptr<interp::Thread> InterpBackend::AcquireThread() {
  if (!thread_pool.empty()) {
    auto thread = std::move(thread_pool.back());
    thread_pool.pop_back();
    return thread;
  }
  auto thread = std::make_unique<interp::Thread>(store);
  // The interpreter traps "call stack exhausted" when the frame vector is at capacity.
  std::vector<interp::Frame> frames;
  frames.reserve(limits.max_call_depth);
  detail::Frames(*thread) = std::move(frames);
  return thread;
}

void InterpBackend::ReleaseThread(std::unique_ptr<interp::Thread> thread) {
  detail::Frames(*thread).clear();
  detail::Values(*thread).clear();
  detail::Refs(*thread).clear();
  detail::Exceptions(*thread).clear();
  constexpr size_t kMaxPooledThreads = 64;
  if (thread_pool.size() < kMaxPooledThreads) thread_pool.push_back(std::move(thread));
}

void InterpBackend::NoteGarbage(uint32_t amount) {
  garbage += amount;
  if (garbage >= 256) {
    garbage = 0;
    store.Collect();
  }
}

std::shared_ptr<detail::Backend> detail::MakeInterpBackend(const HostRegistry& registry,
                                                           const EngineLimits& limits) {
  return std::make_shared<InterpBackend>(registry, limits);
}

Result<std::unique_ptr<Instance>> InterpBackend::Instantiate(
    const std::shared_ptr<const Module>& module, std::span<const size_t> import_rows) {
  REEF_ASSIGN_OR_RETURN(CompiledModule * code, Compile(module));
  interp::RefVec imports;
  for (size_t row : import_rows) imports.push_back(HostFuncFor(row).ref());

  interp::Trap::Ptr trap;
  interp::Instance::Ptr instance =
      interp::Instance::Instantiate(store, code->code.ref(), imports, &trap);
  if (!instance) {
    NoteGarbage();
    return Status::Trapped(
        fmt::format("instantiation trapped: {}", trap ? trap->message() : std::string("unknown")));
  }
  auto result = std::make_unique<InterpInstance>(shared_from_this(), code, std::move(instance));
  if (std::optional<uint32_t> start_function = module->start_function()) {
    const uint64_t budget = limits.max_start_instructions;
    REEF_ASSIGN_OR_RETURN(auto start, result->StartFunction(*start_function, {}, nullptr, false));
    start->Run(budget);
    REEF_RETURN_IF_ERROR(detail::StartFunctionOutcome(*start, budget));
  }
  result->TakeSnapshot();
  return std::unique_ptr<Instance>(std::move(result));
}

// ---------------------------------------------------------------------------------------
// Instance

InterpInstance::InterpInstance(std::shared_ptr<InterpBackend> state, CompiledModule* compiled,
                               interp::Instance::Ptr instance)
    : state_(std::move(state)), compiled_(compiled), instance_(std::move(instance)) {
  if (!instance_->memories().empty()) {
    memory_ = interp::Memory::Ptr(state_->store, instance_->memories()[0]);
  }
  const detail::MeterLayout& meter = compiled_->meter;
  fuel_ = interp::Global::Ptr(state_->store, instance_->globals()[meter.fuel_global]);
  interp::Table::Ptr table(state_->store, instance_->tables()[meter.meter_table]);
  // Cannot fail: the table has exactly one funcref element and the function is a funcref.
  (void)table->Set(state_->store, 0, state_->OutOfFuelFunc().ref());
}

InterpInstance::~InterpInstance() {
  fuel_.reset();
  memory_.reset();
  instance_.reset();
  state_->NoteGarbage(16);
}

Result<std::unique_ptr<Invocation>> InterpInstance::Start(std::string_view name,
                                                          std::span<const WasmValue> args,
                                                          void* context) {
  const auto& exports = compiled_->code->desc().exports;
  for (size_t i = 0; i < exports.size(); ++i) {
    if (exports[i].type.name != name) continue;
    if (exports[i].type.type->kind != wabt::ExternalKind::Func) {
      return Status::NotFound(fmt::format("export `{}` is not a function", name));
    }
    return StartFunction(exports[i].index, args, context, true);
  }
  return Status::NotFound(fmt::format("module has no function export `{}`", name));
}

Result<std::unique_ptr<Invocation>> InterpInstance::StartFunction(uint32_t index,
                                                                  std::span<const WasmValue> args,
                                                                  void* context,
                                                                  bool host_calls_allowed) {
  if (busy_) {
    return Status::FailedPrecondition("another invocation of this instance is active");
  }
  interp::Func::Ptr func(state_->store, instance_->funcs()[index]);
  auto name = [&] { return compiled_->module->FunctionName(index); };
  auto* defined = wabt::dyn_cast<interp::DefinedFunc>(func.get());
  if (defined == nullptr) {
    return Status::InvalidArgument(
        fmt::format("`{}` is a host import re-exported; call it from wasm instead", name()));
  }
  const interp::FuncType& type = defined->type();
  bool args_match = args.size() == type.params.size();
  for (size_t i = 0; args_match && i < args.size(); ++i) {
    args_match = detail::ToWabtType(TypeOf(args[i])) == type.params[i];
  }
  for (auto t : type.results) args_match = args_match && IsNumberType(detail::FromWabtType(t));
  if (!args_match) return detail::CallArgsMismatch(name(), FromInterpFuncType(type), args);

  interp::Values values;
  values.reserve(args.size());
  for (const WasmValue& a : args) values.push_back(ToInterpValue(a));
  auto thread = state_->AcquireThread();
  set_fuel(0);
  detail::PushValues(*thread, defined->type().params, values);
  interp::Trap::Ptr trap;
  interp::RunResult pushed = detail::PushCall(*thread, *defined, &trap);
  busy_ = true;
  auto invocation = std::make_unique<InterpInvocation>(
      state_, this, std::move(thread), defined->type().results, context, host_calls_allowed);
  if (pushed == interp::RunResult::Trap) invocation->TrapBeforeRun(trap);
  return std::unique_ptr<Invocation>(std::move(invocation));
}

void InterpInstance::TakeSnapshot() {
  if (compiled_->has_snapshot) return;
  if (memory_) {
    compiled_->initial_memory =
        detail::MemoryImage::Capture(memory_->UnsafeData(), memory_->ByteSize());
  }
  for (interp::Ref ref : instance_->globals()) {
    compiled_->initial_globals.push_back(interp::Global::Ptr(state_->store, ref)->Get());
  }
  compiled_->has_snapshot = true;
}

Status InterpInstance::Reset() {
  if (busy_) return Status::FailedPrecondition("cannot reset an instance while it runs");
  if (memory_) compiled_->initial_memory.Restore(memory_->UnsafeData(), memory_->ByteSize());
  const interp::RefVec& globals = instance_->globals();
  for (size_t i = 0; i < globals.size(); ++i) {
    interp::Global::Ptr global(state_->store, globals[i]);
    if (global->type().mut == interp::Mutability::Var) {
      global->UnsafeSet(compiled_->initial_globals[i]);
    }
  }
  return Status::Ok();
}

Result<WasmValue> InterpInstance::GetGlobal(std::string_view name) const {
  for (const interp::ExportDesc& exp : compiled_->code->desc().exports) {
    if (exp.type.name != name) continue;
    if (exp.type.type->kind != wabt::ExternalKind::Global) {
      return Status::NotFound(fmt::format("export `{}` is not a global", name));
    }
    interp::Global::Ptr global(state_->store, instance_->globals()[exp.index]);
    const ValType type = detail::FromWabtType(global->type().type);
    if (!IsNumberType(type)) {
      return Status::InvalidArgument(
          fmt::format("global `{}` has type {}; the engine interface passes number types only",
                      name, ValTypeName(type)));
    }
    return FromInterpValue(global->Get(), global->type().type);
  }
  return Status::NotFound(fmt::format("module has no global export `{}`", name));
}

}  // namespace reef::wasm
