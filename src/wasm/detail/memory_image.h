// MemoryImage: a linear memory's contents right after instantiation, kept so an instance can
// be put back to that state (Instance::Reset) whatever tier it runs on.
//
// Thread ownership: immutable once captured; share freely.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace reef::wasm::detail {

class MemoryImage {
 public:
  // Records the non-zero runs of `size` bytes at `data` (data segments, mostly): gaps of
  // under 64 zero bytes stay inside a run, so a mostly-zero memory costs little to keep.
  static MemoryImage Capture(const uint8_t* data, uint64_t size);

  // Zeroes `size` bytes at `data` and copies the runs back. REQUIRES: `size` is at least the
  // captured size (memories only grow).
  void Restore(uint8_t* data, uint64_t size) const;

 private:
  std::vector<std::pair<uint32_t, std::vector<uint8_t>>> runs_;  // (offset, bytes)
};

}  // namespace reef::wasm::detail
