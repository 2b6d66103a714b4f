#include "events/detail/log_format.h"

#include <array>
#include <bit>
#include <cstring>

namespace reef::events::detail {

namespace {

// ---- CRC-32C ------------------------------------------------------------------------------

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

// ---- little-endian fields -------------------------------------------------------------------

template <typename T>
void Put(std::string& out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));  // x86-64 and aarch64 Linux: little-endian
  out.append(bytes, sizeof(T));
}

template <typename T>
T Get(const uint8_t* p) {
  T value;
  std::memcpy(&value, p, sizeof(T));
  return value;
}

static_assert(std::endian::native == std::endian::little, "the log format is little-endian");

}  // namespace

uint32_t Crc32c(const void* data, size_t size, uint32_t crc) {
  const auto* p = static_cast<const uint8_t*>(data);
  crc = ~crc;
  crc = kHasSse42 ? Crc32cHardware(p, size, crc) : Crc32cTable(p, size, crc);
  return ~crc;
}

std::string EncodeFrameHeader(const FrameHeader& header) {
  std::string out;
  out.reserve(kFrameHeaderBytes);
  Put<uint32_t>(out, kFrameMagic);
  Put<uint32_t>(out, 0);  // header CRC, below
  Put<uint64_t>(out, header.first_position);
  Put<uint32_t>(out, header.event_count);
  Put<uint32_t>(out, header.body_bytes);
  Put<uint32_t>(out, header.body_crc);
  Put<uint32_t>(out, 0);
  uint32_t crc = Crc32c(out.data() + 8, kFrameHeaderBytes - 8);
  std::memcpy(out.data() + 4, &crc, 4);
  return out;
}

std::optional<FrameHeader> DecodeFrameHeader(const uint8_t* bytes) {
  if (Get<uint32_t>(bytes) != kFrameMagic) return std::nullopt;
  if (Get<uint32_t>(bytes + 4) != Crc32c(bytes + 8, kFrameHeaderBytes - 8)) return std::nullopt;
  FrameHeader header;
  header.first_position = Get<uint64_t>(bytes + 8);
  header.event_count = Get<uint32_t>(bytes + 16);
  header.body_bytes = Get<uint32_t>(bytes + 20);
  header.body_crc = Get<uint32_t>(bytes + 24);
  return header;
}

void EncodeRecord(const Event& event, std::string& out) {
  const EventMetadata& m = event.metadata;
  uint64_t total = StoredBytes(event);
  Put<uint32_t>(out, static_cast<uint32_t>(total - 4));
  Put<uint16_t>(out, static_cast<uint16_t>(event.type.size()));
  Put<uint16_t>(out, static_cast<uint16_t>(event.tags.size()));
  Put<uint32_t>(out, static_cast<uint32_t>(event.data.size()));
  Put<uint16_t>(out, static_cast<uint16_t>(m.correlation_id.size()));
  Put<uint16_t>(out, static_cast<uint16_t>(m.causation_id.size()));
  Put<uint16_t>(out, static_cast<uint16_t>(m.idempotency_key.size()));
  Put<uint16_t>(out, static_cast<uint16_t>(m.user.size()));
  out.append(reinterpret_cast<const char*>(event.id.data()), event.id.size());
  Put<int64_t>(out, m.timestamp_ms);
  out += event.type;
  for (const std::string& tag : event.tags) {
    Put<uint16_t>(out, static_cast<uint16_t>(tag.size()));
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
  size_t total = size_t{Get<uint32_t>(bytes)} + 4;
  if (total < kRecordFixedBytes || total > available) return 0;
  size_t type_len = Get<uint16_t>(bytes + 4);
  size_t tag_count = Get<uint16_t>(bytes + 6);
  size_t data_len = Get<uint32_t>(bytes + 8);
  size_t corr_len = Get<uint16_t>(bytes + 12);
  size_t caus_len = Get<uint16_t>(bytes + 14);
  size_t idem_len = Get<uint16_t>(bytes + 16);
  size_t user_len = Get<uint16_t>(bytes + 18);  // 0 in logs written before user metadata
  std::memcpy(view.id.data(), bytes + 20, 16);
  view.timestamp_ms = Get<int64_t>(bytes + 36);
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
    size_t len = Get<uint16_t>(p);
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
  Put<uint64_t>(out, first_position);
  Put<uint64_t>(out, 0);
  return out;
}

std::optional<Position> DecodeFileHeader(const uint8_t* bytes) {
  if (std::memcmp(bytes, kFileMagic.data(), kFileMagic.size()) != 0) return std::nullopt;
  return Get<uint64_t>(bytes + kFileMagic.size());
}

}  // namespace reef::events::detail
