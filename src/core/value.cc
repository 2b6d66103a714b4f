#include "core/value.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "core/utf8.h"

namespace reef {

ActorRef::ActorRef(std::string_view valid_id) {
  std::copy(valid_id.begin(), valid_id.end(), id_.begin());
}

Result<ActorRef> ActorRef::Parse(std::string_view text) {
  REEF_RETURN_IF_ERROR(ValidateNanoId(text));
  return ActorRef(text);
}

Result<ActorRef> ActorRef::Generate() {
  for (;;) {  // 1 in 4,096 NanoIDs has the reply addresses' prefix: draw again
    REEF_ASSIGN_OR_RETURN(std::string id, NewNanoId());
    if (!std::string_view(id).starts_with(kReplyAddressPrefix)) return ActorRef(id);
  }
}

Result<ActorRef> ActorRef::GenerateReplyAddress() {
  REEF_ASSIGN_OR_RETURN(std::string id, NewNanoId());
  id.replace(0, kReplyAddressPrefix.size(), kReplyAddressPrefix);
  return ActorRef(id);
}

std::string_view KindName(Kind kind) {
  static constexpr std::string_view kNames[] = {"null",   "bool", "int",    "float",
                                                "string", "list", "record", "actor_ref"};
  return kNames[static_cast<std::size_t>(kind)];
}

Value Value::Float(double f) {
  assert(std::isfinite(f));
  return Value(Storage(std::in_place_index<3>, f));
}

Value Value::String(std::string s) {
  assert(IsValidUtf8(s));
  return Value(Storage(std::in_place_index<4>, std::move(s)));
}

bool Value::operator==(const Value& other) const {
  if (v_.index() != other.v_.index()) return false;
  if (is_float()) {
    return std::bit_cast<std::uint64_t>(as_float()) ==
           std::bit_cast<std::uint64_t>(other.as_float());
  }
  return v_ == other.v_;
}

}  // namespace reef
