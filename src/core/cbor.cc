#include "core/cbor.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cfloat>
#include <cmath>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/utf8.h"

namespace reef {
namespace {

constexpr std::uint8_t kMajorUnsigned = 0;
constexpr std::uint8_t kMajorNegative = 1;
constexpr std::uint8_t kMajorBytes = 2;
constexpr std::uint8_t kMajorText = 3;
constexpr std::uint8_t kMajorArray = 4;
constexpr std::uint8_t kMajorMap = 5;
constexpr std::uint8_t kMajorTag = 6;
constexpr std::uint8_t kMajorSimple = 7;

constexpr std::uint8_t kFalse = 0xf4;
constexpr std::uint8_t kTrue = 0xf5;
constexpr std::uint8_t kNull = 0xf6;
constexpr std::uint8_t kHalf = 0xf9;
constexpr std::uint8_t kSingle = 0xfa;
constexpr std::uint8_t kDouble = 0xfb;

constexpr std::uint64_t kInt64Max = std::numeric_limits<std::int64_t>::max();

// The half-precision encoding of `d` when it keeps `d` exactly (RFC 8949 §4.2.1 "preferred
// serialization" of floats), otherwise nullopt. REQUIRES: `d` finite.
std::optional<std::uint16_t> ExactHalf(double d) {
  const std::uint16_t sign = std::signbit(d) ? 0x8000 : 0;
  const double a = std::fabs(d);
  if (a == 0) return sign;
  if (a >= 65536) return std::nullopt;
  if (a >= 0x1p-14) {  // normal half: 1.m * 2^e, e in [-14, 15], 10 mantissa bits
    const int e = std::ilogb(a);
    const double mantissa = (std::ldexp(a, -e) - 1.0) * 1024;  // exact: scaling by 2^k
    if (mantissa != std::floor(mantissa)) return std::nullopt;
    return static_cast<std::uint16_t>(sign | ((e + 15) << 10) | static_cast<int>(mantissa));
  }
  const double steps = std::ldexp(a, 24);  // subnormal half: k * 2^-24, k < 1024
  if (steps != std::floor(steps)) return std::nullopt;
  return static_cast<std::uint16_t>(sign | static_cast<int>(steps));
}

// The additional information of the shortest float encoding that keeps `d` exactly: 25
// (half), 26 (single) or 27 (double). REQUIRES: `d` finite.
std::uint8_t FloatWidthInfo(double d) {
  if (ExactHalf(d)) return 25;
  if (std::fabs(d) <= FLT_MAX && static_cast<double>(static_cast<float>(d)) == d) return 26;
  return 27;
}

// RFC 8949 Appendix D.
double HalfToDouble(std::uint16_t half) {
  const int exponent = (half >> 10) & 0x1f;
  const int mantissa = half & 0x3ff;
  double value;
  if (exponent == 0) {
    value = std::ldexp(mantissa, -24);
  } else if (exponent != 31) {
    value = std::ldexp(mantissa + 1024, exponent - 25);
  } else {
    value = mantissa == 0 ? std::numeric_limits<double>::infinity()
                          : std::numeric_limits<double>::quiet_NaN();
  }
  return (half & 0x8000) ? -value : value;
}

// ---------------------------------------------------------------------------------------------
// Encoding

class Encoder {
 public:
  std::vector<std::uint8_t> out;

  Status Item(const Value& v) {
    switch (v.kind()) {
      case Kind::kNull:
        out.push_back(kNull);
        return Status::Ok();
      case Kind::kBool:
        out.push_back(v.as_bool() ? kTrue : kFalse);
        return Status::Ok();
      case Kind::kInt: {
        const std::int64_t i = v.as_int();
        if (i >= 0) {
          Head(kMajorUnsigned, static_cast<std::uint64_t>(i));
        } else {
          Head(kMajorNegative, static_cast<std::uint64_t>(-(i + 1)));
        }
        return Status::Ok();
      }
      case Kind::kFloat:
        return Float(v.as_float());
      case Kind::kString:
        return Text(v.as_string(), "string");
      case Kind::kList:
        Head(kMajorArray, v.as_list().size());
        for (const Value& item : v.as_list()) REEF_RETURN_IF_ERROR(Item(item));
        return Status::Ok();
      case Kind::kRecord:
        return Record(v.as_record());
      case Kind::kActorRef: {
        Head(kMajorTag, kCborActorRefTag);
        const std::string_view id = v.as_actor_ref().str();
        Head(kMajorText, id.size());
        out.insert(out.end(), id.begin(), id.end());
        return Status::Ok();
      }
    }
    return Status::Internal("unknown value kind");
  }

