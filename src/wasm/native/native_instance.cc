// NativeInstance (native_instance.h): instantiation, calls, host imports, memory access.
#include "wasm/native/native_instance.h"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>

#include "wasm/native/rt/runtime.h"
#include "wasm/native/rt/wasm-rt.h"

namespace reef::wasm::native {
namespace {

WasmValue FromRt(const reef_rt_value& v, ValType type) {
  switch (type) {
    case ValType::kI64:
      return static_cast<int64_t>(v.i64);
    case ValType::kF32:
      return v.f32;
    case ValType::kF64:
      return v.f64;
    default:
      return static_cast<int32_t>(v.i32);
  }
}

reef_rt_value ToRt(const WasmValue& value) {
  reef_rt_value out{};
  std::visit(
      [&out](auto v) {
        using T = decltype(v);
        if constexpr (std::is_same_v<T, int32_t>) out.i32 = static_cast<uint32_t>(v);
        if constexpr (std::is_same_v<T, int64_t>) out.i64 = static_cast<uint64_t>(v);
        if constexpr (std::is_same_v<T, float>) out.f32 = v;
        if constexpr (std::is_same_v<T, double>) out.f64 = v;
      },
      value);
  return out;
}

WasmValue ZeroOf(ValType type) {
  return FromRt(reef_rt_value{}, type);
}

rt::AllocationLimits AllocationLimitsOf(const EngineLimits& limits) {
  return {limits.max_memory_pages, limits.max_table_elements};
}

}  // namespace

struct NativeInstance::HostBlock {
  reef_rt_host base;  // first member: the generated code's host pointer points here
  NativeInstance* self;
};

// GuestMemory over the instance's wasm_rt_memory_t (null when the module has none).
class NativeInstance::Memory final : public GuestMemory {
 public:
  explicit Memory(wasm_rt_memory_t* memory) : memory_(memory) {}
  uint64_t size() const override { return memory_ != nullptr ? memory_->size : 0; }
  Result<std::vector<uint8_t>> Read(uint32_t ptr, uint32_t len) const override {
    REEF_ASSIGN_OR_RETURN(uint8_t * data, Span(ptr, len));
    return std::vector<uint8_t>(data, data + len);
  }
  Result<std::span<const uint8_t>> View(uint32_t ptr, uint32_t len) const override {
    REEF_ASSIGN_OR_RETURN(uint8_t * data, Span(ptr, len));
    return std::span<const uint8_t>(data, len);
  }
  Status Write(uint32_t ptr, std::span<const uint8_t> bytes) override {
    if (bytes.size() > std::numeric_limits<uint32_t>::max()) {
      return Status::InvalidArgument("buffer larger than 4 GiB");
    }
    REEF_ASSIGN_OR_RETURN(uint8_t * data, Span(ptr, static_cast<uint32_t>(bytes.size())));
    if (!bytes.empty()) std::memcpy(data, bytes.data(), bytes.size());
    return Status::Ok();
  }

