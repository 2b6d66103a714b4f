#include "core/json.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "core/utf8.h"

namespace reef {
namespace {

using nlohmann::json;

constexpr std::string_view kActorMarker = "$actor";
constexpr std::string_view kRecordMarker = "$record";

// Appends "/<token>" to a JSON Pointer (RFC 6901): "~" becomes "~0", "/" becomes "~1".
void AppendPointerToken(std::string& pointer, std::string_view token) {
  pointer += '/';
  for (char c : token) {
    if (c == '~') {
      pointer += "~0";
    } else if (c == '/') {
      pointer += "~1";
    } else {
      pointer += c;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Reading, pass 1: JSON -> raw tree. An nlohmann SAX handler that builds a Value tree with
// objects as plain records (markers not yet interpreted). Markers make the JSON at most twice
// as deep and twice as large as the Value it denotes, so bounds of twice the limits keep
// memory and recursion bounded while parsing without rejecting any valid input; exact limits
// are checked on the interpreted Value.

class RawBuilder {
 public:
  explicit RawBuilder(const ValueLimits& limits) : limits_(limits) {}

  // The raw tree, once the parse succeeded.
  Value TakeRoot() { return std::move(*root_); }
  // The first error a callback found (parse errors included); OK if none.
  const Status& error() const { return error_; }

  bool null() { return Add(Value::Null()); }
  bool boolean(bool b) { return Add(Value::Bool(b)); }
  bool number_integer(json::number_integer_t i) { return Add(Value::Int(i)); }
  bool number_unsigned(json::number_unsigned_t u) {
    if (Status s = CheckJsonInteger(u); !s.ok()) return Fail(Invalid(s.message()));
    return Add(Value::Int(static_cast<std::int64_t>(u)));
  }
  bool number_float(json::number_float_t d, const json::string_t& literal) {
    if (Status s = CheckJsonFloat(d, literal); !s.ok()) return Fail(Invalid(s.message()));
    return Add(Value::Float(d));
  }
  bool string(json::string_t& s) {
    if (!IsValidUtf8(s)) return Fail(Invalid("string is not valid UTF-8"));
    return Add(Value::String(std::move(s)));
  }
  bool binary(json::binary_t&) { return Fail(Invalid("binary values are not supported")); }

  bool start_object(std::size_t) { return Open(Value::RecordOf({})); }
  bool key(json::string_t& k) {
    Frame& top = stack_.back();
    if (!IsValidUtf8(k)) return Fail(Invalid("object key is not valid UTF-8"));
    if (top.container.as_record().contains(k)) {
      top.key = std::move(k);
      return Fail(Invalid("duplicate object key"));
    }
    top.key = std::move(k);
    return true;
  }
  bool end_object() { return Close(); }
  bool start_array(std::size_t) { return Open(Value::ListOf({})); }
  bool end_array() { return Close(); }

  bool parse_error(std::size_t position, const std::string& token, const json::exception& e) {
    if (e.id == kJsonNumberOverflow) {  // a float literal past float64: name the number rule
      return Fail(
          Status::InvalidArgument(fmt::format("invalid JSON at byte offset {}: {}", position,
                                              CheckJsonFloat(HUGE_VAL, token).message())));
    }
    std::string what = e.what();
    if (const auto bracket = what.find("] "); what.starts_with("[json.") && bracket != what.npos) {
      what.erase(0, bracket + 2);
    }
    return Fail(Status::InvalidArgument("invalid JSON at byte offset " + std::to_string(position) +
                                        ": " + what));
  }

 private:
  struct Frame {
    Value container;  // a list or a record
    std::string key;  // of the next field, when `container` is a record
  };

  // JSON Pointer (RFC 6901) of the place being filled.
  std::string Pointer() const {
    std::string out;
    for (const Frame& f : stack_) {
      AppendPointerToken(
          out, f.container.is_list() ? std::to_string(f.container.as_list().size()) : f.key);
    }
    return out;
  }

  Status Invalid(std::string_view what) const {
    const std::string where = Pointer();
    return Status::InvalidArgument("invalid JSON value at " + (where.empty() ? "/" : where) + ": " +
                                   std::string(what));
  }

  bool Fail(Status s) {
    if (error_.ok()) error_ = std::move(s);
    return false;
  }

  bool CountNode() {
    if (++raw_nodes_ / 2 > limits_.max_nodes) return Fail(NodeLimitExceeded(limits_));
    return true;
  }

  bool Add(Value v) {
    if (!CountNode()) return false;
    if (stack_.empty()) {
      root_ = std::move(v);
    } else if (Frame& top = stack_.back(); top.container.is_list()) {
      top.container.as_list().push_back(std::move(v));
    } else {
      top.container.as_record().emplace(std::move(top.key), std::move(v));
    }
    return true;
  }

  bool Open(Value container) {
    if (!CountNode()) return false;
    // Containers of a Value sit at depths 0..max_depth; each may be wrapped in a "$record"
    // object and the innermost may hold an "$actor" object: 2 * (max_depth + 1) + 1 levels.
    if (stack_.size() / 2 > limits_.max_depth + 1) return Fail(DepthLimitExceeded(limits_));
    stack_.push_back(Frame{std::move(container), {}});
    return true;
  }

  bool Close() {
    Value done = std::move(stack_.back().container);
    stack_.pop_back();
    --raw_nodes_;  // counted in Open already
    return Add(std::move(done));
  }

  const ValueLimits& limits_;
  std::vector<Frame> stack_;
  std::optional<Value> root_;
  std::size_t raw_nodes_ = 0;
  Status error_;
};

// Feeds an nlohmann DOM to `b` as if it were being parsed; false as soon as `b` fails.
bool Walk(const json& j, RawBuilder& b) {
  switch (j.type()) {
    case json::value_t::null:
      return b.null();
    case json::value_t::boolean:
      return b.boolean(j.get<bool>());
    case json::value_t::number_integer:
      return b.number_integer(j.get<json::number_integer_t>());
    case json::value_t::number_unsigned:
      return b.number_unsigned(j.get<json::number_unsigned_t>());
    case json::value_t::number_float: {
      static const json::string_t kFloatLiteral = "0.0";  // stored as a float: never an int
      return b.number_float(j.get<json::number_float_t>(), kFloatLiteral);
    }
    case json::value_t::string: {
      json::string_t s = j.get<json::string_t>();
      return b.string(s);
    }
    case json::value_t::array:
      if (!b.start_array(j.size())) return false;
      for (const json& item : j) {
        if (!Walk(item, b)) return false;
      }
      return b.end_array();
    case json::value_t::object:
      if (!b.start_object(j.size())) return false;
      for (const auto& [k, v] : j.items()) {
        json::string_t key = k;
        if (!b.key(key) || !Walk(v, b)) return false;
      }
      return b.end_object();
    case json::value_t::binary: {
      json::binary_t bin;
      return b.binary(bin);
    }
    case json::value_t::discarded:
      break;
  }
  json::binary_t none;
  return b.binary(none);
}

// ---------------------------------------------------------------------------------------------
// Reading, pass 2: raw tree -> Value, interpreting markers top-down. `literal` is true for the
// object inside a "$record" marker: its own keys are not markers.

// One step of the path from the root to the value being interpreted; a chain of these on the
// stack becomes a JSON Pointer only when an error needs it.
struct PathStep {
  const PathStep* parent;
  std::string_view key;  // a record key, or empty with `index` set for a list item
  std::optional<std::size_t> index;
};

std::string PointerOf(const PathStep* step) {
  if (step == nullptr) return "";
  std::string out = PointerOf(step->parent);
  AppendPointerToken(out, step->index ? std::to_string(*step->index) : std::string(step->key));
  return out;
}

Status MarkerError(const PathStep* path, std::string_view what) {
  const std::string pointer = PointerOf(path);
  return Status::InvalidArgument("invalid JSON value at " + (pointer.empty() ? "/" : pointer) +
                                 ": " + std::string(what));
}

// Replaces the markers in `v` (a raw tree) by what they stand for, in place.
Status Interpret(Value& v, bool literal, const PathStep* path) {
  if (v.is_list()) {
    List& items = v.as_list();
    for (std::size_t i = 0; i < items.size(); ++i) {
      const PathStep step{path, {}, i};
      REEF_RETURN_IF_ERROR(Interpret(items[i], false, &step));
    }
    return Status::Ok();
  }
  if (!v.is_record()) return Status::Ok();
  Record& fields = v.as_record();
  if (!literal && fields.size() == 1) {
    auto& [key, inner] = *fields.begin();
    if (key == kActorMarker) {
      if (!inner.is_string()) {
        return MarkerError(
            path, "\"$actor\" marker needs a NanoID string, got " + std::string(inner.kind_name()));
      }
      auto ref = ActorRef::Parse(inner.as_string());
      if (!ref.ok()) return MarkerError(path, "\"$actor\" marker: " + ref.status().message());
      v = Value::Ref(*ref);
      return Status::Ok();
    }
    if (key == kRecordMarker) {
      if (!inner.is_record()) {
        return MarkerError(
            path, "\"$record\" marker needs an object, got " + std::string(inner.kind_name()));
      }
      const PathStep step{path, kRecordMarker, std::nullopt};
      REEF_RETURN_IF_ERROR(Interpret(inner, true, &step));
      Value literal_record = std::move(inner);
      v = std::move(literal_record);
      return Status::Ok();
    }
  }
  for (auto& [key, field] : fields) {
    const PathStep step{path, key, std::nullopt};
    REEF_RETURN_IF_ERROR(Interpret(field, false, &step));
  }
  return Status::Ok();
}

Result<Value> Finish(RawBuilder& builder, bool parsed, const ValueLimits& limits) {
  if (!parsed) {
    if (!builder.error().ok()) return builder.error();
    return Status::InvalidArgument("invalid JSON");
  }
  Value v = builder.TakeRoot();
  REEF_RETURN_IF_ERROR(Interpret(v, false, nullptr));
  REEF_RETURN_IF_ERROR(CheckLimits(v, limits));
  return v;
}

// ---------------------------------------------------------------------------------------------
// Writing

bool LooksLikeMarker(const Record& fields) {
  return fields.size() == 1 &&
         (fields.begin()->first == kActorMarker || fields.begin()->first == kRecordMarker);
}

Status CheckEncodable(const Value& v) {
  switch (v.kind()) {
    case Kind::kFloat:
      if (!std::isfinite(v.as_float())) {
        return Status::InvalidArgument("cannot encode a non-finite float (NaN or infinity)");
      }
      return Status::Ok();
    case Kind::kString:
      if (!IsValidUtf8(v.as_string())) {
        return Status::InvalidArgument("cannot encode a string that is not UTF-8");
      }
      return Status::Ok();
    case Kind::kList:
      for (const Value& item : v.as_list()) REEF_RETURN_IF_ERROR(CheckEncodable(item));
      return Status::Ok();
    case Kind::kRecord:
      for (const auto& [key, field] : v.as_record()) {
        if (!IsValidUtf8(key)) {
          return Status::InvalidArgument("cannot encode a record key that is not UTF-8");
        }
        REEF_RETURN_IF_ERROR(CheckEncodable(field));
      }
      return Status::Ok();
    default:
      return Status::Ok();
  }
}

}  // namespace

Status CheckJsonInteger(uint64_t value) {
  if (value <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return Status::Ok();
  return Status::InvalidArgument(fmt::format(
      "integer {} is outside the int64 range (JSON numbers must be exact int64 or finite "
      "float64; send larger numbers as strings)",
      value));
}

Status CheckJsonFloat(double value, std::string_view literal) {
  if (literal.find_first_of(".eE") == std::string_view::npos) {
    return Status::InvalidArgument(fmt::format(
        "integer {} is outside the int64 range (JSON numbers must be exact int64 or finite "
        "float64; send larger numbers as strings)",
        literal));
  }
  if (!std::isfinite(value)) {
    return Status::InvalidArgument(
        fmt::format("number {} is outside the float64 range (JSON numbers must be exact int64 "
                    "or finite float64)",
                    literal));
  }
  // The mantissa's digits (before any exponent): a nonzero one read as 0 is an underflow.
  std::string_view mantissa = literal.substr(0, literal.find_first_of("eE"));
  bool nonzero = mantissa.find_first_of("123456789") != std::string_view::npos;
  if (value == 0 && nonzero) {
    return Status::InvalidArgument(
        fmt::format("number {} is too close to zero for a float64: it would become 0 (JSON "
                    "floats must be finite float64; the smallest is 4.9406564584124654e-324)",
                    literal));
  }
  return Status::Ok();
}

Result<Value> ValueFromJson(std::string_view text, const ValueLimits& limits) {
  if (text.size() > limits.max_json_bytes) {
    return Status::LimitExceeded(
        "JSON text of " + std::to_string(text.size()) +
        " bytes exceeds limit max_json_bytes=" + std::to_string(limits.max_json_bytes));
  }
  RawBuilder builder(limits);
  bool parsed = false;
  try {
    parsed = json::sax_parse(text.begin(), text.end(), &builder, json::input_format_t::json,
                             /*strict=*/true, /*ignore_comments=*/false);
  } catch (const std::exception& e) {
    return Status::InvalidArgument(std::string("invalid JSON: ") + e.what());
  }
  return Finish(builder, parsed, limits);
}

Result<Value> ValueFromJson(const nlohmann::json& json, const ValueLimits& limits) {
  RawBuilder builder(limits);
  bool parsed = false;
  try {
    parsed = Walk(json, builder);
  } catch (const std::exception& e) {
    return Status::InvalidArgument(std::string("invalid JSON: ") + e.what());
  }
  return Finish(builder, parsed, limits);
}

nlohmann::json ValueToJson(const Value& value) {
  switch (value.kind()) {
    case Kind::kNull:
      return nullptr;
    case Kind::kBool:
      return value.as_bool();
    case Kind::kInt:
      return value.as_int();
    case Kind::kFloat:
      return value.as_float();
    case Kind::kString:
      return value.as_string();
    case Kind::kList: {
      json out = json::array();
      for (const Value& item : value.as_list()) out.push_back(ValueToJson(item));
      return out;
    }
    case Kind::kRecord: {
      json out = json::object();
      for (const auto& [key, field] : value.as_record()) out[key] = ValueToJson(field);
      if (!LooksLikeMarker(value.as_record())) return out;
      json escaped = json::object();
      escaped[std::string(kRecordMarker)] = std::move(out);
      return escaped;
    }
    case Kind::kActorRef: {
      json out = json::object();
      out[std::string(kActorMarker)] = std::string(value.as_actor_ref().str());
      return out;
    }
  }
  return nullptr;
}

Result<std::string> ValueToJsonText(const Value& value, const ValueLimits& limits) {
  REEF_RETURN_IF_ERROR(CheckLimits(value, limits));
  REEF_RETURN_IF_ERROR(CheckEncodable(value));
  std::string text;
  try {
    text = ValueToJson(value).dump();
  } catch (const std::exception& e) {
    return Status::InvalidArgument(std::string("cannot encode value as JSON: ") + e.what());
  }
  if (text.size() > limits.max_json_bytes) {
    return Status::LimitExceeded(
        "JSON text of " + std::to_string(text.size()) +
        " bytes exceeds limit max_json_bytes=" + std::to_string(limits.max_json_bytes));
  }
  return text;
}

}  // namespace reef
