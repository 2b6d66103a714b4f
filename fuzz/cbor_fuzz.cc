// Fuzzes DecodeCbor: any input must decode to a value within the limits or fail with a Status;
// a decoded value must re-encode, and the re-encoding must decode to the same value and be
// a fixed point of encode(decode(.)) (deterministic encoding).
#include <cstddef>
#include <cstdint>
#include <span>

#include "core/cbor.h"
#include "core/limits.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const reef::ValueLimits limits;
  auto value = reef::DecodeCbor(std::span(data, size), limits);
  if (!value.ok()) return 0;
  FUZZ_CHECK(reef::CheckLimits(*value, limits).ok());
  auto bytes = reef::EncodeCbor(*value, limits);
  FUZZ_CHECK(bytes.ok());
  auto again = reef::DecodeCbor(*bytes, limits);
  FUZZ_CHECK(again.ok() && *again == *value);
  auto bytes_again = reef::EncodeCbor(*again, limits);
  FUZZ_CHECK(bytes_again.ok() && *bytes_again == *bytes);
  return 0;
}
