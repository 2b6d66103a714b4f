#include "core/ids.h"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <span>

namespace reef {

Sha256Digest Sha256(std::span<const std::uint8_t> bytes) {
  Sha256Digest digest{};
  unsigned int size = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), digest.data(), &size, EVP_sha256(), nullptr) != 1 ||
      size != digest.size()) {
    std::abort();
  }
  return digest;
}

std::string HexLower(std::span<const std::uint8_t> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (std::uint8_t b : bytes) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 0x0f]);
  }
  return out;
}

std::string Sha256Hex(std::span<const std::uint8_t> bytes) {
  return HexLower(Sha256(bytes));
}

namespace {

bool IsNanoIdChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

}  // namespace

bool IsValidNanoId(std::string_view text) {
  if (text.size() != kNanoIdLength) return false;
  for (char c : text) {
    if (!IsNanoIdChar(c)) return false;
  }
  return true;
}

Status ValidateNanoId(std::string_view text) {
  if (text.size() != kNanoIdLength) {
    return Status::InvalidArgument("actor ref must be " + std::to_string(kNanoIdLength) +
                                   " characters, got " + std::to_string(text.size()));
  }
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (!IsNanoIdChar(text[i])) {
      return Status::InvalidArgument("actor ref character at offset " + std::to_string(i) +
                                     " is outside the NanoID alphabet A-Za-z0-9_-");
    }
  }
  return Status::Ok();
}

namespace {

// Fills `out` from OpenSSL's CSPRNG, drawn in blocks per thread: one RAND_bytes call per 48
// ids instead of one per id (each call checks for a fork and looks up its parameters, which
// cost more than the bytes; actor calls make a reply address each). False when RAND_bytes
// fails. Nothing forks after starting threads that draw ids (compilers start with exec).
bool DrawRandom(std::span<unsigned char> out) {
  thread_local std::array<unsigned char, 1024> block{};
  thread_local std::size_t used = block.size();
  if (block.size() - used < out.size()) {
    if (RAND_bytes(block.data(), static_cast<int>(block.size())) != 1) return false;
    used = 0;
  }
  std::memcpy(out.data(), block.data() + used, out.size());
  std::memset(block.data() + used, 0, out.size());  // each byte is handed out once
  used += out.size();
  return true;
}

}  // namespace

Result<std::string> NewNanoId() {
  std::array<unsigned char, kNanoIdLength> random{};
  if (!DrawRandom(random)) {
    return Status::Unavailable("OpenSSL RAND_bytes failed: no entropy for a NanoID");
  }
  std::string id(kNanoIdLength, '\0');
  for (std::size_t i = 0; i < kNanoIdLength; ++i) id[i] = kNanoIdAlphabet[random[i] & 63];
  return id;
}

}  // namespace reef
