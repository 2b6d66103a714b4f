#include "store/module_names.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string>

#include "core/utf8.h"

namespace reef::store {
namespace {

// The kinds, one row each (STYLE.md: tables, not if-chains).
struct KindRow {
  ModuleKind kind;
  std::string_view name;
  std::string_view plural;
};
constexpr std::array<KindRow, 3> kKinds = {{
    {ModuleKind::kCommand, "command", "commands"},
    {ModuleKind::kProjector, "projector", "projectors"},
    {ModuleKind::kEffect, "effect", "effects"},
}};

const KindRow* FindKind(ModuleKind kind) {
  for (const KindRow& row : kKinds) {
    if (row.kind == kind) return &row;
  }
  return nullptr;
}

// `text` for an error message: quoted, cut after 80 bytes.
std::string Shown(std::string_view text) {
  if (text.size() <= 80) return fmt::format("'{}'", text);
  return fmt::format("'{}...' ({} bytes)", text.substr(0, 80), text.size());
}

bool IsLowerOrDigit(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}
bool IsLetterOrUnderscore(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

}  // namespace

std::string_view ModuleKindName(ModuleKind kind) {
  const KindRow* row = FindKind(kind);
  return row ? row->name : "unknown";
}

std::string_view ModuleKindPlural(ModuleKind kind) {
  const KindRow* row = FindKind(kind);
  return row ? row->plural : "unknown";
}

Result<ModuleKind> ParseModuleKindPlural(std::string_view plural) {
  for (const KindRow& row : kKinds) {
    if (row.plural == plural) return row.kind;
  }
  return Status::InvalidArgument(
      fmt::format("module kind {} is not one of commands, projectors, effects", Shown(plural)));
}

Result<ModuleKind> ParseModuleKindName(std::string_view name) {
  for (const KindRow& row : kKinds) {
    if (row.name == name) return row.kind;
  }
  return Status::InvalidArgument(
      fmt::format("module kind {} is not one of command, projector, effect", Shown(name)));
}

Status ValidateModuleKind(ModuleKind kind) {
  if (FindKind(kind) != nullptr) return Status::Ok();
  return Status::InvalidArgument(fmt::format(
      "module kind {} is not one of command, projector, effect", static_cast<int>(kind)));
}

Status ValidateModuleName(std::string_view name) {
  bool ok = !name.empty() && name.size() <= kMaxModuleNameBytes && IsLowerOrDigit(name[0]) &&
            std::all_of(name.begin(), name.end(),
                        [](char c) { return IsLowerOrDigit(c) || c == '_' || c == '-'; });
  if (ok) return Status::Ok();
  return Status::InvalidArgument(fmt::format(
      "module name {} must be 1 to {} characters of a-z, 0-9, '_' and '-', starting with a-z "
      "or 0-9 (^[a-z0-9][a-z0-9_-]{{0,63}}$)",
      Shown(name), kMaxModuleNameBytes));
}

Status ValidateEnvKey(std::string_view key) {
  bool ok = !key.empty() && key.size() <= kMaxEnvKeyBytes && IsLetterOrUnderscore(key[0]) &&
            std::all_of(key.begin(), key.end(),
                        [](char c) { return IsLetterOrUnderscore(c) || (c >= '0' && c <= '9'); });
  if (ok) return Status::Ok();
  return Status::InvalidArgument(fmt::format(
      "environment variable key {} must be 1 to {} characters of A-Z, a-z, 0-9 and '_', not "
      "starting with a digit (^[A-Za-z_][A-Za-z0-9_]{{0,127}}$)",
      Shown(key), kMaxEnvKeyBytes));
}

Status ValidateKeyScope(std::string_view scope) {
  if (scope.empty() || scope.size() > kMaxKeyScopeBytes) {
    return Status::InvalidArgument(fmt::format(
        "crypto key scope of {} bytes: it must be 1 to {} bytes", scope.size(), kMaxKeyScopeBytes));
  }
  if (auto bad = FindInvalidUtf8(scope)) {
    return Status::InvalidArgument(
        fmt::format("crypto key scope is not UTF-8 (ill-formed at byte {})", *bad));
  }
  for (std::size_t i = 0; i < scope.size(); ++i) {
    auto byte = static_cast<uint8_t>(scope[i]);
    auto next = i + 1 < scope.size() ? static_cast<uint8_t>(scope[i + 1]) : uint8_t{0};
    // C0 controls and DEL are one byte; C1 controls (U+0080..U+009F) are C2 80..C2 9F.
    if (byte < 0x20 || byte == 0x7f || (byte == 0xc2 && next >= 0x80 && next <= 0x9f)) {
      return Status::InvalidArgument(fmt::format(
          "crypto key scope has a control character at byte {}: it must be printable", i));
    }
  }
  return Status::Ok();
}

}  // namespace reef::store
