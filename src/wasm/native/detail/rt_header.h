// The text of native/rt/wasm-rt.h, embedded at build time (CMake writes rt_header_text.cc),
// so the compiler can place it next to the generated C without a source tree.
//
// Thread ownership: constant; any thread.
#pragma once

#include <string_view>

namespace reef::wasm::native::detail {

extern const std::string_view kWasmRtHeaderText;

}  // namespace reef::wasm::native::detail