 private:
  void Head(std::uint8_t major, std::uint64_t arg) {
    const auto m = static_cast<std::uint8_t>(major << 5);
    if (arg < 24) {
      out.push_back(static_cast<std::uint8_t>(m | arg));
    } else if (arg <= 0xff) {
      out.push_back(m | 24);
      Big(arg, 1);
    } else if (arg <= 0xffff) {
      out.push_back(m | 25);
      Big(arg, 2);
    } else if (arg <= 0xffffffff) {
      out.push_back(m | 26);
      Big(arg, 4);
    } else {
      out.push_back(m | 27);
      Big(arg, 8);
    }
  }

  void Big(std::uint64_t v, int bytes) {
    for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  }

  Status Float(double d) {
    if (!std::isfinite(d)) {
      return Status::InvalidArgument("cannot encode a non-finite float (NaN or infinity)");
    }
    switch (FloatWidthInfo(d)) {
      case 25:
        out.push_back(kHalf);
        Big(*ExactHalf(d), 2);
        break;
      case 26:
        out.push_back(kSingle);
        Big(std::bit_cast<std::uint32_t>(static_cast<float>(d)), 4);
        break;
      default:
        out.push_back(kDouble);
        Big(std::bit_cast<std::uint64_t>(d), 8);
    }
    return Status::Ok();
  }

  Status Text(std::string_view s, std::string_view what) {
    if (const auto bad = FindInvalidUtf8(s)) {
      return Status::InvalidArgument("cannot encode a " + std::string(what) +
                                     " that is not UTF-8 (ill-formed at byte " +
                                     std::to_string(*bad) + ")");
    }
    Head(kMajorText, s.size());
    out.insert(out.end(), s.begin(), s.end());
    return Status::Ok();
  }

  Status Record(const reef::Record& fields) {
    // RFC 8949 §4.2.1: keys sorted by their encoded bytes. A text key's head grows with its
    // length, so that order is: shorter keys first, equal lengths bytewise.
    // The order is built on the stack for the records most values hold (up to 16 fields):
    // encoding a record allocates nothing but its output.
    using Field = const reef::Record::value_type*;
    constexpr size_t kInlineFields = 16;
    std::array<Field, kInlineFields> inline_order;
    std::vector<Field> heap_order;
    std::span<Field> order(inline_order.data(), fields.size());
    if (fields.size() > kInlineFields) {
      heap_order.resize(fields.size());
      order = heap_order;
    }
    size_t next = 0;
    for (const auto& field : fields) order[next++] = &field;
    // Keys are distinct, so the order is total: (length, bytes). std::string compares bytes
    // as unsigned char, as the map does.
    std::sort(order.begin(), order.end(), [](Field a, Field b) {
      if (a->first.size() != b->first.size()) return a->first.size() < b->first.size();
      return a->first < b->first;
    });
    Head(kMajorMap, fields.size());
    for (Field field : order) {
      REEF_RETURN_IF_ERROR(Text(field->first, "record key"));
      REEF_RETURN_IF_ERROR(Item(field->second));
    }
    return Status::Ok();
  }
};

// ---------------------------------------------------------------------------------------------
// Decoding

struct Head {
  std::size_t offset;  // of the initial byte
  std::uint8_t major;
  std::uint8_t info;  // additional information, the low 5 bits
  std::uint64_t arg;
};

// One decoder for both uses: kBuild builds the Value (DecodeCbor); without it the input is
// only checked, with the same errors and limits, allocating nothing, and `canonical()` tells
// whether it is already in Encoder's deterministic encoding (CborValue::FromBytes).
template <bool kBuild>
class Decoder {
 public:
  // What Item gives: the Value, or nothing when only checking.
  using Out = std::conditional_t<kBuild, Value, std::monostate>;

