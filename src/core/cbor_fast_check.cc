// IsPlainDeterministicCbor (cbor.h): the common case of CborValue::FromBytes without Result
// objects. It answers true only for input the full checker (Decoder<false> in cbor.cc)
// accepts as already deterministic; anything else, floats included, is left to that checker.
#include <cstring>

#include "core/cbor.h"
#include "core/ids.h"
#include "core/utf8.h"

namespace reef {
namespace {

class FastCheck {
 public:
  FastCheck(std::span<const std::uint8_t> in, const ValueLimits& limits)
      : p_(in.data()), end_(in.data() + in.size()), limits_(limits) {}

  bool Top() { return Item(0) && p_ == end_; }

 private:
  // A head in its shortest form (RFC 8949 §4.2.1), or false.
  bool Head(std::uint8_t* major, std::uint64_t* arg) {
    if (p_ == end_) return false;
    const std::uint8_t first = *p_++;
    *major = first >> 5;
    const std::uint8_t info = first & 0x1f;
    if (info < 24) {
      *arg = info;
      return true;
    }
    if (info > 27) return false;
    const std::size_t size = std::size_t{1} << (info - 24);
    if (static_cast<std::size_t>(end_ - p_) < size) return false;
    std::uint64_t value = 0;
    for (std::size_t i = 0; i < size; ++i) value = (value << 8) | *p_++;
    if (value < (size == 1 ? 24 : std::uint64_t{1} << (4 * size))) return false;
    *arg = value;
    return true;
  }

  // A text payload of `length` bytes, valid UTF-8; *text points into the input.
  bool Text(std::uint64_t length, bool counts_as_string_bytes, std::string_view* text) {
    if (length > static_cast<std::uint64_t>(end_ - p_)) return false;
    const auto len = static_cast<std::size_t>(length);
    if (counts_as_string_bytes) {
      if (len > limits_.max_string_bytes - string_bytes_) return false;
      string_bytes_ += len;
    }
    *text = std::string_view(reinterpret_cast<const char*>(p_), len);
    bool ascii = true;
    for (char c : *text) ascii = ascii && static_cast<unsigned char>(c) < 0x80;
    if (!ascii && FindInvalidUtf8(*text)) return false;
    p_ += len;
    return true;
  }

  bool Item(std::size_t depth) {
    std::uint8_t major = 0;
    std::uint64_t arg = 0;
    if (!Head(&major, &arg) || depth > limits_.max_depth || nodes_ >= limits_.max_nodes) {
      return false;
    }
    ++nodes_;
    std::string_view text;
    switch (major) {
      case 0:  // unsigned
      case 1:  // negative
        return arg <= static_cast<std::uint64_t>(INT64_MAX);
      case 3:
        return Text(arg, true, &text);
      case 4:
        for (std::uint64_t i = 0; i < arg; ++i) {
          if (!Item(depth + 1)) return false;
        }
        return true;
      case 5:
        return Record(arg, depth);
      case 6: {  // only an actor ref: the tag, then its 21-character id
        std::uint8_t inner = 0;
        std::uint64_t length = 0;
        return arg == kCborActorRefTag && Head(&inner, &length) && inner == 3 &&
               Text(length, false, &text) && IsValidNanoId(text);
      }
      case 7:  // false, true, null; floats go to the full checker
        return arg >= 20 && arg <= 22;
      default:  // byte strings
        return false;
    }
  }

  // Keys are text, in the deterministic order (shorter first, then bytewise), each once.
  bool Record(std::uint64_t fields, std::size_t depth) {
    std::string_view previous;
    for (std::uint64_t i = 0; i < fields; ++i) {
      std::uint8_t major = 0;
      std::uint64_t length = 0;
      std::string_view key;
      if (!Head(&major, &length) || major != 3 || !Text(length, true, &key)) return false;
      if (i > 0 &&
          (key.size() < previous.size() || (key.size() == previous.size() && key <= previous))) {
        return false;
      }
      previous = key;
      if (!Item(depth + 1)) return false;
    }
    return true;
  }

  const std::uint8_t* p_;
  const std::uint8_t* const end_;
  const ValueLimits& limits_;
  std::size_t nodes_ = 0;
  std::size_t string_bytes_ = 0;
};

}  // namespace

bool IsPlainDeterministicCbor(std::span<const std::uint8_t> bytes, const ValueLimits& limits) {
  return bytes.size() <= limits.max_cbor_bytes && FastCheck(bytes, limits).Top();
}

}  // namespace reef
