// CRC-32C (Castagnoli), the checksum of Reef's on-disk frames (the event store's segment log,
// the image journal).
//
// Thread ownership: a pure function; any thread.
#pragma once

#include <cstddef>
#include <cstdint>

namespace reef {

// CRC-32C (RFC 3720 appendix B.4) of `size` bytes at `data`, continuing `crc` (0 to start).
// Uses the SSE4.2 instruction when the CPU has it.
uint32_t Crc32c(const void* data, size_t size, uint32_t crc = 0);

}  // namespace reef
