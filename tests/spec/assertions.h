// Assertions: how what an engine tier returned is compared with what a spec command expects.
//
// Results compare by bits (NaN patterns by the spec's rules); traps compare by Reef's
// TrapKind, mapped from the spec's expected message by one table, never by message text.
//
// Thread ownership: plain functions; any thread.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "spec/wast_script.h"
#include "wasm/trap.h"
#include "wasm/types.h"

namespace reef::spec {

// True when `actual` is `expected`: same type, and the same bits, or a NaN of the pattern.
// nan:canonical is a NaN whose payload is exactly the quiet bit (either sign);
// nan:arithmetic is a NaN with the quiet bit set (WebAssembly core spec, 4.3.3 "NaN
// propagation"). REQUIRES: expected.is_number().
bool MatchesValue(const ScriptValue& expected, const wasm::WasmValue& actual);

// "" when `actual` matches `expected` value by value, else what differs.
std::string CompareResults(std::span<const ScriptValue> expected,
                           std::span<const wasm::WasmValue> actual);

// "i32:0x00000005", "f64:0x7ff8000000000000": a value by its bits (NaN payloads included).
std::string CanonicalValue(const wasm::WasmValue& value);
// "results i32:0x00000001 f32:0x3f800000" ("results" alone when there are none).
std::string CanonicalResults(std::span<const wasm::WasmValue> values);

// The trap kinds that satisfy a spec trap message such as "integer divide by zero" or "call
// stack exhausted" (a prefix match, so "uninitialized element 2" counts as "uninitialized
// element"). Empty when the table has no row for the message.
std::span<const wasm::TrapKind> TrapKindsFor(std::string_view spec_message);

// The trap kind of a failed instantiation (Engine::Instantiate's Trapped error: a data or
// element segment out of bounds, or a trapping start function); nullopt for other errors.
std::optional<wasm::TrapKind> InstantiationTrapKind(const Status& status);

}  // namespace reef::spec