  Decoder(std::span<const std::uint8_t> in, const ValueLimits& limits) : in_(in), limits_(limits) {}

  Result<Out> Top() {
    Result<Out> v = Item(0);
    if (v.ok() && pos_ != in_.size()) {
      return Error(pos_, std::to_string(in_.size() - pos_) +
                             " trailing bytes after the data item (exactly one is allowed)");
    }
    return v;
  }

  bool canonical() const { return canonical_; }

 private:
  static Status Error(std::size_t offset, std::string_view what) {
    return Status::InvalidArgument("invalid CBOR at byte offset " + std::to_string(offset) + ": " +
                                   std::string(what));
  }

  std::size_t remaining() const { return in_.size() - pos_; }

  Result<Head> ReadHead() {
    if (remaining() == 0) return Error(pos_, "unexpected end of input, expected a data item");
    Head h{pos_, static_cast<std::uint8_t>(in_[pos_] >> 5),
           static_cast<std::uint8_t>(in_[pos_] & 0x1f), 0};
    ++pos_;
    if (h.info < 24) {
      h.arg = h.info;
      return h;
    }
    if (h.info == 31) {
      return Error(h.offset, h.major == kMajorSimple
                                 ? "unexpected break stop code (indefinite lengths are "
                                   "not supported)"
                                 : "indefinite lengths are not supported");
    }
    if (h.info > 27) return Error(h.offset, "reserved additional information value");
    const std::size_t size = std::size_t{1} << (h.info - 24);
    if (remaining() < size) return Error(h.offset, "unexpected end of input inside a head");
    for (std::size_t i = 0; i < size; ++i) h.arg = (h.arg << 8) | in_[pos_++];
    // Shortest heads (RFC 8949 §4.2.1); a float's width is checked by Finite instead.
    if (h.major != kMajorSimple && h.arg < (size == 1 ? 24 : std::uint64_t{1} << (4 * size))) {
      canonical_ = false;
    }
    return h;
  }

  Status CountNodes(std::uint64_t n) {
    if (n > limits_.max_nodes - nodes_) return NodeLimitExceeded(limits_);
    nodes_ += n;
    return Status::Ok();
  }

  // Reads the payload of a text string whose head `h` was just read; the view points into
  // the input.
  Result<std::string_view> TextPayload(const Head& h, bool counts_as_string_bytes) {
    if (h.arg > remaining()) {
      return Error(h.offset, "text string length " + std::to_string(h.arg) +
                                 " exceeds the remaining " + std::to_string(remaining()) +
                                 " bytes of input");
    }
    const auto len = static_cast<std::size_t>(h.arg);
    if (counts_as_string_bytes) {
      if (len > limits_.max_string_bytes - string_bytes_) return StringBytesLimitExceeded(limits_);
      string_bytes_ += len;
    }
    const std::string_view text(reinterpret_cast<const char*>(in_.data() + pos_), len);
    if (const auto bad = FindInvalidUtf8(text)) {
      return Error(pos_ + *bad, "text string is not valid UTF-8");
    }
    pos_ += len;
    return text;
  }

  Result<Out> Item(std::size_t depth) {
    REEF_ASSIGN_OR_RETURN(const Head h, ReadHead());
    if (depth > limits_.max_depth) return DepthLimitExceeded(limits_);
    REEF_RETURN_IF_ERROR(CountNodes(1));
    switch (h.major) {
      case kMajorUnsigned:
        if (h.arg > kInt64Max) return Error(h.offset, "integer outside the int64 range");
        if constexpr (kBuild) return Value::Int(static_cast<std::int64_t>(h.arg));
        return Out{};
      case kMajorNegative:
        if (h.arg > kInt64Max) return Error(h.offset, "integer outside the int64 range");
        if constexpr (kBuild) return Value::Int(-1 - static_cast<std::int64_t>(h.arg));
        return Out{};
      case kMajorBytes:
        return Error(h.offset, "byte strings are not supported (major type 2)");
      case kMajorText: {
        REEF_ASSIGN_OR_RETURN(std::string_view s, TextPayload(h, true));
        if constexpr (kBuild) return Value::String(std::string(s));
        return Out{};
      }
      case kMajorArray:
        return List(h, depth);
      case kMajorMap:
        return Record(h, depth);
      case kMajorTag:
        return Tagged(h);
      default:
        return Simple(h);
    }
  }

