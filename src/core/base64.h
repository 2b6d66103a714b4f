// Base64 (RFC 4648, standard alphabet, padded): how byte strings travel inside JSON (events'
// data_base64, a program's modules, wasm working sources).
//
// Thread ownership: pure functions; any thread.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"

namespace reef {

// The padded standard base64 of `bytes` (4 characters per 3 bytes, rounded up).
std::string Base64Encode(std::string_view bytes);

// Decodes padded standard base64, canonical form only (RFC 4648 section 3.5: the bits the
// padding leaves over are zero), so each byte string has exactly one encoding.
// Errors: InvalidArgument naming what is wrong ("is not padded base64: ...", "is not base64:
// character C at offset N", "is not canonical base64: ..."), for the caller to prefix with the
// field's name.
Result<std::string> Base64Decode(std::string_view text);

}  // namespace reef
