// LinearMemory (detail/linear_memory.h).
#include "wasm/detail/linear_memory.h"

#include <fmt/format.h>

#include <cstring>
#include <limits>

namespace reef::wasm::detail {

Result<uint8_t*> LinearMemory::Span(uint32_t ptr, uint32_t len) const {
  if (!has_memory()) return Status::FailedPrecondition("module has no memory");
  const uint64_t end = uint64_t{ptr} + len;
  if (end > byte_size()) {
    return Status::InvalidArgument(
        fmt::format("guest buffer [{}, {}) outside memory of {} bytes", ptr, end, byte_size()));
  }
  return base() + ptr;
}

Result<std::vector<uint8_t>> LinearMemory::Read(uint32_t ptr, uint32_t len) const {
  REEF_ASSIGN_OR_RETURN(uint8_t * data, Span(ptr, len));
  return std::vector<uint8_t>(data, data + len);
}

Result<std::span<const uint8_t>> LinearMemory::View(uint32_t ptr, uint32_t len) const {
  REEF_ASSIGN_OR_RETURN(uint8_t * data, Span(ptr, len));
  return std::span<const uint8_t>(data, len);
}

Status LinearMemory::Write(uint32_t ptr, std::span<const uint8_t> bytes) {
  if (bytes.size() > std::numeric_limits<uint32_t>::max()) {
    return Status::InvalidArgument("buffer larger than 4 GiB");
  }
  REEF_ASSIGN_OR_RETURN(uint8_t * data, Span(ptr, static_cast<uint32_t>(bytes.size())));
  if (bytes.empty()) return Status::Ok();
  std::memcpy(data, bytes.data(), bytes.size());
  Written(ptr, static_cast<uint32_t>(bytes.size()));
  return Status::Ok();
}

}  // namespace reef::wasm::detail