 private:
  Result<uint8_t*> Span(uint32_t ptr, uint32_t len) const {
    if (memory_ == nullptr) return Status::FailedPrecondition("module has no memory");
    const uint64_t end = uint64_t{ptr} + len;
    if (end > memory_->size) {
      return Status::InvalidArgument(
          fmt::format("guest buffer [{}, {}) outside memory of {} bytes", ptr, end, memory_->size));
    }
    return memory_->data + ptr;
  }
  wasm_rt_memory_t* memory_;
};

struct NativeInstance::CallFrame {
  GlueEntryPoints::Thunk thunk;
  void* instance;
  const reef_rt_value* args;
  reef_rt_value* results;
};

// ---- Creation ----------------------------------------------------------------------------

NativeInstance::NativeInstance(std::shared_ptr<const NativeModule> module,
                               std::vector<HostHandler> imports, const EngineLimits& limits)
    : module_(std::move(module)),
      imports_(std::move(imports)),
      limits_(limits),
      host_(std::make_unique<HostBlock>(HostBlock{{&NativeInstance::CallImport}, this})) {}

Result<std::unique_ptr<NativeInstance>> NativeInstance::Create(
    std::shared_ptr<const NativeModule> module, std::vector<HostHandler> imports,
    const EngineLimits& limits) {
  if (imports.size() != module->imports().size()) {
    return Status::InvalidArgument(fmt::format("module has {} function imports; got {} handlers",
                                               module->imports().size(), imports.size()));
  }
  const Module& wasm = module->module();
  for (size_t i = 0; i < wasm.memories().size(); ++i) {
    if (wasm.memories()[i].initial > limits.max_memory_pages) {
      return Status::LimitExceeded(
          fmt::format("memory {} declares {} initial pages; limit max_memory_pages={}", i,
                      wasm.memories()[i].initial, limits.max_memory_pages));
    }
  }
  for (size_t i = 0; i < wasm.tables().size(); ++i) {
    if (wasm.tables()[i].initial > limits.max_table_elements) {
      return Status::LimitExceeded(
          fmt::format("table {} declares {} initial elements; limit max_table_elements={}", i,
                      wasm.tables()[i].initial, limits.max_table_elements));
    }
  }
  std::unique_ptr<NativeInstance> self(
      new NativeInstance(std::move(module), std::move(imports), limits));
  const GlueEntryPoints& entry = self->module_->entry_points();
  self->instance_ = std::calloc(1, entry.instance_size());
  if (self->instance_ == nullptr) return Status::LimitExceeded("out of memory for an instance");

  struct Instantiation {
    const GlueEntryPoints* entry;
    void* instance;
    reef_rt_host* host;
  } args{&entry, self->instance_, &self->host_->base};
  const rt::AllocationLimits allocation = AllocationLimitsOf(limits);
  self->running_ = true;
  const rt::RunOutcome outcome = rt::RunGuarded(
      [](void* p) {
        auto* a = static_cast<Instantiation*>(p);
        a->entry->instantiate(a->instance, a->host);
      },
      &args, limits.max_call_depth, &allocation);
  self->running_ = false;
  self->instantiated_ = true;  // free() must run even after a partial instantiation
  if (outcome.trapped()) {
    // The interpreter's wording, so both tiers' messages classify alike (ClassifyTrapMessage).
    const Trap trap = self->MakeTrap(outcome.code, "(instantiation)");
    return Status::Trapped(fmt::format("instantiation trapped: {}", trap.message));
  }
  self->memory_ = std::make_unique<Memory>(entry.memory(self->instance_));
  return self;
}

Result<std::unique_ptr<NativeInstance>> NativeInstance::Create(
    std::shared_ptr<const NativeModule> module, const HostRegistry& registry,
    const EngineLimits& limits) {
  std::vector<HostHandler> handlers;
  std::vector<std::string> problems;
  for (const NativeImport& import : module->imports()) {
    const HostFunction* f = registry.Find(import.module, import.name);
    if (f == nullptr) {
      problems.push_back(fmt::format("unknown import {}.{} {}", import.module, import.name,
                                     import.signature.ToString()));
    } else if (!(f->signature == import.signature)) {
      problems.push_back(fmt::format("import {}.{} has signature {}; the host provides {}",
                                     import.module, import.name, import.signature.ToString(),
                                     f->signature.ToString()));
    } else {
      handlers.push_back(f->handler);
    }
  }
  if (!problems.empty()) {
    return Status::NotFound(fmt::format("cannot instantiate against ABI {}/{}: {}",
                                        registry.abi_name(), registry.abi_version(),
                                        fmt::join(problems, "; ")));
  }
  return Create(std::move(module), std::move(handlers), limits);
}

NativeInstance::~NativeInstance() {
  if (instance_ == nullptr) return;
  if (instantiated_) module_->entry_points().free(instance_);
  std::free(instance_);
}

GuestMemory& NativeInstance::memory() {
  if (memory_ == nullptr) memory_ = std::make_unique<Memory>(nullptr);
  return *memory_;
}

// ---- Calls -------------------------------------------------------------------------------

Result<std::vector<WasmValue>> NativeInstance::Call(std::string_view name,
                                                    std::span<const WasmValue> args,
                                                    void* context) {
  const int index = module_->FindExport(name);
  if (index < 0) {
    return Status::NotFound(fmt::format("module has no host-callable function export `{}`", name));
  }
  const NativeExport& e = module_->exports()[index];
  bool types_match = args.size() == e.signature.params.size();
  for (size_t i = 0; types_match && i < args.size(); ++i) {
    types_match = TypeOf(args[i]) == e.signature.params[i];
  }
  if (!types_match) {
    std::vector<std::string> got;
    for (const WasmValue& v : args) got.emplace_back(ValTypeName(TypeOf(v)));
    return Status::InvalidArgument(fmt::format("`{}` has signature {}; got ({})", name,
                                               e.signature.ToString(), fmt::join(got, ", ")));
  }
  if (running_) {
    return Status::FailedPrecondition(
        fmt::format("`{}`: a call of this instance is already running", name));
  }
  std::vector<reef_rt_value> rt_args(std::max<size_t>(args.size(), 1));
  for (size_t i = 0; i < args.size(); ++i) rt_args[i] = ToRt(args[i]);
  std::vector<reef_rt_value> rt_results(std::max<size_t>(e.signature.results.size(), 1));

  CallFrame frame{module_->entry_points().exports[index], instance_, rt_args.data(),
                  rt_results.data()};
  running_ = true;
  context_ = context;
  pending_trap_.reset();
  last_trap_.reset();
  const rt::RunOutcome outcome = rt::RunGuarded(
      [](void* p) {
        auto* f = static_cast<CallFrame*>(p);
        f->thunk(f->instance, f->args, f->results);
      },
      &frame, limits_.max_call_depth);
  running_ = false;
  context_ = nullptr;
  if (outcome.trapped()) {
    last_trap_ = MakeTrap(outcome.code, name);
    return Status::Trapped(last_trap_->ToString());
  }
  std::vector<WasmValue> results;
  results.reserve(e.signature.results.size());
  for (size_t i = 0; i < e.signature.results.size(); ++i) {
    results.push_back(FromRt(rt_results[i], e.signature.results[i]));
  }
  return results;
}

Trap NativeInstance::MakeTrap(int code, std::string_view function) {
  if (code >= rt::kHostTrapBase && pending_trap_.has_value()) {
    Trap trap = std::move(*pending_trap_);
    pending_trap_.reset();
    return trap;
  }
  const rt::RunOutcome outcome{code};
  return Trap{outcome.kind(), std::string(outcome.message()), std::string(function), 0};
}

// ---- Host imports ------------------------------------------------------------------------

uint32_t NativeInstance::CallImport(reef_rt_host* host, uint32_t index, const reef_rt_value* args,
                                    reef_rt_value* results) {
  return reinterpret_cast<HostBlock*>(host)->self->DispatchImport(index, args, results);
}

uint32_t NativeInstance::DispatchImport(uint32_t index, const reef_rt_value* args,
                                        reef_rt_value* results) {
  const NativeImport& import = module_->imports()[index];
  const std::string qualified = import.module + "." + import.name;
  auto fail = [&](TrapKind kind, std::string message) {
    pending_trap_ = Trap{kind, std::move(message), qualified, 0};
    return static_cast<uint32_t>(kind) + 1;
  };
  try {
    std::vector<WasmValue> in;
    in.reserve(import.signature.params.size());
    for (size_t i = 0; i < import.signature.params.size(); ++i) {
      in.push_back(FromRt(args[i], import.signature.params[i]));
    }
    std::vector<WasmValue> out;
    for (ValType type : import.signature.results) out.push_back(ZeroOf(type));
    HostCall call(in, out, memory(), context_);
    switch (imports_[index](call)) {
      case HostCallOutcome::kComplete:
        for (size_t i = 0; i < out.size(); ++i) {
          if (TypeOf(out[i]) != import.signature.results[i]) {
            return fail(TrapKind::kHostError, "host function wrote a result of the wrong type");
          }
          results[i] = ToRt(out[i]);
        }
        return 0;
      case HostCallOutcome::kSuspend:
        return fail(TrapKind::kHostError,
                    "host function suspended; the native tier cannot suspend yet");
      case HostCallOutcome::kTrap:
        return fail(call.trap().kind, call.trap().message);
    }
    return fail(TrapKind::kHostError, "host function returned an unknown outcome");
  } catch (const std::exception& e) {
    return fail(TrapKind::kHostError, fmt::format("host function threw: {}", e.what()));
  } catch (...) {
    return fail(TrapKind::kHostError, "host function threw");
  }
}

}  // namespace reef::wasm::native
