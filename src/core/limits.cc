#include "core/limits.h"

#include <string>

namespace reef {

Status DepthLimitExceeded(const ValueLimits& limits) {
  return Status::LimitExceeded("value depth exceeds limit max_depth=" +
                               std::to_string(limits.max_depth));
}

Status NodeLimitExceeded(const ValueLimits& limits) {
  return Status::LimitExceeded("value node count exceeds limit max_nodes=" +
                               std::to_string(limits.max_nodes));
}

Status StringBytesLimitExceeded(const ValueLimits& limits) {
  return Status::LimitExceeded("value string and key bytes exceed limit max_string_bytes=" +
                               std::to_string(limits.max_string_bytes));
}

namespace {

struct Counter {
  const ValueLimits& limits;
  std::size_t nodes = 0;
  std::size_t string_bytes = 0;

  Status AddStringBytes(std::size_t n) {
    string_bytes += n;
    return string_bytes > limits.max_string_bytes ? StringBytesLimitExceeded(limits) : Status::Ok();
  }

  Status Visit(const Value& v, std::size_t depth) {
    if (depth > limits.max_depth) return DepthLimitExceeded(limits);
    if (++nodes > limits.max_nodes) return NodeLimitExceeded(limits);
    switch (v.kind()) {
      case Kind::kString:
        return AddStringBytes(v.as_string().size());
      case Kind::kList:
        for (const Value& item : v.as_list()) REEF_RETURN_IF_ERROR(Visit(item, depth + 1));
        return Status::Ok();
      case Kind::kRecord:
        for (const auto& [key, field] : v.as_record()) {
          REEF_RETURN_IF_ERROR(AddStringBytes(key.size()));
          REEF_RETURN_IF_ERROR(Visit(field, depth + 1));
        }
        return Status::Ok();
      default:
        return Status::Ok();
    }
  }
};

}  // namespace

Status CheckLimits(const Value& value, const ValueLimits& limits) {
  Counter counter{limits};
  return counter.Visit(value, 0);
}

}  // namespace reef