  Result<Out> List(const Head& h, std::size_t depth) {
    if (h.arg > remaining()) {  // every item takes at least one byte
      return Error(h.offset, "list length " + std::to_string(h.arg) + " exceeds the remaining " +
                                 std::to_string(remaining()) + " bytes of input");
    }
    if (h.arg > limits_.max_nodes - nodes_) return NodeLimitExceeded(limits_);
    reef::List items;
    if constexpr (kBuild) items.reserve(static_cast<std::size_t>(h.arg));
    for (std::uint64_t i = 0; i < h.arg; ++i) {
      REEF_ASSIGN_OR_RETURN(Out item, Item(depth + 1));
      if constexpr (kBuild) items.push_back(std::move(item));
    }
    if constexpr (kBuild) return Value::ListOf(std::move(items));
    return Out{};
  }

  Result<Out> Record(const Head& h, std::size_t depth) {
    if (h.arg > remaining() / 2) {  // every key and every value take at least one byte
      return Error(h.offset, "record length " + std::to_string(h.arg) +
                                 " exceeds what the remaining " + std::to_string(remaining()) +
                                 " bytes of input can hold");
    }
    if (h.arg > limits_.max_nodes - nodes_) return NodeLimitExceeded(limits_);
    reef::Record fields;
    std::string_view previous;  // the last key; keys must be distinct, and sorted to be canonical
    for (std::uint64_t i = 0; i < h.arg; ++i) {
      REEF_ASSIGN_OR_RETURN(const Head key_head, ReadHead());
      if (key_head.major != kMajorText) {
        return Error(key_head.offset, "record key is not a text string");
      }
      REEF_ASSIGN_OR_RETURN(std::string_view key, TextPayload(key_head, true));
      REEF_ASSIGN_OR_RETURN(Out field, Item(depth + 1));
      if constexpr (kBuild) {
        if (!fields.try_emplace(std::string(key), std::move(field)).second) {
          return Error(key_head.offset, "duplicate record key");
        }
      } else if (i > 0 && !KeyBefore(previous, key)) {
        // Out of the deterministic order, or a duplicate: CborValue::FromBytes decodes such
        // input in full, which tells which (Decoder<true> rejects duplicates).
        canonical_ = false;
      }
      if (i == 0 || KeyBefore(previous, key)) previous = key;
    }
    if constexpr (kBuild) return Value::RecordOf(std::move(fields));
    return Out{};
  }

  // The deterministic order of record keys: shorter first, equal lengths bytewise.
  static bool KeyBefore(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return a.size() < b.size();
    return a < b;
  }

  Result<Out> Tagged(const Head& h) {
    if (h.arg != kCborActorRefTag) {
      return Error(h.offset, "unsupported tag " + std::to_string(h.arg) + " (only " +
                                 std::to_string(kCborActorRefTag) + ", actor ref, is allowed)");
    }
    REEF_ASSIGN_OR_RETURN(const Head inner, ReadHead());
    if (inner.major != kMajorText) {
      return Error(inner.offset, "actor ref tag must wrap a text string");
    }
    REEF_ASSIGN_OR_RETURN(const std::string_view id, TextPayload(inner, false));
    auto ref = ActorRef::Parse(id);
    if (!ref.ok()) return Error(inner.offset, ref.status().message());
    if constexpr (kBuild) return Value::Ref(*ref);
    return Out{};
  }

  Result<Out> Simple(const Head& h) {
    switch (h.info) {
      case 20:
        if constexpr (kBuild) return Value::Bool(false);
        return Out{};
      case 21:
        if constexpr (kBuild) return Value::Bool(true);
        return Out{};
      case 22:
        if constexpr (kBuild) return Value::Null();
        return Out{};
      case 25:
        return Finite(h, HalfToDouble(static_cast<std::uint16_t>(h.arg)));
      case 26:
        return Finite(h, std::bit_cast<float>(static_cast<std::uint32_t>(h.arg)));
      case 27:
        return Finite(h, std::bit_cast<double>(h.arg));
      default:
        return Error(h.offset, "simple value " + std::to_string(h.arg) +
                                   " is not supported (only false, true and null)");
    }
  }

