// The native tier's backend and instances (native_backend.h); invocations are in
// native_invocation.cc.
#include "wasm/native/native_backend.h"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <utility>

#include "wasm/native/rt/wasm-rt.h"

namespace reef::wasm::native {
namespace {

// Usable bytes of each invocation's fiber stack. EngineLimits::max_call_depth frames of
// generated code fit with room to spare at -O1 (tens of bytes per frame for plain functions);
// a guest whose frames are larger reaches the guard page first and traps
// call_stack_exhausted all the same.
constexpr size_t kFiberStackBytes = size_t{1} << 20;

// Bytes of a global's value as the generated code stores it.
size_t GlobalBytes(ValType type) {
  switch (type) {
    case ValType::kI32:
    case ValType::kF32:
      return 4;
    case ValType::kFuncRef:
      return sizeof(wasm_rt_funcref_t);
    case ValType::kExternRef:
      return sizeof(wasm_rt_externref_t);
    default:
      return 8;
  }
}

// reef_rt_host::out_of_fuel: the meter table (wasm/detail/meter.h) holds the glue's
// reef_glue_out_of_fuel, which the guest calls as `() -> ()` with the instance's host block
// as its module instance, and which calls this.
void OutOfFuel(reef_rt_host* host);

}  // namespace

struct NativeInstance::HostBlock {
  reef_rt_host base;  // first member: the generated code's host pointer points here
  NativeInstance* self;
};

namespace {

void OutOfFuel(reef_rt_host* host) {
  NativeInvocation* invocation = reinterpret_cast<NativeInstance::HostBlock*>(host)->self->active;
  // Nothing here has a destructor: Unwind may leave this frame.
  const int code = invocation != nullptr ? invocation->OnOutOfFuel() : rt::kCancelled;
  if (code != 0) rt::Unwind(code);
}

}  // namespace

// ---- Backend -------------------------------------------------------------------------------

NativeBackend::NativeBackend(const HostRegistry& host_registry, const EngineLimits& engine_limits,
                             std::shared_ptr<CodeSource> code_source)
    : registry(host_registry),
      limits(engine_limits),
      code(std::move(code_source)),
      stacks(kFiberStackBytes),
      out_of_fuel_type(wasm_rt_register_func_type(0, 0)) {}

Result<std::shared_ptr<CompiledNative>> NativeBackend::Compile(
    const std::shared_ptr<const Module>& module) {
  if (auto it = compiled.find(module->id()); it != compiled.end()) return it->second;
  REEF_ASSIGN_OR_RETURN(std::shared_ptr<const NativeModule> native, code->Get(module));
  auto out = std::make_shared<CompiledNative>();
  // The metering pass appends its fields (wasm/detail/meter.h): the fuel is the last global,
  // the meter table follows the module's own tables.
  if (native->globals().empty()) return Status::Internal("native module is not metered");
  out->meter.fuel_global = static_cast<uint32_t>(native->globals().size() - 1);
  out->meter.meter_table = static_cast<uint32_t>(module->tables().size());
  for (const ExportInfo& e : module->exports()) {
    const int index = e.kind == ExternKind::kFunc ? native->FindExport(e.name) : -1;
    out->thunks.push_back(index < 0 ? nullptr : native->entry_points().exports[index]);
  }
  out->code = std::move(native);
  compiled.emplace(module->id(), out);
  return out;
}

Result<std::unique_ptr<Instance>> NativeBackend::Instantiate(
    const std::shared_ptr<const Module>& module, std::span<const size_t> import_rows) {
  REEF_ASSIGN_OR_RETURN(std::shared_ptr<CompiledNative> compiled_module, Compile(module));
  std::vector<const HostFunction*> imports;
  for (size_t row : import_rows) imports.push_back(&registry.functions()[row]);
  REEF_ASSIGN_OR_RETURN(auto instance, NativeInstance::Create(shared_from_this(), compiled_module,
                                                              std::move(imports)));
  if (compiled_module->code->has_start()) {
    const uint64_t budget = limits.max_start_instructions;
    std::unique_ptr<Invocation> start = instance->StartStartFunction();
    start->Run(budget);
    REEF_RETURN_IF_ERROR(wasm::detail::StartFunctionOutcome(*start, budget));
  }
  instance->TakeSnapshot();
  return std::unique_ptr<Instance>(std::move(instance));
}

Result<std::unique_ptr<InvocationFiber>> NativeBackend::AcquireFiber() {
  if (!idle_fibers.empty()) {
    std::unique_ptr<InvocationFiber> fiber = std::move(idle_fibers.back());
    idle_fibers.pop_back();
    return fiber;
  }
  PrepareOverflowTraps();
  return InvocationFiber::Create(stacks);
}

void NativeBackend::PrepareOverflowTraps() {
  if (overflow_traps_prepared) return;
  rt::PrepareStackOverflowTraps();
  overflow_traps_prepared = true;
}

void NativeBackend::ReleaseFiber(std::unique_ptr<InvocationFiber> fiber) {
  fiber->Assign(nullptr);
  if (idle_fibers.size() < kMaxIdleFibers) idle_fibers.push_back(std::move(fiber));
}

Result<std::unique_ptr<InvocationFiber>> InvocationFiber::Create(StackPool& pool) {
  std::unique_ptr<InvocationFiber> self(new InvocationFiber());
  InvocationFiber* const raw = self.get();
  // Runs the assigned invocation, parks, and runs the next one; ends when destroyed parked.
  REEF_ASSIGN_OR_RETURN(self->fiber_, Fiber::Create(pool, [raw](Fiber& fiber) {
                          for (;;) {
                            NativeInvocation* job = std::exchange(raw->job_, nullptr);
                            if (job != nullptr) NativeInvocation::Body(job);
                            if (fiber.cancelled() || !fiber.Suspend()) return;
                          }
                        }));
  return self;
}

// ---- Instance ------------------------------------------------------------------------------

NativeInstance::NativeInstance(std::shared_ptr<NativeBackend> backend,
                               std::shared_ptr<CompiledNative> compiled,
                               std::vector<const HostFunction*> imports)
    : backend_(std::move(backend)),
      compiled_(std::move(compiled)),
      imports_(std::move(imports)),
      host_(
          std::make_unique<HostBlock>(HostBlock{{&NativeInstance::CallImport, &OutOfFuel}, this})) {
}

NativeInstance::~NativeInstance() {
  if (instance_ == nullptr) return;
  if (instantiated_) compiled_->code->entry_points().free(instance_);
  std::free(instance_);
}

Result<std::unique_ptr<NativeInstance>> NativeInstance::Create(
    std::shared_ptr<NativeBackend> backend, std::shared_ptr<CompiledNative> compiled,
    std::vector<const HostFunction*> imports) {
  const EngineLimits limits = backend->limits;
  auto self =
      std::make_unique<NativeInstance>(std::move(backend), std::move(compiled), std::move(imports));
  const GlueEntryPoints& entry = self->compiled_->code->entry_points();
  self->instance_ = std::calloc(1, entry.instance_size());
  if (self->instance_ == nullptr) return Status::LimitExceeded("out of memory for an instance");

  struct Instantiation {
    const GlueEntryPoints* entry;
    void* instance;
    reef_rt_host* host;
  } args{&entry, self->instance_, &self->host_->base};
  const rt::AllocationLimits allocation{limits.max_memory_pages, limits.max_table_elements};
  const rt::RunOutcome outcome = rt::RunGuarded(
      [](void* p) {
        auto* a = static_cast<Instantiation*>(p);
        a->entry->instantiate(a->instance, a->host);
      },
      &args, limits.max_call_depth, &allocation);
  self->instantiated_ = true;  // free() must run even after a partial instantiation
  if (outcome.trapped()) {
    // The interpreter's words, so both tiers' messages classify alike (ClassifyTrapMessage).
    return Status::Trapped(fmt::format("instantiation trapped: {}", outcome.message()));
  }
  self->memory_ = entry.memory(self->instance_);
  const wasm::detail::MeterLayout& meter = self->compiled_->meter;
  self->fuel_ = static_cast<int64_t*>(entry.global(self->instance_, meter.fuel_global));
  wasm_rt_funcref_table_t* table = entry.funcref_table(self->instance_, meter.meter_table);
  if (self->fuel_ == nullptr || table == nullptr || table->size != 1) {
    return Status::Internal("native module lacks the metering fields its compile added");
  }
  table->data[0] = wasm_rt_funcref_t{self->backend_->out_of_fuel_type,
                                     reinterpret_cast<wasm_rt_function_ptr_t>(entry.out_of_fuel),
                                     &self->host_->base};
  return self;
}

reef_rt_host* NativeInstance::host() {
  return &host_->base;
}

uint32_t NativeInstance::CallImport(reef_rt_host* host, uint32_t index, const reef_rt_value* args,
                                    reef_rt_value* results) {
  NativeInvocation* invocation = reinterpret_cast<HostBlock*>(host)->self->active;
  if (invocation == nullptr) return static_cast<uint32_t>(TrapKind::kHostError) + 1;
  return invocation->OnHostCall(index, args, results);
}

Result<std::unique_ptr<Invocation>> NativeInstance::Start(std::string_view name,
                                                          std::span<const WasmValue> args,
                                                          void* context) {
  REEF_ASSIGN_OR_RETURN(const Callable callable, FindCallable(name, args));
  return std::unique_ptr<Invocation>(new NativeInvocation(
      this, callable.thunk, args, callable.info->signature, callable.info->name, context,
      /*host_calls_allowed=*/true));
}

Status NativeInstance::CallInto(std::string_view name, std::span<const WasmValue> args,
                                std::vector<WasmValue>& results, void* context, uint64_t budget) {
  results.clear();
  if (budget == 0) return wasm::detail::ZeroCallBudget();
  REEF_ASSIGN_OR_RETURN(const Callable callable, FindCallable(name, args));
  NativeInvocation invocation(this, callable.thunk, args, callable.info->signature,
                              callable.info->name, context, /*host_calls_allowed=*/true);
  invocation.RunOnce(budget);
  return wasm::detail::CallOutcome(invocation, name, budget, results);
}

Result<NativeInstance::Callable> NativeInstance::FindCallable(std::string_view name,
                                                              std::span<const WasmValue> args) {
  for (const Found& found : found_) {
    if (found.callable.info == nullptr || name != found.name) continue;
    if (active != nullptr) {
      return Status::FailedPrecondition("another invocation of this instance is active");
    }
    if (!wasm::detail::CallArgsMatch(found.callable.info->signature, args)) {
      return wasm::detail::CallArgsMismatch(name, found.callable.info->signature, args);
    }
    return found.callable;
  }
  const ExportInfo* info = module().FindExport(name);
  if (info == nullptr) {
    return Status::NotFound(fmt::format("module has no function export `{}`", name));
  }
  if (info->kind != ExternKind::kFunc) {
    return Status::NotFound(fmt::format("export `{}` is not a function", name));
  }
  if (active != nullptr) {
    return Status::FailedPrecondition("another invocation of this instance is active");
  }
  if (info->index < imports_.size()) {
    return Status::InvalidArgument(
        fmt::format("`{}` is a host import re-exported; call it from wasm instead", name));
  }
  if (!wasm::detail::CallArgsMatch(info->signature, args)) {
    return wasm::detail::CallArgsMismatch(name, info->signature, args);
  }
  const size_t export_index = static_cast<size_t>(info - module().exports().data());
  const std::vector<GlueEntryPoints::Thunk>& thunks = compiled_->thunks;
  if (export_index >= thunks.size() || thunks[export_index] == nullptr) {
    return Status::Internal(fmt::format("native module lacks export `{}`", name));
  }
  Found& slot = found_[next_found_];
  next_found_ = (next_found_ + 1) % found_.size();
  slot.name.assign(name);
  slot.callable = Callable{info, thunks[export_index]};
  return slot.callable;
}

std::unique_ptr<Invocation> NativeInstance::StartStartFunction() {
  static const FuncSignature kNoValues;
  auto invocation = std::unique_ptr<NativeInvocation>(
      new NativeInvocation(this, nullptr, std::span<const WasmValue>(), kNoValues, "", nullptr,
                           /*host_calls_allowed=*/false));
  invocation->set_start(compiled_->code->entry_points().start,
                        module().FunctionName(*module().start_function()));
  return invocation;
}

void NativeInstance::TakeSnapshot() {
  CompiledNative& compiled = *compiled_;
  if (compiled.has_snapshot) return;
  if (memory_ != nullptr) {
    compiled.initial_memory = wasm::detail::MemoryImage::Capture(memory_->data, memory_->size);
    // What the start function wrote is the state resets go back to.
    if (memory_->dirty != nullptr) {
      std::memset(memory_->dirty, 0, memory_->size >> REEF_RT_CHUNK_SHIFT);
    }
  }
  const GlueEntryPoints& entry = compiled.code->entry_points();
  const std::vector<NativeGlobal>& globals = compiled.code->globals();
  for (uint32_t i = 0; i < globals.size(); ++i) {
    const char* value = static_cast<const char*>(entry.global(instance_, i));
    compiled.initial_globals.emplace_back(value, GlobalBytes(globals[i].type));
  }
  compiled.has_snapshot = true;
}

Status NativeInstance::Reset() {
  if (active != nullptr)
    return Status::FailedPrecondition("cannot reset an instance while it runs");
  // Only the chunks written since the last reset (wasm_rt_memory_t::dirty): a guest that
  // grew its memory to megabytes and wrote a few pages costs a few pages.
  if (memory_ != nullptr && memory_->dirty != nullptr) {
    compiled_->initial_memory.RestoreMarked(memory_->data, memory_->size, memory_->dirty,
                                            REEF_RT_CHUNK_SHIFT, REEF_RT_CHUNK_SPILL);
  }
  const GlueEntryPoints& entry = compiled_->code->entry_points();
  const std::vector<NativeGlobal>& globals = compiled_->code->globals();
  for (uint32_t i = 0; i < globals.size(); ++i) {
    if (!globals[i].mutable_) continue;
    const std::string& initial = compiled_->initial_globals[i];
    std::memcpy(entry.global(instance_, i), initial.data(), initial.size());
  }
  return Status::Ok();
}

Result<WasmValue> NativeInstance::GetGlobal(std::string_view name) const {
  const ExportInfo* info = module().FindExport(name);
  if (info == nullptr)
    return Status::NotFound(fmt::format("module has no global export `{}`", name));
  if (info->kind != ExternKind::kGlobal) {
    return Status::NotFound(fmt::format("export `{}` is not a global", name));
  }
  const ValType type = compiled_->code->globals()[info->index].type;
  if (!IsNumberType(type)) {
    return Status::InvalidArgument(
        fmt::format("global `{}` has type {}; the engine interface passes number types only", name,
                    ValTypeName(type)));
  }
  const void* value = compiled_->code->entry_points().global(instance_, info->index);
  switch (type) {
    case ValType::kI64:
      return WasmValue{*static_cast<const int64_t*>(value)};
    case ValType::kF32:
      return WasmValue{*static_cast<const float*>(value)};
    case ValType::kF64:
      return WasmValue{*static_cast<const double*>(value)};
    default:
      return WasmValue{*static_cast<const int32_t*>(value)};
  }
}

// ---- GuestMemory ---------------------------------------------------------------------------

uint8_t* NativeInstance::base() const {
  return memory_->data;
}

uint64_t NativeInstance::byte_size() const {
  return memory_->size;
}

void NativeInstance::Written(uint32_t ptr, uint32_t len) {
  reef_rt_mark_written(memory_, ptr, len);
}

}  // namespace reef::wasm::native

namespace reef::wasm::detail {

std::shared_ptr<Backend> MakeNativeBackend(const HostRegistry& registry, const EngineLimits& limits,
                                           std::shared_ptr<native::CodeSource> code) {
  return std::make_shared<native::NativeBackend>(registry, limits, std::move(code));
}

}  // namespace reef::wasm::detail
