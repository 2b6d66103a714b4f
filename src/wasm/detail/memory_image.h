// MemoryImage: a linear memory's contents right after instantiation, kept so an instance can
// be put back to that state (Instance::Reset) whatever tier it runs on.
//
// Thread ownership: immutable once captured; share freely.
#pragma once

#include <cstddef>
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
  // captured size (memories only grow). Cost: the whole memory.
  void Restore(uint8_t* data, uint64_t size) const;

  // Restores only the chunks `marks` names: marks[i] == 1 restores bytes [i << chunk_shift,
  // (i + 1) << chunk_shift) plus the `spill` bytes after them (a write that starts in a chunk
  // may end in the next), and sets marks[i] back to 0. `marks` holds size >> chunk_shift
  // bytes. REQUIRES: as Restore. Cost: a scan of the marks plus the marked chunks.
  void RestoreMarked(uint8_t* data, uint64_t size, uint8_t* marks, uint32_t chunk_shift,
                     uint32_t spill) const;

 private:
  // Zeroes [begin, end) and copies back the parts of the runs that fall inside it.
  void RestoreRange(uint8_t* data, uint64_t begin, uint64_t end) const;

  std::vector<std::pair<uint32_t, std::vector<uint8_t>>> runs_;  // (offset, bytes)
};

}  // namespace reef::wasm::detail
