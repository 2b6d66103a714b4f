#include "wasm/host.h"

#include <fmt/format.h>

#include <algorithm>

namespace reef::wasm {

HostCallOutcome HostCall::Fail(TrapKind kind, std::string message) {
  trap_.kind = kind;
  trap_.message = std::move(message);
  return HostCallOutcome::kTrap;
}

HostRegistry::HostRegistry(std::string abi_name, uint32_t abi_version)
    : abi_name_(std::move(abi_name)), abi_version_(abi_version) {}

Status HostRegistry::Add(HostFunction function) {
  if (Find(function.module, function.name) != nullptr) {
    return Status::AlreadyExists(
        fmt::format("host function {}.{} is already registered", function.module, function.name));
  }
  for (const auto* types : {&function.signature.params, &function.signature.results}) {
    for (ValType t : *types) {
      if (!IsNumberType(t)) {
        return Status::InvalidArgument(
            fmt::format("host function {}.{}: type {} cannot cross "
                        "the host boundary (use i32/i64/f32/f64)",
                        function.module, function.name, ValTypeName(t)));
      }
    }
  }
  functions_.push_back(std::move(function));
  return Status::Ok();
}

const HostFunction* HostRegistry::Find(std::string_view module, std::string_view name) const {
  for (const HostFunction& f : functions_) {
    if (f.module == module && f.name == name) return &f;
  }
  return nullptr;
}

std::string HostRegistry::Fingerprint() const {
  std::vector<std::string> rows;
  for (const HostFunction& f : functions_) {
    rows.push_back(fmt::format("{}.{}{}", f.module, f.name, f.signature.ToString()));
  }
  std::sort(rows.begin(), rows.end());
  std::string out = fmt::format("{}/{}", abi_name_, abi_version_);
  for (const std::string& row : rows) out += ";" + row;
  return out;
}

}  // namespace reef::wasm
