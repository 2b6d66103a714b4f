// The on-disk format of the embedded event store's segment log (docs/operations.md "Event
// store"): files, frames and event records, little-endian throughout.
//
//   segment file  = file header (32 bytes) + frames
//   file header   = "REEF-EVENTS-LOG1" (16 bytes) + first position (u64) + zero (u64)
//   frame         = one append: frame header (32 bytes) + its event records
//   frame header  = magic u32 | header CRC u32 (CRC-32C of bytes 8..31) | first position u64 |
//                   event count u32 | body bytes u32 | body CRC u32 (CRC-32C of the records) |
//                   zero u32
//   event record  = record bytes u32 (after this field) | type length u16 | tag count u16 |
//                   data length u32 | correlation, causation, idempotency key and user
//                   metadata lengths u16 each | id (16 bytes) | timestamp ms i64 | type | tags
//                   (u16 length + bytes, each) | data | correlation | causation | idempotency
//                   key | user metadata (logs written before user metadata have length 0)
//
// A frame is written with one write and counts only when both CRCs match, so an append is on
// disk whole or not at all.
//
// Thread ownership: pure functions; any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/crc32c.h"
#include "core/frame.h"
#include "core/status.h"
#include "events/event.h"
#include "events/event_store.h"

namespace reef::events::detail {

inline constexpr std::string_view kFileMagic = "REEF-EVENTS-LOG1";
inline constexpr size_t kFileHeaderBytes = 32;
inline constexpr uint32_t kFrameMagic = 0x52454546;  // "FEER" in memory order
using reef::kFrameHeaderBytes;                       // core/frame.h
inline constexpr size_t kRecordFixedBytes = 44;      // = kEventOverheadBytes

using reef::Crc32c;  // core/crc32c.h

struct FrameHeader {
  Position first_position = 0;
  uint32_t event_count = 0;
  uint32_t body_bytes = 0;
  uint32_t body_crc = 0;
};

// The 32 header bytes for `header`, CRC included.
std::string EncodeFrameHeader(const FrameHeader& header);
// Parses 32 bytes at `bytes`; nullopt when the magic or the header CRC does not match.
std::optional<FrameHeader> DecodeFrameHeader(const uint8_t* bytes);

// Appends the record of `event` (already normalized) to `out`.
void EncodeRecord(const Event& event, std::string& out);

// Decodes the record at `bytes` (at most `available` bytes) into `view` (its strings point
// into `bytes`); returns the record's total size in bytes, or 0 when it is malformed.
size_t DecodeRecord(const uint8_t* bytes, size_t available, EventView& view);

// The 32-byte file header of a segment whose first frame starts at `first_position`.
std::string EncodeFileHeader(Position first_position);
// The first position named by a file header; nullopt when the magic does not match.
std::optional<Position> DecodeFileHeader(const uint8_t* bytes);

}  // namespace reef::events::detail