  Result<Out> Finite(const Head& h, double d) {
    if (!std::isfinite(d)) return Error(h.offset, "NaN and infinities are not allowed");
    if (h.info != FloatWidthInfo(d)) canonical_ = false;
    if constexpr (kBuild) return Value::Float(d);
    return Out{};
  }

  std::span<const std::uint8_t> in_;
  const ValueLimits& limits_;
  std::size_t pos_ = 0;
  std::size_t nodes_ = 0;
  std::size_t string_bytes_ = 0;
  bool canonical_ = true;
};

}  // namespace

Result<std::vector<std::uint8_t>> EncodeCbor(const Value& value, const ValueLimits& limits) {
  REEF_RETURN_IF_ERROR(CheckLimits(value, limits));
  Encoder encoder;
  REEF_RETURN_IF_ERROR(encoder.Item(value));
  if (encoder.out.size() > limits.max_cbor_bytes) {
    return Status::LimitExceeded(
        "encoded CBOR of " + std::to_string(encoder.out.size()) +
        " bytes exceeds limit max_cbor_bytes=" + std::to_string(limits.max_cbor_bytes));
  }
  return std::move(encoder.out);
}

Result<Value> DecodeCbor(std::span<const std::uint8_t> bytes, const ValueLimits& limits) {
  if (bytes.size() > limits.max_cbor_bytes) {
    return Status::LimitExceeded(
        "CBOR input of " + std::to_string(bytes.size()) +
        " bytes exceeds limit max_cbor_bytes=" + std::to_string(limits.max_cbor_bytes));
  }
  return Decoder<true>(bytes, limits).Top();
}

std::array<std::uint8_t, kCborActorRefBytes> EncodeCborRef(const ActorRef& ref) {
  static_assert(kNanoIdLength == 21 && kCborActorRefBytes == 6 + kNanoIdLength);
  std::array<std::uint8_t, kCborActorRefBytes> out{
      0xda,
      0x52,
      0x45,
      0x45,
      0x46,  // kCborActorRefTag, a 4-byte head
      static_cast<std::uint8_t>((kMajorText << 5) | kNanoIdLength)};
  const std::string_view id = ref.str();
  std::copy(id.begin(), id.end(), out.begin() + 6);
  return out;
}

CborValue::CborValue() : bytes_(1, static_cast<char>(kNull)) {}

Result<CborValue> CborValue::Encode(const Value& value, const ValueLimits& limits) {
  REEF_ASSIGN_OR_RETURN(std::vector<std::uint8_t> bytes, EncodeCbor(value, limits));
  return CborValue(std::string(bytes.begin(), bytes.end()));
}

Result<CborValue> CborValue::FromBytes(std::span<const std::uint8_t> bytes,
                                       const ValueLimits& limits) {
  const auto as_is = [&] {
    return CborValue(std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  };
  if (IsPlainDeterministicCbor(bytes, limits)) return as_is();
  if (bytes.size() > limits.max_cbor_bytes) return DecodeCbor(bytes, limits).status();
  Decoder<false> check(bytes, limits);
  if (Status checked = check.Top().status(); !checked.ok()) {
    // Checking does not stop at a duplicate record key (it only marks the record out of
    // order); DecodeCbor does, and its error is the one to give.
    return check.canonical() ? checked : DecodeCbor(bytes, limits).status();
  }
  if (!check.canonical()) {
    REEF_ASSIGN_OR_RETURN(Value value, DecodeCbor(bytes, limits));
    return Encode(value, limits);
  }
  return as_is();
}

Value CborValue::ToValue() const {
  // Checked against the limits of its maker; decoding needs only the codec's own depth bound.
  static const ValueLimits kChecked{1000, SIZE_MAX, SIZE_MAX, SIZE_MAX, SIZE_MAX};
  Result<Value> value = DecodeCbor(bytes(), kChecked);
  return value.ok() ? std::move(*value) : Value::Null();
}

}  // namespace reef
