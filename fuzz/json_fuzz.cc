// Fuzzes ValueFromJson: any text must parse to a value within the limits or fail with a
// Status; a parsed value must serialize, and the text must parse back to the same value and
// serialize to the same text again.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/json.h"
#include "core/limits.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const reef::ValueLimits limits;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto value = reef::ValueFromJson(text, limits);
  if (!value.ok()) return 0;
  FUZZ_CHECK(reef::CheckLimits(*value, limits).ok());
  auto out = reef::ValueToJsonText(*value, limits);
  FUZZ_CHECK(out.ok());
  auto again = reef::ValueFromJson(*out, limits);
  FUZZ_CHECK(again.ok() && *again == *value);
  auto out_again = reef::ValueToJsonText(*again, limits);
  FUZZ_CHECK(out_again.ok() && *out_again == *out);
  return 0;
}
