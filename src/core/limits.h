// Limits: the configurable bounds on every Value and on the encoded buffers that carry one
// (DESIGN.md "Data model", docs/abi.md "Buffers and values"), plus the other named bounds of
// the data path. Every violation is a Status::LimitExceeded whose message names the limit and
// its configured value, e.g. "value depth exceeds limit max_depth=32".
//
// Thread ownership: plain values and pure functions; any thread.
#pragma once

#include <cstddef>

#include "core/status.h"
#include "core/value.h"

namespace reef {

// Bounds on one Value and on its encodings. The defaults are the ABI v1 defaults.
struct ValueLimits {
  // Deepest allowed nesting. The root is at depth 0; the items of a list and the fields of a
  // record are one deeper than the container. REQUIRES: at most 1,000 (codecs recurse).
  std::size_t max_depth = 32;
  // Most Values in one tree, the root included (record keys are not nodes).
  std::size_t max_nodes = 4096;
  // Most bytes of all strings plus all record keys together, in UTF-8 bytes. Actor refs do
  // not count (they are bounded by max_nodes).
  std::size_t max_string_bytes = 1 << 20;
  // Largest CBOR buffer accepted or produced at the guest edge, in bytes.
  std::size_t max_cbor_bytes = 4 << 20;
  // Largest JSON text accepted or produced at the network edge, in bytes.
  std::size_t max_json_bytes = 4 << 20;
};

// Bounds on one transition (one handler invocation's effects).
struct TransitionLimits {
  // Most `send` / `send_from` effects one transition may queue.
  std::size_t max_sends_per_transition = 4096;
  // Longest message one `log` import call may pass, in UTF-8 bytes.
  std::size_t max_log_message_bytes = 512;
};

// OK when `value` is within `limits`' max_depth, max_nodes and max_string_bytes; otherwise
// LimitExceeded naming the first limit found broken. Stops descending at the first violation,
// so it is safe on values of any size. Does not look at the encoded-size limits.
Status CheckLimits(const Value& value, const ValueLimits& limits);

// Builders of the LimitExceeded messages, shared by CheckLimits and the decoders so that each
// limit is always reported the same way.
Status DepthLimitExceeded(const ValueLimits& limits);
Status NodeLimitExceeded(const ValueLimits& limits);
Status StringBytesLimitExceeded(const ValueLimits& limits);

}  // namespace reef
