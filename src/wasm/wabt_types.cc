#include "wasm/detail/wabt_types.h"

namespace reef::wasm::detail {

ValType FromWabtType(wabt::Type type) {
  switch (type) {
    case wabt::Type::I32:
      return ValType::kI32;
    case wabt::Type::I64:
      return ValType::kI64;
    case wabt::Type::F32:
      return ValType::kF32;
    case wabt::Type::F64:
      return ValType::kF64;
    case wabt::Type::V128:
      return ValType::kV128;
    case wabt::Type::FuncRef:
      return ValType::kFuncRef;
    default:
      return ValType::kExternRef;
  }
}

wabt::Type ToWabtType(ValType type) {
  switch (type) {
    case ValType::kI32:
      return wabt::Type::I32;
    case ValType::kI64:
      return wabt::Type::I64;
    case ValType::kF32:
      return wabt::Type::F32;
    case ValType::kF64:
      return wabt::Type::F64;
    case ValType::kV128:
      return wabt::Type::V128;
    case ValType::kFuncRef:
      return wabt::Type::FuncRef;
    case ValType::kExternRef:
      return wabt::Type::ExternRef;
  }
  return wabt::Type::I32;
}

}  // namespace reef::wasm::detail
