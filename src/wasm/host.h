// Host imports: the registry of host functions a guest may import (the ABI manifest).
//
// A HostRegistry is a named, versioned table of host functions (ABI `reef` v1 is one such
// table, see docs/abi.md). Instantiation resolves every import of a module against it and
// fails with one error naming every unknown import and every signature mismatch.
//
// Thread ownership: build the registry on one thread, then treat it as immutable; a const
// registry may be shared by engines on any thread. Handlers run on the reactor thread that
// runs the invocation.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "wasm/trap.h"
#include "wasm/types.h"

namespace reef::wasm {

class GuestMemory;
class Invocation;

// What a host function handler decided.
enum class HostCallOutcome : uint8_t {
  kComplete,  // results are written; the guest continues in the same slice
  kSuspend,   // the invocation suspends (RunState::kSuspended) until
              // Invocation::CompleteHostCall supplies the results
  kTrap,      // the invocation traps with HostCall::SetTrap's kind and message
};

// One call of a host function, as seen by its handler. Valid only during the handler call.
class HostCall {
 public:
  HostCall(std::span<const WasmValue> args, std::span<WasmValue> results, GuestMemory& memory,
           void* context)
      : args_(args), results_(results), memory_(memory), context_(context) {}

  // Arguments, typed as the import's signature declares.
  std::span<const WasmValue> args() const { return args_; }
  int32_t i32(size_t index) const { return std::get<int32_t>(args_[index]); }
  int64_t i64(size_t index) const { return std::get<int64_t>(args_[index]); }
  // Results to fill, typed as declared (they start zeroed of the right type).
  std::span<WasmValue> results() { return results_; }
  // The calling instance's memory 0; every access is bounds-checked.
  GuestMemory& memory() { return memory_; }
  // The pointer passed to Instance::Start for this invocation (host-owned, may be null).
  void* context() const { return context_; }

  // Returns kTrap after recording why; use as `return call.Fail(kind, "why")`.
  HostCallOutcome Fail(TrapKind kind, std::string message);
  const Trap& trap() const { return trap_; }

 private:
  std::span<const WasmValue> args_;
  std::span<WasmValue> results_;
  GuestMemory& memory_;
  void* context_;
  Trap trap_;
};

using HostHandler = std::function<HostCallOutcome(HostCall&)>;

// One row of the manifest.
struct HostFunction {
  std::string module;  // import module name, e.g. "reef"
  std::string name;    // import name, e.g. "send"
  FuncSignature signature;
  HostHandler handler;
  std::string summary;  // one line for `reef wasm inspect` and docs
};

class HostRegistry {
 public:
  // `abi_name` and `abi_version` identify the manifest, e.g. "reef", 1.
  HostRegistry(std::string abi_name, uint32_t abi_version);

  // Adds a row. Errors: AlreadyExists if module.name is already registered;
  // InvalidArgument if the signature uses a non-number type.
  Status Add(HostFunction function);

  // nullptr when module.name is not registered.
  const HostFunction* Find(std::string_view module, std::string_view name) const;
  const std::vector<HostFunction>& functions() const { return functions_; }
  const std::string& abi_name() const { return abi_name_; }
  uint32_t abi_version() const { return abi_version_; }

  // "reef/1;reef.fail(i32, i32) -> ();..." with rows sorted: changes whenever a row's name
  // or signature changes, so it is part of every implementation identity.
  std::string Fingerprint() const;

 private:
  std::string abi_name_;
  uint32_t abi_version_;
  std::vector<HostFunction> functions_;
};

}  // namespace reef::wasm
