// UTF-8 validation (RFC 3629) for every string that crosses an edge: CBOR text strings, JSON
// strings, record keys.
//
// Thread ownership: pure functions; any thread.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace reef {

// Byte offset of the first byte of the first ill-formed UTF-8 sequence in `text`, or nullopt
// when all of `text` is well-formed. Ill-formed: overlong forms, surrogates (U+D800..U+DFFF),
// code points above U+10FFFF, stray continuation bytes, truncated sequences.
std::optional<std::size_t> FindInvalidUtf8(std::string_view text);

// True when all of `text` is well-formed UTF-8 (see FindInvalidUtf8).
inline bool IsValidUtf8(std::string_view text) {
  return !FindInvalidUtf8(text).has_value();
}

}  // namespace reef
