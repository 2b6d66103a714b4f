// Source: the vocabulary of the source store — source paths, file kinds and source identities.
//
// A source path names one working source, e.g. "actors/counter". Paths are canonical so that
// one file has exactly one spelling (spec 001, "Source files have canonical case-sensitive
// relative paths ... rejecting traversal and empty components"). The language is not in the
// path: it is the stored file kind (`c`, `wat` or `wasm`).
//
// Rules for a path (ValidateSourcePath checks them in this order and names the rule broken):
//   1. 1..kMaxSourcePathBytes bytes;
//   2. no leading '/' and no trailing '/';
//   3. '/'-separated components, none empty ("a//b");
//   4. no "." or ".." component (no traversal);
//   5. every byte of a component is one of A-Z a-z 0-9 '_' '-' (so no '.', hence no file
//      extension, no spaces, no backslashes, no non-ASCII); case is significant;
//   6. a component does not start with '-' (so no path reads like a command-line option).
//
// Thread ownership: pure functions and plain values; any thread.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace reef::code {

// Longest source path, in bytes.
inline constexpr std::size_t kMaxSourcePathBytes = 256;
// Largest source text (or wasm binary), in bytes (1 MiB).
inline constexpr std::size_t kMaxSourceBytes = 1u << 20;

// The stored file kind of a source: which compiler turns it into a module.
enum class SourceKind {
  kC,     // C11 for wasm32 with the C SDK, compiled by clang (compiler.h)
  kWat,   // WebAssembly text format, compiled in-process by wabt
  kWasm,  // a WebAssembly binary built elsewhere (AssemblyScript, Rust, ...), validated by wabt
};

// Stable lowercase name: "c", "wat" or "wasm" (protocol, CLI, the store's rows, the identity
// domain).
std::string_view SourceKindName(SourceKind kind);

// Parses "c", "wat" or "wasm" (exactly, lowercase).
// Errors: InvalidArgument naming the accepted kinds.
Result<SourceKind> ParseSourceKind(std::string_view name);

// OK when `path` follows rules 1-6 above.
// Errors: InvalidArgument "source path '<path>': <rule broken>" (LimitExceeded for rule 1's
// length bound).
Status ValidateSourcePath(std::string_view path);

// OK when `bytes` is at most kMaxSourceBytes long. Any bytes are accepted (no encoding check):
// text is stored and returned exactly, and invalid source is kept for diagnostics.
// Errors: LimitExceeded naming the limit.
Status ValidateSourceSize(std::string_view bytes);

// The identity of one source text: lowercase hex SHA-256 (64 characters) over
//   "reef-source:v1\n" + SourceKindName(kind) + "\n" + bytes
// i.e. a versioned domain string, the file kind, and the exact bytes (no normalization of
// whitespace, line endings or comments: textually different source has a different identity;
// spec 001 "source identity ... versioned domain").
std::string SourceId(SourceKind kind, std::string_view bytes);

// True when `id` looks like a SourceId: 64 lowercase hex characters.
bool IsValidSourceId(std::string_view id);

}  // namespace reef::code
