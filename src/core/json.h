// JSON codec for the network edge (RFC 8259 text through nlohmann::json), with two markers
// for what plain JSON cannot say (DESIGN.md "Data model"):
//
//   actor ref                 <-> {"$actor": "<21-character NanoID>"}
//   record whose only key is  <-> {"$record": {...}}  (the inner object is taken literally at
//   "$actor" or "$record"          its own level; values nested inside follow the normal rules)
//
// Numbers follow one rule at every JSON edge (HTTP bodies, protocol frames, command input,
// event data, CLI and REPL values; CheckJsonInteger/CheckJsonFloat): an integer literal (no
// fraction, no exponent) is an int and must fit int64; any literal with a fraction or exponent
// is a float and must be a finite float64. A number that would change on the way in beyond
// the float64 rounding every decimal literal gets (an integer past int64 turned into a double,
// an overflow, or a nonzero literal that underflows to 0) is refused, never stored changed. Floats
// with an integral value are written with a fraction
// ("1.0") so they stay floats when read back.
//
// Thread ownership: pure functions; any thread.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/limits.h"
#include "core/status.h"
#include "core/value.h"

namespace reef {

// The number rule above for an integer literal that nlohmann read as unsigned `value`.
// Errors: InvalidArgument naming the literal and the rule.
Status CheckJsonInteger(uint64_t value);
// The number rule above for a literal that nlohmann read as a double (`value`), `literal`
// being its text: refused when it has no fraction or exponent (an integer beyond 64 bits),
// is not finite, or underflows (a nonzero literal read as 0).
// Errors: InvalidArgument naming the literal and the rule.
Status CheckJsonFloat(double value, std::string_view literal);
// nlohmann's exception id for a number literal past float64 ("number overflow parsing ..."),
// which its parser reports as a parse error before CheckJsonFloat could see the number.
inline constexpr int kJsonNumberOverflow = 406;

// Parses `text` (one JSON document, UTF-8, no comments, nothing but whitespace after it) into
// a Value. `text` is only read during the call.
// Errors: LimitExceeded when `text` is longer than max_json_bytes or the value breaks
// max_depth, max_nodes or max_string_bytes (depth and node bounds are enforced while parsing);
// InvalidArgument for malformed JSON or ill-formed UTF-8 (naming the byte offset), duplicate
// object keys, integers outside int64, a "$actor" marker without a valid NanoID string, a
// "$record" marker whose value is not an object (naming the JSON Pointer of the offender).
Result<Value> ValueFromJson(std::string_view text, const ValueLimits& limits);
// Same as ValueFromJson(std::string_view, ...); these overloads keep a string argument from
// converting to a one-string nlohmann::json document.
inline Result<Value> ValueFromJson(const std::string& text, const ValueLimits& limits) {
  return ValueFromJson(std::string_view(text), limits);
}
inline Result<Value> ValueFromJson(const char* text, const ValueLimits& limits) {
  return ValueFromJson(std::string_view(text), limits);
}

// As ValueFromJson(text), for an already parsed document. Its numbers are taken by their
// stored type: number_integer / number_unsigned -> int (must fit int64), number_float ->
// float (must be finite). Strings and keys must be UTF-8; binary values are rejected.
// max_json_bytes does not apply.
Result<Value> ValueFromJson(const nlohmann::json& json, const ValueLimits& limits);

// The JSON form of `value`, marker-escaped as described above.
// REQUIRES: floats finite and strings UTF-8 (Value's own REQUIREs; always true for values
// from the decoders). Use ValueToJsonText to have both checked.
nlohmann::json ValueToJson(const Value& value);

// The compact JSON text of `value` (ValueToJson, serialized), in UTF-8.
// Errors: LimitExceeded when `value` breaks max_depth, max_nodes or max_string_bytes, or the
// text would exceed max_json_bytes; InvalidArgument for a non-finite float or a string or key
// that is not UTF-8.
Result<std::string> ValueToJsonText(const Value& value, const ValueLimits& limits);

}  // namespace reef
