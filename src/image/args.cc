// Strict readers for op arguments (image/detail/args.h).
#include "image/detail/args.h"

#include <fmt/format.h>

#include "core/json.h"

namespace reef::image::detail {

using json = nlohmann::json;

const json* Args::Find(std::string_view name) const {
  auto it = args_.find(name);
  return it == args_.end() ? nullptr : &*it;
}

bool Args::Has(std::string_view name) const {
  const json* value = Find(name);
  return value != nullptr && !value->is_null();
}

Status Args::Invalid(std::string_view name, std::string_view what) const {
  return Status::InvalidArgument(fmt::format("{}: argument '{}' {}", op_, name, what));
}

Status Args::OnlyKnown(std::span<const std::string_view> allowed) const {
  for (const auto& [key, value] : args_.items()) {
    bool known = false;
    for (std::string_view name : allowed) known = known || key == name;
    if (known) continue;
    std::string list;
    for (std::string_view name : allowed) list += (list.empty() ? "" : ", ") + std::string(name);
    return Status::InvalidArgument(fmt::format("{}: unknown argument '{}' (accepted: {})", op_, key,
                                               list.empty() ? "none" : list));
  }
  return Status::Ok();
}

Result<std::string> Args::String(std::string_view name) const {
  const json* value = Find(name);
  if (value == nullptr || value->is_null()) return Invalid(name, "is required");
  if (!value->is_string()) return Invalid(name, "must be a string");
  std::string text = value->get<std::string>();
  if (text.empty()) return Invalid(name, "must not be empty");
  return text;
}

Result<std::optional<std::string>> Args::OptionalString(std::string_view name) const {
  const json* value = Find(name);
  if (value == nullptr || value->is_null()) return std::optional<std::string>();
  if (!value->is_string()) return Invalid(name, "must be a string or null");
  return std::optional<std::string>(value->get<std::string>());
}

Result<std::optional<uint64_t>> Args::OptionalUint(std::string_view name, uint64_t min,
                                                   uint64_t max) const {
  const json* value = Find(name);
  if (value == nullptr || value->is_null()) return std::optional<uint64_t>();
  std::string range = fmt::format("must be an integer in {}..{}", min, max);
  if (!value->is_number_integer()) return Invalid(name, range);
  if (value->is_number_unsigned()) {
    uint64_t n = value->get<uint64_t>();
    if (n < min || n > max) return Invalid(name, fmt::format("{} (got {})", range, n));
    return std::optional<uint64_t>(n);
  }
  int64_t n = value->get<int64_t>();
  if (n < 0 || static_cast<uint64_t>(n) < min || static_cast<uint64_t>(n) > max) {
    return Invalid(name, fmt::format("{} (got {})", range, n));
  }
  return std::optional<uint64_t>(static_cast<uint64_t>(n));
}

Result<ActorRef> ParseActorArg(std::string_view text) {
  if (!text.empty() && text.front() == '@') text.remove_prefix(1);
  return ActorRef::Parse(text);
}

Result<ActorRef> Args::Actor(std::string_view name) const {
  const json* value = Find(name);
  if (value == nullptr || value->is_null()) return Invalid(name, "is required");
  if (!value->is_string()) {
    return Invalid(name, "must be an actor ref string (21-character NanoID, optional '@')");
  }
  auto ref = ParseActorArg(value->get<std::string>());
  if (!ref.ok()) return Invalid(name, "is not an actor ref: " + ref.status().message());
  return *ref;
}

// The optional string array `name` (absent or null = empty, at most `max` entries), each
// string parsed by `parse`. `what` names the element ("actor ref", "event kind name") and
// `bad` starts the message for an element that does not parse.
template <typename T, typename Parse>
Result<std::vector<T>> StringList(const Args& args, std::string_view op, std::string_view name,
                                  std::size_t max, std::string_view not_array,
                                  std::string_view not_string, std::string_view bad, Parse parse) {
  std::vector<T> items;
  const json* value = args.Find(name);
  if (value == nullptr || value->is_null()) return items;
  if (!value->is_array()) return args.Invalid(name, not_array);
  if (value->size() > max) {
    return Status::LimitExceeded(
        fmt::format("{}: argument '{}' has {} entries (max {})", op, name, value->size(), max));
  }
  for (const json& item : *value) {
    if (!item.is_string()) return args.Invalid(name, not_string);
    Result<T> parsed = parse(item.get<std::string>());
    if (!parsed.ok()) return args.Invalid(name, std::string(bad) + parsed.status().message());
    items.push_back(*parsed);
  }
  return items;
}

Result<std::vector<ActorRef>> Args::ActorList(std::string_view name, std::size_t max) const {
  return StringList<ActorRef>(*this, op_, name, max, "must be an array of actor refs",
                              "must be an array of actor ref strings", "holds a bad actor ref: ",
                              [](const std::string& text) { return ParseActorArg(text); });
}

Result<std::vector<actor::LifecycleKind>> Args::KindList(std::string_view name,
                                                         std::size_t max) const {
  return StringList<actor::LifecycleKind>(
      *this, op_, name, max, "must be an array of event kind names",
      "must be an array of event kind names", "holds an unknown kind: ",
      [](const std::string& text) { return actor::ParseLifecycleKind(text); });
}

Result<std::optional<actor::LogLevel>> Args::OptionalLevel(std::string_view name) const {
  const json* value = Find(name);
  if (value == nullptr || value->is_null()) return std::optional<actor::LogLevel>();
  if (!value->is_string()) return Invalid(name, "must be a level name string");
  auto level = actor::ParseLogLevel(value->get<std::string>());
  if (!level.ok()) return Invalid(name, "is not a level: " + level.status().message());
  return std::optional<actor::LogLevel>(*level);
}

Result<Value> Args::RequiredValue(std::string_view name, const ValueLimits& limits) const {
  const json* value = Find(name);
  if (value == nullptr) return Invalid(name, "is required (null is a value: pass it explicitly)");
  auto parsed = ValueFromJson(*value, limits);
  if (!parsed.ok()) return parsed.status().WithContext(fmt::format("{}: argument '{}'", op_, name));
  return std::move(parsed).value();
}

Result<std::vector<Value>> Args::ValueList(std::string_view name, std::size_t max,
                                           const ValueLimits& limits) const {
  const json* value = Find(name);
  if (value == nullptr || value->is_null()) return Invalid(name, "is required (an array)");
  if (!value->is_array()) return Invalid(name, "must be an array of values");
  if (value->size() > max) {
    return Status::LimitExceeded(
        fmt::format("{}: argument '{}' has {} entries (max {})", op_, name, value->size(), max));
  }
  std::vector<Value> values;
  values.reserve(value->size());
  for (std::size_t i = 0; i < value->size(); ++i) {
    auto parsed = ValueFromJson((*value)[i], limits);
    if (!parsed.ok()) {
      return parsed.status().WithContext(fmt::format("{}: argument '{}'[{}]", op_, name, i));
    }
    values.push_back(std::move(parsed).value());
  }
  return values;
}

}  // namespace reef::image::detail
