#include "wasm/types.h"

#include <fmt/format.h>

namespace reef::wasm {

std::string_view ValTypeName(ValType type) {
  switch (type) {
    case ValType::kI32:
      return "i32";
    case ValType::kI64:
      return "i64";
    case ValType::kF32:
      return "f32";
    case ValType::kF64:
      return "f64";
    case ValType::kV128:
      return "v128";
    case ValType::kFuncRef:
      return "funcref";
    case ValType::kExternRef:
      return "externref";
  }
  return "?";
}

bool IsNumberType(ValType type) {
  return type == ValType::kI32 || type == ValType::kI64 || type == ValType::kF32 ||
         type == ValType::kF64;
}

ValType TypeOf(const WasmValue& value) {
  static constexpr ValType kTypes[] = {ValType::kI32, ValType::kI64, ValType::kF32, ValType::kF64};
  return kTypes[value.index()];
}

std::string FormatValue(const WasmValue& value) {
  return std::visit(
      [](auto v) { return fmt::format("{}:{}", ValTypeName(TypeOf(WasmValue(v))), v); }, value);
}

namespace {
std::string JoinTypes(const std::vector<ValType>& types) {
  std::string out = "(";
  for (size_t i = 0; i < types.size(); ++i) {
    if (i > 0) out += ", ";
    out += ValTypeName(types[i]);
  }
  return out + ")";
}
}  // namespace

std::string FuncSignature::ToString() const {
  return JoinTypes(params) + " -> " + JoinTypes(results);
}

std::string_view ExternKindName(ExternKind kind) {
  switch (kind) {
    case ExternKind::kFunc:
      return "func";
    case ExternKind::kTable:
      return "table";
    case ExternKind::kMemory:
      return "memory";
    case ExternKind::kGlobal:
      return "global";
    case ExternKind::kTag:
      return "tag";
  }
  return "?";
}

}  // namespace reef::wasm
