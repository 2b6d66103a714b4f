// ModuleInstance (apps/module_abi.h): one instantiated event-sourced module and the calls of its
// exports, with inputs placed through reef_alloc and a reset after any failed call.
#include <fmt/format.h>

#include "apps/module_abi.h"
#include "core/cbor.h"

namespace reef::apps {

using wasm::WasmValue;

ModuleInstance::ModuleInstance(ModuleKind kind, wasm::EngineLimits limits)
    : engine_(std::make_unique<wasm::Engine>(ModuleRegistry(kind), limits)) {
  context_.kind = kind;
}

Result<std::unique_ptr<ModuleInstance>> ModuleInstance::Create(
    ModuleKind kind, std::shared_ptr<const wasm::Module> module, std::string label,
    wasm::EngineLimits limits) {
  REEF_RETURN_IF_ERROR(CheckModuleExports(kind, *module));
  std::unique_ptr<ModuleInstance> out(new ModuleInstance(kind, limits));
  out->context_.label = std::move(label);
  REEF_ASSIGN_OR_RETURN(out->instance_, out->engine_->Instantiate(std::move(module)));
  REEF_ASSIGN_OR_RETURN(auto version, out->Call("reef_abi_version", {}, kModuleAllocBudget));
  if (version.size() != 1 || std::get<int32_t>(version[0]) != 1) {
    return Status::FailedPrecondition(
        fmt::format("{}: the module speaks ABI reef version {}; this host speaks version 1",
                    out->context_.label, version.empty() ? 0 : std::get<int32_t>(version[0])));
  }
  return out;
}

Result<std::vector<wasm::WasmValue>> ModuleInstance::Call(
    std::string_view name, std::initializer_list<const Value*> inputs, uint64_t budget) {
  auto results = CallOnce(name, inputs, budget);
  if (!results.ok()) {
    // A call that did not return normally may leave anything behind (a stack pointer never
    // restored, a half-built heap): the next call starts from the clean image.
    Status reset = instance_->Reset();
    if (!reset.ok()) return reset.WithContext(results.status().message());
  }
  return results;
}

Result<std::vector<wasm::WasmValue>> ModuleInstance::CallOnce(
    std::string_view name, std::initializer_list<const Value*> inputs, uint64_t budget) {
  context_.failure.reset();
  context_.host_error.clear();
  auto run = [this](std::string_view export_name, std::span<const WasmValue> args,
                    uint64_t limit) -> Result<std::vector<WasmValue>> {
    REEF_ASSIGN_OR_RETURN(auto invocation, instance_->Start(export_name, args, &context_));
    wasm::RunState state = invocation->Run(limit);
    if (state == wasm::RunState::kFinished) return invocation->results();
    if (state == wasm::RunState::kTrapped) {
      std::string reason = context_.failure               ? *context_.failure
                           : !context_.host_error.empty() ? context_.host_error
                                                          : invocation->trap().ToString();
      return Status(Code::kTrapped,
                    fmt::format("{}: {} failed: {}", context_.label, export_name, reason));
    }
    return Status::LimitExceeded(fmt::format("{}: {} did not finish within {} instructions",
                                             context_.label, export_name, limit));
  };
  if (name == "reef_abi_version") return run(name, {}, budget);

  std::vector<std::vector<uint8_t>> encoded;
  uint64_t total = 0;
  for (const Value* input : inputs) {
    REEF_ASSIGN_OR_RETURN(auto bytes, EncodeCbor(*input, ModuleValueLimits()));
    total += bytes.size();
    encoded.push_back(std::move(bytes));
  }
  if (total > ModuleValueLimits().max_cbor_bytes) {
    return Status::LimitExceeded(fmt::format("{}: inputs of {} bytes exceed the limit of {} bytes",
                                             context_.label, total,
                                             ModuleValueLimits().max_cbor_bytes));
  }
  const std::vector<WasmValue> len = {static_cast<int32_t>(total)};
  REEF_ASSIGN_OR_RETURN(auto allocated, run("reef_alloc", len, kModuleAllocBudget));
  uint32_t ptr = static_cast<uint32_t>(std::get<int32_t>(allocated.at(0)));
  if (ptr == 0) {
    return Status::FailedPrecondition(fmt::format(
        "{}: reef_alloc({}) returned 0: the guest is out of memory", context_.label, total));
  }
  std::vector<WasmValue> args;
  for (const auto& bytes : encoded) {
    Status written = instance_->memory().Write(ptr, bytes);
    if (!written.ok()) {
      return Status::FailedPrecondition(
          fmt::format("{}: reef_alloc returned a buffer outside memory: {}", context_.label,
                      written.message()));
    }
    args.push_back(static_cast<int32_t>(ptr));
    args.push_back(static_cast<int32_t>(bytes.size()));
    ptr += static_cast<uint32_t>(bytes.size());
  }
  return run(name, args, budget);
}

Result<Value> ModuleInstance::CallForValue(std::string_view name,
                                           std::initializer_list<const Value*> inputs,
                                           uint64_t budget) {
  REEF_ASSIGN_OR_RETURN(auto results, Call(name, inputs, budget));
  uint64_t packed = static_cast<uint64_t>(std::get<int64_t>(results.at(0)));
  auto ptr = static_cast<uint32_t>(packed);
  auto len = static_cast<uint32_t>(packed >> 32);
  auto bytes = instance_->memory().View(ptr, len);
  if (!bytes.ok()) {
    return Status::InvalidArgument(fmt::format("{}: {} returned a buffer outside memory: {}",
                                               context_.label, name, bytes.status().message()));
  }
  auto value = DecodeCbor(*bytes, ModuleValueLimits());
  if (!value.ok())
    return value.status().WithContext(fmt::format("{}: {} returned", context_.label, name));
  return std::move(*value);
}

Result<int32_t> ModuleInstance::CallForStatus(std::string_view name,
                                              std::initializer_list<const Value*> inputs,
                                              uint64_t budget) {
  REEF_ASSIGN_OR_RETURN(auto results, Call(name, inputs, budget));
  return std::get<int32_t>(results.at(0));
}
}  // namespace reef::apps
