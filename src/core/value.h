// Value: Reef's portable data model (DESIGN.md "Data model"). Actor state, messages and
// everything that crosses the guest edge (CBOR, core/cbor.h) or the network edge (JSON,
// core/json.h) is a Value:
//
//   null | bool | int (int64) | float (finite float64) | string (UTF-8) | list | record
//   (UTF-8 string keys, kept sorted) | actor ref (21-character NanoID)
//
// Values are plain, cheap-to-move value types with deep copy and deep equality. Size limits
// (depth, nodes, string bytes) are not enforced here but by CheckLimits (core/limits.h) and
// by every codec.
//
// Thread ownership: plain value type; caller synchronizes access to a shared instance.
#pragma once

#include <array>
#include <bit>
#include <cassert>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/ids.h"
#include "core/status.h"

namespace reef {

// A reference to an actor: a validated 21-character NanoID (alphabet A-Za-z0-9_-), stable
// across restarts. Stored inline (no allocation). Ordered and compared by its characters.
class ActorRef {
 public:
  // Parses `text` as an actor ref. Errors: InvalidArgument naming the broken rule (length or
  // alphabet, see ValidateNanoId).
  static Result<ActorRef> Parse(std::string_view text);
  // A fresh random actor ref (NewNanoId), never one that starts with kReplyAddressPrefix.
  // Errors: Unavailable when the CSPRNG fails.
  static Result<ActorRef> Generate();
  // A fresh reply address: kReplyAddressPrefix and 19 random characters. The actor runtime
  // sends a call's request from one (docs/runtime.md "Calls between actors"); its shape alone
  // tells that a send to it is a reply, whether the call is still waiting or not.
  // Errors: Unavailable when the CSPRNG fails.
  static Result<ActorRef> GenerateReplyAddress();
  // The first characters of every reply address, and of no generated actor ref.
  static constexpr std::string_view kReplyAddressPrefix = "__";
  bool is_reply_address() const { return str().starts_with(kReplyAddressPrefix); }

  // The 21 characters of the NanoID; valid as long as this ActorRef lives.
  std::string_view str() const { return {id_.data(), id_.size()}; }

  bool operator==(const ActorRef&) const = default;
  auto operator<=>(const ActorRef&) const = default;

 private:
  explicit ActorRef(std::string_view valid_id);
  std::array<char, kNanoIdLength> id_{};
};

// Hashes an actor ref's characters, for unordered containers keyed by ActorRef: three
// overlapping 8-byte words (every character counts) mixed by multiplication, a few
// instructions instead of a byte loop (refs are looked up several times per message).
struct ActorRefHash {
  std::size_t operator()(const ActorRef& ref) const noexcept {
    static_assert(kNanoIdLength == 21);
    const char* id = ref.str().data();
    std::uint64_t a = 0, b = 0, c = 0;
    std::memcpy(&a, id, 8);
    std::memcpy(&b, id + 8, 8);
    std::memcpy(&c, id + 13, 8);
    std::uint64_t h = (a * 0x9e3779b97f4a7c15ULL) ^ std::rotl(b * 0xc2b2ae3d27d4eb4fULL, 23) ^
                      std::rotl(c * 0x165667b19e3779f9ULL, 43);
    return static_cast<std::size_t>(h ^ (h >> 29));
  }
};

class Value;

// The items of a list value, in order.
using List = std::vector<Value>;
// The fields of a record value: UTF-8 keys in bytewise order, each key at most once.
using Record = std::map<std::string, Value, std::less<>>;

// The kind of a Value; the enumerators' order is the order of Value's alternatives.
enum class Kind : std::uint8_t { kNull, kBool, kInt, kFloat, kString, kList, kRecord, kActorRef };

// Stable lowercase name of `kind`, used in error messages: "null", "bool", "int", "float",
// "string", "list", "record", "actor_ref".
std::string_view KindName(Kind kind);

class Value {
 public:
  // The null value.
  Value() = default;

  // The null value (same as Value()).
  static Value Null() { return Value(); }
  static Value Bool(bool b) { return Value(Storage(std::in_place_index<1>, b)); }
  static Value Int(std::int64_t i) { return Value(Storage(std::in_place_index<2>, i)); }
  // REQUIRES: `f` is finite (no NaN, no infinity); asserted in debug builds and rejected by
  // every encoder.
  static Value Float(double f);
  // REQUIRES: `s` is well-formed UTF-8; asserted in debug builds and rejected by every
  // encoder.
  static Value String(std::string s);
  static Value ListOf(List items) {
    return Value(Storage(std::in_place_index<5>, std::move(items)));
  }
  static Value RecordOf(Record fields) {
    return Value(Storage(std::in_place_index<6>, std::move(fields)));
  }
  static Value Ref(ActorRef ref) { return Value(Storage(std::in_place_index<7>, ref)); }

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  // KindName(kind()).
  std::string_view kind_name() const { return KindName(kind()); }

  bool is_null() const { return kind() == Kind::kNull; }
  bool is_bool() const { return kind() == Kind::kBool; }
  bool is_int() const { return kind() == Kind::kInt; }
  bool is_float() const { return kind() == Kind::kFloat; }
  bool is_string() const { return kind() == Kind::kString; }
  bool is_list() const { return kind() == Kind::kList; }
  bool is_record() const { return kind() == Kind::kRecord; }
  bool is_actor_ref() const { return kind() == Kind::kActorRef; }

  // Accessors. REQUIRES: kind() is the accessor's kind (asserted in debug builds).
  bool as_bool() const { return Get<1>(); }
  std::int64_t as_int() const { return Get<2>(); }
  double as_float() const { return Get<3>(); }
  const std::string& as_string() const { return Get<4>(); }
  const List& as_list() const { return Get<5>(); }
  List& as_list() { return Get<5>(); }
  const Record& as_record() const { return Get<6>(); }
  Record& as_record() { return Get<6>(); }
  const ActorRef& as_actor_ref() const { return Get<7>(); }

  // Deep equality: same kind and equal contents. Floats compare by bit pattern, so
  // -0.0 != 0.0; equal values have identical deterministic encodings.
  bool operator==(const Value& other) const;

 private:
  using Storage =
      std::variant<std::monostate, bool, std::int64_t, double, std::string, List, Record, ActorRef>;
  explicit Value(Storage v) : v_(std::move(v)) {}

  template <std::size_t I>
  const std::variant_alternative_t<I, Storage>& Get() const {
    assert(v_.index() == I);
    return *std::get_if<I>(&v_);
  }
  template <std::size_t I>
  std::variant_alternative_t<I, Storage>& Get() {
    assert(v_.index() == I);
    return *std::get_if<I>(&v_);
  }

  Storage v_;
};

}  // namespace reef
