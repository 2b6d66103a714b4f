// BinaryCursor: reads the primitives of the wasm binary format (bytes, LEB128 integers,
// vector lengths, names, limits, constant expressions) for the pre-pass (wasm/binary_scan.h),
// within a window [pos, end) of a binary: a section, or a function body.
//
// Every read fails as InvalidArgument "<name>:<offset>: error: malformed <section> section:
// <what>", with the spec's words where it has some ("unexpected end", "integer too large").
//
// A scanner derives from it and moves the window (pos_, end_) and the section name itself.
//
// Thread ownership: caller synchronizes (one scan at a time).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "core/status.h"

namespace reef::wasm::detail {

class BinaryCursor {
 public:
  // Lifetime: `bytes` and `name` must outlive the cursor. The window starts as all of `bytes`.
  BinaryCursor(std::span<const uint8_t> bytes, std::string_view name)
      : bytes_(bytes), name_(name), end_(bytes.size()) {}

  // InvalidArgument for a malformed binary at byte `at`, naming the section being read.
  Status Malformed(size_t at, std::string_view what) const;
  // LimitExceeded when `count` > `limit`, naming `field` (a ModuleLimits member).
  Status Limit(size_t at, uint64_t count, std::string_view what, uint32_t limit,
               std::string_view field) const;

  Status Byte(uint8_t* out);
  // A value or reference type: one byte in the spec (wabt 1.0.32 would read a LEB128 here).
  Status ValType();
  Status Skip(uint64_t n);
  // A LEB128 integer of `bits` bits (32 or 64), signed or unsigned, checked as the spec says
  // (at most ceil(bits / 7) bytes, unused bits of the last byte zero or sign extension).
  Status Leb(unsigned bits, bool is_signed, uint64_t* out);
  Status U32(uint32_t* out);
  // A vector length: at most one entry per remaining byte of the window.
  Status Count(uint32_t* out, std::string_view what);
  // A name (length, then bytes); `out` points into the binary. UTF-8 is not checked.
  Status Name(std::string_view* out);
  // limits ::= flags:u8 min (max if flags & 1); 64-bit bounds when flags & 4.
  Status Limits();
  // A constant expression up to and including its `end`.
  Status ConstExpr();

  // Bytes left in the window.
  size_t remaining() const { return end_ - pos_; }

 protected:
  std::span<const uint8_t> bytes_;
  std::string_view name_;
  size_t pos_ = 0;
  size_t end_;  // end of the window: the module, a section or a function body
  std::string_view section_ = "module";
};

}  // namespace reef::wasm::detail
