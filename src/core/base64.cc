#include "core/base64.h"

#include <fmt/format.h>
#include <openssl/evp.h>

namespace reef {

std::string Base64Encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(bytes.data()),
                          static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

Result<std::string> Base64Decode(std::string_view text) {
  if (text.size() % 4 != 0) {
    return Status::InvalidArgument(
        fmt::format("is not padded base64: its length {} is not a multiple of 4", text.size()));
  }
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    bool alphabet = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                    c == '+' || c == '/';
    bool padding = c == '=' && i + 2 >= text.size() && (i + 1 == text.size() || text[i + 1] == '=');
    if (!alphabet && !padding) {
      return Status::InvalidArgument(
          fmt::format("is not base64: character {} at offset {}", static_cast<int>(c), i));
    }
  }
  std::string out(3 * (text.size() / 4), '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(text.data()),
                          static_cast<int>(text.size()));
  if (n < 0) return Status::InvalidArgument("is not valid base64");
  size_t pad = text.ends_with("==") ? 2 : text.ends_with("=") ? 1 : 0;
  // Canonical form only (RFC 4648 section 3.5): the bits the padding leaves over are zero.
  if (pad > 0) {
    char last = text[text.size() - pad - 1];
    int value = last >= 'A' && last <= 'Z'   ? last - 'A'
                : last >= 'a' && last <= 'z' ? last - 'a' + 26
                : last >= '0' && last <= '9' ? last - '0' + 52
                : last == '+'                ? 62
                                             : 63;
    if ((value & (pad == 2 ? 0x0f : 0x03)) != 0) {
      return Status::InvalidArgument(
          "is not canonical base64: the bits before the padding must be zero");
    }
  }
  out.resize(static_cast<size_t>(n) - pad);
  return out;
}

}  // namespace reef
