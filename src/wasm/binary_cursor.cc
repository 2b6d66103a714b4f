#include "wasm/detail/binary_cursor.h"

#include <fmt/format.h>

namespace reef::wasm::detail {

constexpr uint8_t kEnd = 0x0b;

Status BinaryCursor::Malformed(size_t at, std::string_view what) const {
  std::string where = section_ == "module" ? "module" : fmt::format("{} section", section_);
  return Status::InvalidArgument(
      fmt::format("{}:{:07x}: error: malformed {}: {}", name_, at, where, what));
}

Status BinaryCursor::Limit(size_t at, uint64_t count, std::string_view what, uint32_t limit,
                           std::string_view field) const {
  if (count <= limit) return Status::Ok();
  return Status::LimitExceeded(fmt::format("{}:{:07x}: error: {} section: {} {}; limit {}={}",
                                           name_, at, section_, count, what, field, limit));
}

Status BinaryCursor::Byte(uint8_t* out) {
  if (pos_ >= end_) return Malformed(pos_, "unexpected end");
  *out = bytes_[pos_++];
  return Status::Ok();
}

Status BinaryCursor::ValType() {
  const size_t at = pos_;
  uint8_t type = 0;
  REEF_RETURN_IF_ERROR(Byte(&type));
  if (type & 0x80) {
    return Malformed(at,
                     fmt::format("malformed value type 0x{:02x}: a value type is one byte", type));
  }
  return Status::Ok();
}

Status BinaryCursor::Skip(uint64_t n) {
  if (n > remaining()) {
    return Malformed(pos_, fmt::format("unexpected end: {} bytes needed, {} left", n, remaining()));
  }
  pos_ += n;
  return Status::Ok();
}

Status BinaryCursor::Leb(unsigned bits, bool is_signed, uint64_t* out) {
  const size_t start = pos_;
  const unsigned max_bytes = (bits + 6) / 7;
  uint64_t value = 0;
  for (unsigned i = 0; i < max_bytes; ++i) {
    if (pos_ >= end_) return Malformed(start, "unexpected end (in a LEB128 integer)");
    const uint8_t byte = bytes_[pos_++];
    if (i + 1 == max_bytes) {
      if (byte & 0x80) return Malformed(start, "integer representation too long");
      const unsigned used = bits - 7 * i;  // value bits in this byte
      const unsigned low = is_signed ? used - 1 : used;
      const auto unused = static_cast<uint8_t>(0x7f & ~((1u << low) - 1));
      const uint8_t extra = byte & unused;
      if (extra != 0 && !(is_signed && extra == unused)) {
        return Malformed(start, "integer too large");
      }
    }
    value |= uint64_t{byte & 0x7fu} << (7 * i);
    if (!(byte & 0x80)) {
      *out = value;
      return Status::Ok();
    }
  }
  return Malformed(start, "integer representation too long");  // not reached
}

Status BinaryCursor::U32(uint32_t* out) {
  uint64_t value = 0;
  REEF_RETURN_IF_ERROR(Leb(32, false, &value));
  *out = static_cast<uint32_t>(value);
  return Status::Ok();
}

Status BinaryCursor::Count(uint32_t* out, std::string_view what) {
  const size_t at = pos_;
  REEF_RETURN_IF_ERROR(U32(out));
  if (*out > remaining()) {
    return Malformed(
        at, fmt::format("declares {} {} but only {} bytes remain", *out, what, remaining()));
  }
  return Status::Ok();
}

Status BinaryCursor::Name(std::string_view* out) {
  const size_t at = pos_;
  uint32_t length = 0;
  REEF_RETURN_IF_ERROR(U32(&length));
  if (length > remaining()) {
    return Malformed(
        at, fmt::format("length out of bounds: a name of {} bytes, {} left", length, remaining()));
  }
  *out = std::string_view(reinterpret_cast<const char*>(bytes_.data() + pos_), length);
  pos_ += length;
  return Status::Ok();
}

// limits ::= flags:u8 min (max if flags & 1); 64-bit bounds when flags & 4 (memory64, which
// wabt then refuses as not enabled).
Status BinaryCursor::Limits() {
  const size_t at = pos_;
  uint8_t flags = 0;
  REEF_RETURN_IF_ERROR(Byte(&flags));
  if (flags & ~0x07) return Malformed(at, fmt::format("limits flags 0x{:02x}", flags));
  const unsigned bits = (flags & 0x04) ? 64 : 32;
  uint64_t bound = 0;
  REEF_RETURN_IF_ERROR(Leb(bits, false, &bound));
  if (flags & 0x01) REEF_RETURN_IF_ERROR(Leb(bits, false, &bound));
  return Status::Ok();
}

// The instructions a constant expression may hold with Reef's features (no extended-const):
// t.const, global.get, ref.null, ref.func, v128.const, then `end`.
Status BinaryCursor::ConstExpr() {
  uint64_t ignored = 0;
  while (true) {
    const size_t at = pos_;
    uint8_t opcode = 0;
    if (pos_ >= end_) {
      // wabt 1.0.32 accepts an expression cut off here; the spec does not.
      return Malformed(pos_, "unexpected end: a constant expression needs its `end` (0x0b)");
    }
    REEF_RETURN_IF_ERROR(Byte(&opcode));
    switch (opcode) {
      case kEnd:
        return Status::Ok();
      case 0x41:  // i32.const
        REEF_RETURN_IF_ERROR(Leb(32, true, &ignored));
        break;
      case 0x42:  // i64.const
        REEF_RETURN_IF_ERROR(Leb(64, true, &ignored));
        break;
      case 0x43:  // f32.const
        REEF_RETURN_IF_ERROR(Skip(4));
        break;
      case 0x44:  // f64.const
        REEF_RETURN_IF_ERROR(Skip(8));
        break;
      case 0x23:  // global.get
      case 0xd2:  // ref.func
        REEF_RETURN_IF_ERROR(Leb(32, false, &ignored));
        break;
      case 0xd0:  // ref.null
        REEF_RETURN_IF_ERROR(ValType());
        break;
      case 0xfd:  // v128.const is 0xfd 12
        REEF_RETURN_IF_ERROR(Leb(32, false, &ignored));
        if (ignored != 12) {
          return Malformed(
              at, fmt::format("constant expression required (instruction 0xfd {})", ignored));
        }
        REEF_RETURN_IF_ERROR(Skip(16));
        break;
      default:
        return Malformed(
            at, fmt::format("constant expression required (instruction 0x{:02x})", opcode));
    }
  }
}

}  // namespace reef::wasm::detail
