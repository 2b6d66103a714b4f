// ScanText: the pre-pass every .wat text goes through before wabt's text parser sees it, the
// text counterpart of ScanBinary (wasm/binary_scan.h).
//
// wabt's parser builds its IR for the whole text before anything can be counted, and the IR
// costs far more than the text: an empty `(func)` (7 bytes) takes about 540 bytes, a plain
// instruction about 80-130 (measured with wabt 1.0.32, docs/engine.md). The scan walks the
// text once without recursion and refuses it, with the line and column of the first offence:
//   - nesting deeper than max_text_nesting (parentheses, plus the plain block, loop, if and
//     try instructions and their `end`): LimitExceeded;
//   - more module fields of a kind than ModuleLimits allows (func, type, import, export,
//     global, table, elem, data; inline exports and imports count as fields of their kind):
//     LimitExceeded naming the limit;
//   - an estimated parse memory past load_memory_factor * text bytes + load_memory_allowance:
//     LimitExceeded (the estimate charges each module field, each other parenthesized form,
//     each token and each string byte at the cost measured for the dearest construct of its
//     kind);
//   - a byte outside ASCII beyond strings and comments, or a `(@` annotation, which wabt
//     1.0.32's lexer mishandles (found by fuzz/wat_fuzz.cc): InvalidArgument.
// Strings and comments are skipped (block comments nest).
//
// Thread ownership: a pure function; any thread.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/status.h"
#include "wasm/module_limits.h"

namespace reef::wasm {

// What a text declares, as counted by ScanText.
struct TextShape {
  uint64_t fields = 0;        // module fields: forms directly inside (module ...), and
                              // inline (export ...) and (import ...) forms
  uint64_t forms = 0;         // every other parenthesized form
  uint64_t tokens = 0;        // keywords, names, numbers
  uint64_t string_bytes = 0;  // bytes inside string literals
  uint64_t parse_bytes_estimate = 0;
};

// Costs of the estimate, in bytes of parser memory (measured per construct, docs/engine.md).
inline constexpr uint64_t kTextFieldCost = 700;
inline constexpr uint64_t kTextFormCost = 50;
inline constexpr uint64_t kTextTokenCost = 100;
inline constexpr uint64_t kTextStringByteCost = 2;

// Errors: as listed above, each naming "<name>:<line>:<column>" (or "<name>" for the memory
// estimate) and the ModuleLimits field.
Result<TextShape> ScanText(std::string_view text, std::string_view name,
                           const ModuleLimits& limits);

}  // namespace reef::wasm
