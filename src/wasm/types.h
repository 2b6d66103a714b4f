// Plain data types of the engine interface: wasm value types, values, function signatures.
//
// Thread ownership: plain values; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace reef::wasm {

// The wasm number types the engine interface passes across (v128 and reference types stay
// inside the guest: an export or import using them cannot be called from the host).
enum class ValType : uint8_t { kI32, kI64, kF32, kF64, kV128, kFuncRef, kExternRef };

// "i32", "i64", "f32", "f64", "v128", "funcref", "externref".
std::string_view ValTypeName(ValType type);
// True for i32, i64, f32 and f64: the types a host can pass or receive.
bool IsNumberType(ValType type);

// One wasm number. The alternative's C++ type is the wasm type (int32_t = i32, ...).
using WasmValue = std::variant<int32_t, int64_t, float, double>;

ValType TypeOf(const WasmValue& value);
// "i32:5", "f64:0.5"; floats print with enough digits to round-trip.
std::string FormatValue(const WasmValue& value);

struct FuncSignature {
  std::vector<ValType> params;
  std::vector<ValType> results;

  friend bool operator==(const FuncSignature&, const FuncSignature&) = default;
  // "(i32, i32) -> i64"; "() -> ()" when both are empty.
  std::string ToString() const;
};

enum class ExternKind : uint8_t { kFunc, kTable, kMemory, kGlobal, kTag };
// "func", "table", "memory", "global", "tag".
std::string_view ExternKindName(ExternKind kind);

}  // namespace reef::wasm
