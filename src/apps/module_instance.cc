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
  Status started = StartCall(name, inputs, budget);
  if (!started.ok()) return started;
  auto results = RunSlice(budget);  // the whole budget: it ends, unless an import suspends it
  if (!results) {
    pending_.reset();
    Status reset = instance_->Reset();
    return Status::FailedPrecondition(
        fmt::format("{}: {} waits in a host import, which a call run to its end cannot serve{}",
                    context_.label, name, reset.ok() ? "" : "; " + reset.message()));
  }
  return std::move(*results);
}

Status ModuleInstance::StartCall(std::string_view name, std::initializer_list<const Value*> inputs,
                                 uint64_t budget) {
  pending_.reset();
  Status started = StartOnce(name, inputs, budget);
  if (!started.ok()) {
    pending_.reset();
    // A call that did not return normally may leave anything behind (a stack pointer never
    // restored, a half-built heap): the next call starts from the clean image.
    Status reset = instance_->Reset();
    if (!reset.ok()) return reset.WithContext(started.message());
  }
  return started;
}

std::optional<Result<std::vector<wasm::WasmValue>>> ModuleInstance::RunSlice(uint64_t slice) {
  if (!pending_) {
    return Result<std::vector<WasmValue>>(
        Status::FailedPrecondition(fmt::format("{}: no call is in progress", context_.label)));
  }
  Pending& call = *pending_;
  if (call.suspended) {
    return Result<std::vector<WasmValue>>(Status::FailedPrecondition(fmt::format(
        "{}: {} waits in a host import; complete it first", context_.label, call.name)));
  }
  const uint64_t left = call.budget - std::min(call.budget, call.charged);
  wasm::RunState state = call.invocation->Run(std::max<uint64_t>(1, std::min(slice, left)));
  Result<std::vector<WasmValue>> out = Status::Internal("unset");
  if (state == wasm::RunState::kFinished) {
    last_call_instructions_ = call.invocation->instructions();
    out = call.invocation->results();
  } else if (state == wasm::RunState::kTrapped) {
    std::string reason = context_.failure               ? *context_.failure
                         : !context_.host_error.empty() ? context_.host_error
                                                        : call.invocation->trap().ToString();
    out =
        Status(Code::kTrapped, fmt::format("{}: {} failed: {}", context_.label, call.name, reason));
  } else if (state == wasm::RunState::kSuspended) {
    call.suspended = true;
    call.charged = call.invocation->instructions();
    return std::nullopt;  // the host completes the import (CompleteSql), then runs on
  } else {
    call.charged = call.invocation->instructions();
    if (call.charged < call.budget) return std::nullopt;  // more slices to run
    out = Status::LimitExceeded(fmt::format("{}: {} did not finish within {} instructions",
                                            context_.label, call.name, call.budget));
  }
  pending_.reset();
  if (!out.ok()) {
    Status reset = instance_->Reset();
    if (!reset.ok())
      return Result<std::vector<WasmValue>>(reset.WithContext(out.status().message()));
  }
  return out;
}

bool ModuleInstance::suspended() const {
  return pending_ && pending_->suspended;
}

Status ModuleInstance::CompleteSql(const SqlRequest& request, const SqlOutcome& outcome) {
  if (!suspended()) {
    return Status::FailedPrecondition(fmt::format("{}: no call waits for SQL", context_.label));
  }
  Pending& call = *pending_;
  call.suspended = false;
  if (!outcome.error.empty()) {
    context_.host_error = outcome.error;
    return call.invocation->FailHostCall(wasm::TrapKind::kHostError, outcome.error);
  }
  if (!request.query) {
    const std::vector<WasmValue> results = {outcome.changes};
    return call.invocation->CompleteHostCall(results);
  }
  if (outcome.rows.size() <= request.out_cap) {
    Status written = instance_->memory().Write(request.out_ptr, outcome.rows);
    if (!written.ok()) {
      return call.invocation->FailHostCall(wasm::TrapKind::kHostBounds, written.message());
    }
  }
  const std::vector<WasmValue> results = {static_cast<int32_t>(outcome.rows.size())};
  return call.invocation->CompleteHostCall(results);
}

Status ModuleInstance::CompleteAppend(const Result<uint64_t>& appended) {
  if (!suspended()) {
    return Status::FailedPrecondition(
        fmt::format("{}: no call waits for an append", context_.label));
  }
  Pending& call = *pending_;
  call.suspended = false;
  if (!appended.ok()) {
    context_.host_error = "append: " + appended.status().message();
    return call.invocation->FailHostCall(wasm::TrapKind::kHostError, context_.host_error);
  }
  const std::vector<WasmValue> results = {static_cast<int64_t>(*appended)};
  return call.invocation->CompleteHostCall(results);
}

Status ModuleInstance::StartOnce(std::string_view name, std::initializer_list<const Value*> inputs,
                                 uint64_t budget) {
  context_.failure.reset();
  context_.host_error.clear();
  auto start = [this](std::string_view export_name, std::span<const WasmValue> args,
                      uint64_t limit) -> Status {
    REEF_ASSIGN_OR_RETURN(auto invocation, instance_->Start(export_name, args, &context_));
    pending_ = std::make_unique<Pending>(
        Pending{std::string(export_name), std::move(invocation), limit, 0});
    return Status::Ok();
  };
  if (name == "reef_abi_version") return start(name, {}, budget);

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
  REEF_RETURN_IF_ERROR(start("reef_alloc", len, kModuleAllocBudget));
  auto allocated = RunSlice(kModuleAllocBudget);
  if (!allocated)
    return Status::Internal(fmt::format("{}: reef_alloc did not end", context_.label));
  if (!allocated->ok()) return allocated->status();
  uint32_t ptr = static_cast<uint32_t>(std::get<int32_t>(allocated->value().at(0)));
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
  return start(name, args, budget);
}

Result<Value> ModuleInstance::CallForValue(std::string_view name,
                                           std::initializer_list<const Value*> inputs,
                                           uint64_t budget) {
  REEF_ASSIGN_OR_RETURN(auto results, Call(name, inputs, budget));
  return ValueOf(name, results);
}

Result<Value> ModuleInstance::ValueOf(std::string_view name,
                                      const std::vector<wasm::WasmValue>& results) {
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
