// MemoryImage (detail/memory_image.h).
#include "wasm/detail/memory_image.h"

#include <algorithm>
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

void MemoryImage::RestoreMarked(uint8_t* data, uint64_t size, uint8_t* marks, uint32_t chunk_shift,
                                uint32_t spill) const {
  const uint64_t chunks = size >> chunk_shift;
  uint64_t i = 0;
  while (i < chunks) {
    const void* next = std::memchr(marks + i, 1, static_cast<size_t>(chunks - i));
    if (next == nullptr) break;
    i = static_cast<uint64_t>(static_cast<const uint8_t*>(next) - marks);
    uint64_t last = i;  // neighbouring marked chunks restore as one range
    while (last + 1 < chunks && marks[last + 1] != 0) ++last;
    std::memset(marks + i, 0, static_cast<size_t>(last - i + 1));
    const uint64_t end = std::min(size, ((last + 1) << chunk_shift) + spill);
    RestoreRange(data, i << chunk_shift, end);
    i = last + 1;
  }
}

void MemoryImage::RestoreRange(uint8_t* data, uint64_t begin, uint64_t end) const {
  std::memset(data + begin, 0, static_cast<size_t>(end - begin));
  // The first run that ends past `begin`: runs are sorted and do not overlap.
  auto it = std::upper_bound(runs_.begin(), runs_.end(), begin,
                             [](uint64_t at, const auto& run) { return at < run.first; });
  if (it != runs_.begin()) --it;
  for (; it != runs_.end() && it->first < end; ++it) {
    const uint64_t run_begin = std::max<uint64_t>(begin, it->first);
    const uint64_t run_end = std::min<uint64_t>(end, it->first + it->second.size());
    if (run_begin < run_end) {
      std::memcpy(data + run_begin, it->second.data() + (run_begin - it->first),
                  static_cast<size_t>(run_end - run_begin));
    }
  }
}

}  // namespace reef::wasm::detail
