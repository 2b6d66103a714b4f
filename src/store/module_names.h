// Module names: the three module kinds and the naming rules of the module store (module
// names, environment variable keys, crypto key scopes). Spec 000, "Module lifecycle": modules
// are addressed as /{kind plural}/{name} (POST /commands/{name}/upload).
//
// Thread ownership: pure functions and constants; any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/status.h"

namespace reef::store {

// The three event-sourced module kinds (DESIGN.md glossary).
enum class ModuleKind : uint8_t { kCommand, kProjector, kEffect };

// "command", "projector", "effect" (the modules.module_type column); "unknown" for a value
// outside the enum.
std::string_view ModuleKindName(ModuleKind kind);
// "commands", "projectors", "effects": the URL segment (POST /commands/{name}/upload);
// "unknown" for a value outside the enum.
std::string_view ModuleKindPlural(ModuleKind kind);
// The kind whose plural is `plural` (exact, lowercase).
// Errors: InvalidArgument listing the three plurals.
Result<ModuleKind> ParseModuleKindPlural(std::string_view plural);
// The kind whose name is `name` (exact, lowercase: "command", ...).
// Errors: InvalidArgument listing the three names.
Result<ModuleKind> ParseModuleKindName(std::string_view name);
// OK for the three enumerators; InvalidArgument for any other value.
Status ValidateModuleKind(ModuleKind kind);

// Longest module name, in bytes.
inline constexpr std::size_t kMaxModuleNameBytes = 64;
// Longest version text, in bytes (SemVer itself has no bound).
inline constexpr std::size_t kMaxVersionBytes = 128;
// Longest environment variable key, in bytes.
inline constexpr std::size_t kMaxEnvKeyBytes = 128;
// Longest crypto key scope, in bytes.
inline constexpr std::size_t kMaxKeyScopeBytes = 256;
// A crypto key id: this many lowercase hex characters (128 random bits).
inline constexpr std::size_t kKeyIdLength = 32;

// OK when `name` matches ^[a-z0-9][a-z0-9_-]{0,63}$; otherwise InvalidArgument naming the rule.
Status ValidateModuleName(std::string_view name);
// OK when `key` matches ^[A-Za-z_][A-Za-z0-9_]{0,127}$; otherwise InvalidArgument naming the
// rule.
Status ValidateEnvKey(std::string_view key);
// OK when `scope` is 1..kMaxKeyScopeBytes bytes of well-formed UTF-8 (RFC 3629) without
// control characters (U+0000..U+001F, U+007F..U+009F); otherwise InvalidArgument naming the
// rule.
Status ValidateKeyScope(std::string_view scope);

}  // namespace reef::store
