#include "core/status.h"

namespace reef {

std::string_view CodeName(Code code) {
  switch (code) {
#define REEF_X(name, text, http) \
  case Code::name:               \
    return text;
    REEF_STATUS_CODES(REEF_X)
#undef REEF_X
  }
  return "unknown";
}

std::optional<Code> CodeFromName(std::string_view name) {
#define REEF_X(code, text, http) \
  if (name == text) return Code::code;
  REEF_STATUS_CODES(REEF_X)
#undef REEF_X
  return std::nullopt;
}

int CodeHttpStatus(Code code) {
  switch (code) {
#define REEF_X(name, text, http) \
  case Code::name:               \
    return http;
    REEF_STATUS_CODES(REEF_X)
#undef REEF_X
  }
  return 500;
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  std::string out(CodeName(code_));
  out += ": ";
  out += message_;
  return out;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  std::string m(context);
  m += ": ";
  m += message_;
  return Status(code_, std::move(m));
}

}  // namespace reef
