// Identities: SHA-256 content hashes (modules, implementations) and NanoIDs (actor refs).
//
// SHA-256 is FIPS 180-4 through OpenSSL 3's EVP interface; NanoIDs are 21 characters of the
// URL-safe alphabet A-Za-z0-9_- drawn from OpenSSL's CSPRNG (126 random bits).
//
// Thread ownership: pure functions; any thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "core/status.h"

namespace reef {

// A SHA-256 digest: 32 raw bytes.
using Sha256Digest = std::array<std::uint8_t, 32>;

// SHA-256 of `bytes`. An OpenSSL failure (only possible when it cannot allocate) terminates
// the process, as allocation failure does everywhere else.
Sha256Digest Sha256(std::span<const std::uint8_t> bytes);

// Lowercase hex of `bytes`: two characters per byte, e.g. {0xab, 0x01} -> "ab01".
std::string HexLower(std::span<const std::uint8_t> bytes);

// Lowercase hex of the SHA-256 of `bytes`: 64 characters.
std::string Sha256Hex(std::span<const std::uint8_t> bytes);

// Length of a NanoID in characters (= bytes).
inline constexpr std::size_t kNanoIdLength = 21;

// The 64-character URL-safe NanoID alphabet.
inline constexpr std::string_view kNanoIdAlphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";

// True when `text` is exactly kNanoIdLength characters, each from kNanoIdAlphabet.
bool IsValidNanoId(std::string_view text);

// OK when IsValidNanoId(text); otherwise InvalidArgument saying which rule `text` breaks
// (length or alphabet, with the offending offset).
Status ValidateNanoId(std::string_view text);

// A fresh random NanoID: kNanoIdLength characters, each uniform over kNanoIdAlphabet
// (64 symbols, so the low 6 bits of a random byte are unbiased).
// Errors: Unavailable when OpenSSL's RAND_bytes fails (entropy source unavailable).
Result<std::string> NewNanoId();

}  // namespace reef
