// Args: strict readers for one op's "args" object (internal to src/image). Every error is
// InvalidArgument (LimitExceeded for value limits) naming the op and the argument, so a
// client sees exactly which argument was wrong and what was expected.
//
// Thread ownership: a view of the request's args, valid during the op call only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "actor/guest_abi.h"
#include "actor/lifecycle_events.h"
#include "core/limits.h"
#include "core/status.h"
#include "core/value.h"

namespace reef::image::detail {

class Args {
 public:
  // Lifetime: `op` and `args` must outlive this object. REQUIRES: args is an object.
  Args(std::string_view op, const nlohmann::json& args) : op_(op), args_(args) {}

  // Errors: InvalidArgument naming the first argument not in `allowed` and listing them.
  Status OnlyKnown(std::span<const std::string_view> allowed) const;

  // True when `name` is present and not null.
  bool Has(std::string_view name) const;

  // A required non-empty string.
  Result<std::string> String(std::string_view name) const;
  // A string, or nullopt when absent or null.
  Result<std::optional<std::string>> OptionalString(std::string_view name) const;
  // A non-negative integer in min..max, or nullopt when absent or null.
  Result<std::optional<uint64_t>> OptionalUint(std::string_view name, uint64_t min,
                                               uint64_t max) const;
  // A required actor ref: a NanoID string with an optional leading '@'.
  Result<ActorRef> Actor(std::string_view name) const;
  // An optional array of actor refs (absent or null = empty), at most `max` entries.
  Result<std::vector<ActorRef>> ActorList(std::string_view name, std::size_t max) const;
  // An optional array of lifecycle kind names (absent or null = empty), at most `max`.
  Result<std::vector<actor::LifecycleKind>> KindList(std::string_view name, std::size_t max) const;
  // An optional log level name, or nullopt.
  Result<std::optional<actor::LogLevel>> OptionalLevel(std::string_view name) const;
  // A required value (null is a value: the key must be present), in its JSON form.
  // Errors: LimitExceeded for the value limits; InvalidArgument for the markers.
  Result<Value> RequiredValue(std::string_view name, const ValueLimits& limits) const;
  // A required array of values, at most `max` entries, each checked as RequiredValue.
  Result<std::vector<Value>> ValueList(std::string_view name, std::size_t max,
                                       const ValueLimits& limits) const;
  // The raw JSON of `name`, or nullptr when absent.
  const nlohmann::json* Find(std::string_view name) const;

  // InvalidArgument "<op>: argument '<name>' <what>".
  Status Invalid(std::string_view name, std::string_view what) const;

 private:
  std::string_view op_;
  const nlohmann::json& args_;
};

// Parses an actor ref as clients write it: 21 NanoID characters, optionally after '@'.
Result<ActorRef> ParseActorArg(std::string_view text);

}  // namespace reef::image::detail
