// Frames: the unit Reef's append-only files (the event store's segment log, the image journal)
// write with one write and trust only when both checksums match. Little-endian throughout.
//
//   frame header = magic u32 | header CRC u32 (CRC-32C of bytes 8..31) | first u64 |
//                  count u32 | body bytes u32 | body CRC u32 (CRC-32C of the body) | zero u32
//
// `first` and `count` are the file's own numbering (the event store: the first event's
// position and the number of events; the journal: the first record's sequence number and
// the number of records). Each file kind has its own magic.
//
// Thread ownership: pure functions; any thread.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace reef {

static_assert(std::endian::native == std::endian::little, "frames are little-endian");

inline constexpr size_t kFrameHeaderBytes = 32;

struct FrameHeader {
  uint64_t first = 0;
  uint32_t count = 0;
  uint32_t body_bytes = 0;
  uint32_t body_crc = 0;
};

// Appends `value`'s bytes (little-endian) to `out`.
template <typename T>
void PutLe(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}

// Reads a T from the (little-endian) bytes at `p`.
template <typename T>
T GetLe(const uint8_t* p) {
  T value;
  std::memcpy(&value, p, sizeof(T));
  return value;
}

// Frame bodies of length-prefixed records (the image journal and its snapshots): each record is
// a u32 length and its bytes.
// Appends `record` to `body`.
void AppendRecord(std::string& body, std::string_view record);
// Splits `body` into exactly `count` records, appended to `records` (views into `body`).
// Returns "" or what is wrong ("a record runs past its frame", "a frame holds bytes after its
// last record"); `records` may then hold some of them.
std::string SplitRecords(std::string_view body, uint32_t count,
                         std::vector<std::string_view>* records);

// The 32 header bytes of `header` under `magic`, CRC included.
std::string EncodeFrameHeader(uint32_t magic, const FrameHeader& header);
// Parses 32 bytes at `bytes`; nullopt when the magic is not `magic` or the header CRC fails.
std::optional<FrameHeader> DecodeFrameHeader(uint32_t magic, const uint8_t* bytes);

}  // namespace reef
