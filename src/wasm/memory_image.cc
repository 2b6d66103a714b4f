// MemoryImage (detail/memory_image.h).
#include "wasm/detail/memory_image.h"

#include <cstring>

namespace reef::wasm::detail {

MemoryImage MemoryImage::Capture(const uint8_t* data, uint64_t size) {
  MemoryImage image;
  uint64_t i = 0;
  while (i < size) {
    while (i < size && data[i] == 0) ++i;
    if (i == size) break;
    const uint64_t start = i;
    uint64_t zeros = 0;
    for (; i < size && zeros < 64; ++i) zeros = data[i] == 0 ? zeros + 1 : 0;
    const uint64_t end = i - zeros;
    image.runs_.emplace_back(static_cast<uint32_t>(start),
                             std::vector<uint8_t>(data + start, data + end));
  }
  return image;
}

void MemoryImage::Restore(uint8_t* data, uint64_t size) const {
  if (size > 0) std::memset(data, 0, size);
  for (const auto& [offset, bytes] : runs_) {
    std::memcpy(data + offset, bytes.data(), bytes.size());
  }
}

}  // namespace reef::wasm::detail
