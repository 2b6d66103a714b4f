#include "events/detail/log_format.h"

#include <cstring>

namespace reef::events::detail {

std::string EncodeFrameHeader(const FrameHeader& header) {
  return reef::EncodeFrameHeader(
      kFrameMagic, {header.first_position, header.event_count, header.body_bytes, header.body_crc});
}

std::optional<FrameHeader> DecodeFrameHeader(const uint8_t* bytes) {
  auto header = reef::DecodeFrameHeader(kFrameMagic, bytes);
  if (!header) return std::nullopt;
  return FrameHeader{header->first, header->count, header->body_bytes, header->body_crc};
}

void EncodeRecord(const Event& event, std::string& out) {
  const EventMetadata& m = event.metadata;
  uint64_t total = StoredBytes(event);
  PutLe<uint32_t>(out, static_cast<uint32_t>(total - 4));
  PutLe<uint16_t>(out, static_cast<uint16_t>(event.type.size()));
  PutLe<uint16_t>(out, static_cast<uint16_t>(event.tags.size()));
  PutLe<uint32_t>(out, static_cast<uint32_t>(event.data.size()));
  PutLe<uint16_t>(out, static_cast<uint16_t>(m.correlation_id.size()));
  PutLe<uint16_t>(out, static_cast<uint16_t>(m.causation_id.size()));
  PutLe<uint16_t>(out, static_cast<uint16_t>(m.idempotency_key.size()));
  PutLe<uint16_t>(out, static_cast<uint16_t>(m.user.size()));
  out.append(reinterpret_cast<const char*>(event.id.data()), event.id.size());
  PutLe<int64_t>(out, m.timestamp_ms);
  out += event.type;
  for (const std::string& tag : event.tags) {
    PutLe<uint16_t>(out, static_cast<uint16_t>(tag.size()));
    out += tag;
  }
  out += event.data;
  out += m.correlation_id;
  out += m.causation_id;
  out += m.idempotency_key;
  out += m.user;
}

size_t DecodeRecord(const uint8_t* bytes, size_t available, EventView& view) {
  if (available < kRecordFixedBytes) return 0;
  size_t total = size_t{GetLe<uint32_t>(bytes)} + 4;
  if (total < kRecordFixedBytes || total > available) return 0;
  size_t type_len = GetLe<uint16_t>(bytes + 4);
  size_t tag_count = GetLe<uint16_t>(bytes + 6);
  size_t data_len = GetLe<uint32_t>(bytes + 8);
  size_t corr_len = GetLe<uint16_t>(bytes + 12);
  size_t caus_len = GetLe<uint16_t>(bytes + 14);
  size_t idem_len = GetLe<uint16_t>(bytes + 16);
  size_t user_len = GetLe<uint16_t>(bytes + 18);  // 0 in logs written before user metadata
  std::memcpy(view.id.data(), bytes + 20, 16);
  view.timestamp_ms = GetLe<int64_t>(bytes + 36);
  const uint8_t* p = bytes + kRecordFixedBytes;
  const uint8_t* end = bytes + total;
  auto take = [&](size_t n, std::string_view& into) {
    if (static_cast<size_t>(end - p) < n) return false;
    into = std::string_view(reinterpret_cast<const char*>(p), n);
    p += n;
    return true;
  };
  if (!take(type_len, view.type)) return 0;
  view.tags.clear();
  for (size_t i = 0; i < tag_count; ++i) {
    if (end - p < 2) return 0;
    size_t len = GetLe<uint16_t>(p);
    p += 2;
    std::string_view tag;
    if (!take(len, tag)) return 0;
    view.tags.push_back(tag);
  }
  if (!take(data_len, view.data) || !take(corr_len, view.correlation_id) ||
      !take(caus_len, view.causation_id) || !take(idem_len, view.idempotency_key) ||
      !take(user_len, view.user_metadata)) {
    return 0;
  }
  return p == end ? total : 0;
}

std::string EncodeFileHeader(Position first_position) {
  std::string out(kFileMagic);
  PutLe<uint64_t>(out, first_position);
  PutLe<uint64_t>(out, 0);
  return out;
}

std::optional<Position> DecodeFileHeader(const uint8_t* bytes) {
  if (std::memcmp(bytes, kFileMagic.data(), kFileMagic.size()) != 0) return std::nullopt;
  return GetLe<uint64_t>(bytes + kFileMagic.size());
}

}  // namespace reef::events::detail
