// LinearMemory: GuestMemory over one contiguous memory, for the tiers whose memory 0 is a
// plain byte array (its base may move when it grows). A tier gives the current base and size;
// the bounds checks and their errors are the same on every tier.
//
// Thread ownership: that of the instance that implements it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"
#include "wasm/engine.h"

namespace reef::wasm::detail {

class LinearMemory : public GuestMemory {
 public:
  uint64_t size() const override { return has_memory() ? byte_size() : 0; }
  Result<std::vector<uint8_t>> Read(uint32_t ptr, uint32_t len) const override;
  Result<std::span<const uint8_t>> View(uint32_t ptr, uint32_t len) const override;
  Status Write(uint32_t ptr, std::span<const uint8_t> bytes) override;

 protected:
  virtual bool has_memory() const = 0;
  virtual uint8_t* base() const = 0;  // REQUIRES: has_memory()
  virtual uint64_t byte_size() const = 0;
  // Called after Write copied `len` bytes to [ptr, ptr + len) (inside the memory), for a tier
  // that keeps track of what was written since its last reset.
  virtual void Written(uint32_t /*ptr*/, uint32_t /*len*/) {}

 private:
  // base() + ptr when [ptr, ptr + len) lies inside the memory. Errors: FailedPrecondition
  // without a memory; InvalidArgument "guest buffer [a, b) outside memory of N bytes".
  Result<uint8_t*> Span(uint32_t ptr, uint32_t len) const;
};

}  // namespace reef::wasm::detail
