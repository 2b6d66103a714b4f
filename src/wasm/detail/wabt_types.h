// Conversions between wabt's value types (wabt::Type, which the interpreter calls
// interp::ValueType) and the engine interface's ValType.
//
// Thread ownership: stateless; any thread.
#pragma once

#include "wabt/type.h"
#include "wasm/types.h"

namespace reef::wasm::detail {

// ExternRef for any type the interface has no name for.
ValType FromWabtType(wabt::Type type);
wabt::Type ToWabtType(ValType type);

}  // namespace reef::wasm::detail
