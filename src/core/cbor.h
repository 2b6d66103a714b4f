// CBOR codec for the guest edge (RFC 8949; mapping in docs/abi.md "Buffers and values").
//
//   null -> 0xf6, bool -> 0xf4/0xf5, int -> major 0/1, float -> major 7 half/single/double,
//   string -> major 3, list -> major 4, record -> major 5 with text keys,
//   actor ref -> tag 1380271430 ("REEF") around a 21-byte NanoID text string.
//
// Thread ownership: pure functions; any thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/limits.h"
#include "core/status.h"
#include "core/value.h"

namespace reef {

// The private CBOR tag wrapping an actor ref: the bytes "REEF" read as a big-endian u32,
// encoded as 0xda 0x52 0x45 0x45 0x46.
inline constexpr std::uint64_t kCborActorRefTag = 1380271430;

// Encodes `value` as one CBOR data item in the deterministic encoding of RFC 8949 §4.2.1:
// shortest heads, definite lengths, each float in the shortest of half/single/double that
// keeps its value exactly, record keys sorted by their encoded bytes (shorter keys first,
// then bytewise). Equal values give identical bytes.
// Errors: LimitExceeded when `value` breaks max_depth, max_nodes or max_string_bytes, or the
// encoding would exceed max_cbor_bytes; InvalidArgument for a non-finite float or a string
// or key that is not UTF-8 (both break Value's REQUIREs).
Result<std::vector<std::uint8_t>> EncodeCbor(const Value& value, const ValueLimits& limits);

// Decodes `bytes`, which must hold exactly one CBOR data item of the docs/abi.md mapping in
// any well-formed encoding (heads need not be shortest, keys need not be sorted).
// `bytes` is only read during the call.
// Errors: LimitExceeded when `bytes` is larger than max_cbor_bytes or the value breaks
// max_depth, max_nodes or max_string_bytes (checked while decoding; no allocation is sized
// from a length head before the head is checked against the remaining input and the limits).
// InvalidArgument naming the byte offset for everything else: truncated or trailing bytes,
// reserved or indefinite lengths, byte strings, tags other than kCborActorRefTag, a tagged
// item that is not a valid NanoID text string, simple values other than false/true/null, NaN
// and infinities, integers outside int64, ill-formed UTF-8, non-text or duplicate record keys.
Result<Value> DecodeCbor(std::span<const std::uint8_t> bytes, const ValueLimits& limits);

// True only when DecodeCbor accepts `bytes` under `limits` and they are already its
// deterministic encoding (what EncodeCbor gives for the value). False means "not shown
// here": floats, longer heads, unsorted keys and every error are left to the full checker.
// The fast path of CborValue::FromBytes (cbor_fast_check.cc); cannot fail.
bool IsPlainDeterministicCbor(std::span<const std::uint8_t> bytes, const ValueLimits& limits);

// An actor ref's encoding: the tag head, a text head and the 21 NanoID characters.
inline constexpr std::size_t kCborActorRefBytes = 27;
std::array<std::uint8_t, kCborActorRefBytes> EncodeCborRef(const ActorRef& ref);

// A value held as its deterministic encoding (EncodeCbor's bytes). The actor runtime keeps
// messages and committed states this way, so a message goes from one guest's memory into
// another's without becoming a Value in between (docs/runtime.md "Messages and state").
// Equal values have equal bytes. Not synchronized: one thread at a time, like a Value.
class CborValue {
 public:
  CborValue();  // null

  // Errors: those of EncodeCbor.
  static Result<CborValue> Encode(const Value& value, const ValueLimits& limits);
  // `bytes` (only read during the call) checked by DecodeCbor's rules, with its errors, without
  // building a Value; bytes in another valid encoding (longer heads, unsorted keys, wider
  // floats) are re-encoded.
  static Result<CborValue> FromBytes(std::span<const std::uint8_t> bytes,
                                     const ValueLimits& limits);

  // The value. Cannot fail: the bytes were checked when this was made.
  Value ToValue() const;
  std::span<const std::uint8_t> bytes() const {
    return {reinterpret_cast<const std::uint8_t*>(bytes_.data()), bytes_.size()};
  }
  bool is_null() const { return bytes_.size() == 1 && bytes_[0] == '\xf6'; }

  friend bool operator==(const CborValue&, const CborValue&) = default;

 private:
  explicit CborValue(std::string bytes) : bytes_(std::move(bytes)) {}
  std::string bytes_;  // short values (up to 15 bytes) need no allocation
};

}  // namespace reef
