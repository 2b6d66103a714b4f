// CRC-32C (Castagnoli, RFC 3720 appendix B.4): a table, and the SSE4.2 instruction when the
// CPU has it.
#include "core/crc32c.h"

#include <array>
#include <cstring>

namespace reef {

namespace {

constexpr uint32_t kCastagnoliReflected = 0x82f63b78;

constexpr std::array<uint32_t, 256> MakeCrcTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t crc = i;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1) ? kCastagnoliReflected : 0);
    table[i] = crc;
  }
  return table;
}

constexpr std::array<uint32_t, 256> kCrcTable = MakeCrcTable();

uint32_t Crc32cTable(const uint8_t* p, size_t size, uint32_t crc) {
  for (size_t i = 0; i < size; ++i) crc = kCrcTable[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return crc;
}

__attribute__((target("sse4.2"))) uint32_t Crc32cHardware(const uint8_t* p, size_t size,
                                                          uint32_t crc) {
  uint64_t wide = crc;
  while (size >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    wide = __builtin_ia32_crc32di(wide, word);
    p += 8;
    size -= 8;
  }
  crc = static_cast<uint32_t>(wide);
  while (size > 0) {
    crc = __builtin_ia32_crc32qi(crc, *p);
    ++p;
    --size;
  }
  return crc;
}

const bool kHasSse42 = __builtin_cpu_supports("sse4.2");

}  // namespace

uint32_t Crc32c(const void* data, size_t size, uint32_t crc) {
  const auto* p = static_cast<const uint8_t*>(data);
  crc = ~crc;
  crc = kHasSse42 ? Crc32cHardware(p, size, crc) : Crc32cTable(p, size, crc);
  return ~crc;
}

}  // namespace reef
