#include "core/frame.h"

#include "core/crc32c.h"

namespace reef {

void AppendRecord(std::string& body, std::string_view record) {
  PutLe<uint32_t>(body, static_cast<uint32_t>(record.size()));
  body.append(record);
}

std::string SplitRecords(std::string_view body, uint32_t count,
                         std::vector<std::string_view>* records) {
  const auto* base = reinterpret_cast<const uint8_t*>(body.data());
  size_t at = 0;
  for (uint32_t i = 0; i < count; ++i) {
    if (body.size() - at < 4) return "a record length runs past its frame";
    const uint32_t length = GetLe<uint32_t>(base + at);
    at += 4;
    if (body.size() - at < length) return "a record runs past its frame";
    records->push_back(body.substr(at, length));
    at += length;
  }
  if (at != body.size()) return "a frame holds bytes after its last record";
  return {};
}

std::string EncodeFrameHeader(uint32_t magic, const FrameHeader& header) {
  std::string out;
  out.reserve(kFrameHeaderBytes);
  PutLe<uint32_t>(out, magic);
  PutLe<uint32_t>(out, 0);  // header CRC, below
  PutLe<uint64_t>(out, header.first);
  PutLe<uint32_t>(out, header.count);
  PutLe<uint32_t>(out, header.body_bytes);
  PutLe<uint32_t>(out, header.body_crc);
  PutLe<uint32_t>(out, 0);
  uint32_t crc = Crc32c(out.data() + 8, kFrameHeaderBytes - 8);
  std::memcpy(out.data() + 4, &crc, 4);
  return out;
}

std::optional<FrameHeader> DecodeFrameHeader(uint32_t magic, const uint8_t* bytes) {
  if (GetLe<uint32_t>(bytes) != magic) return std::nullopt;
  if (GetLe<uint32_t>(bytes + 4) != Crc32c(bytes + 8, kFrameHeaderBytes - 8)) return std::nullopt;
  FrameHeader header;
  header.first = GetLe<uint64_t>(bytes + 8);
  header.count = GetLe<uint32_t>(bytes + 16);
  header.body_bytes = GetLe<uint32_t>(bytes + 20);
  header.body_crc = GetLe<uint32_t>(bytes + 24);
  return header;
}

}  // namespace reef
