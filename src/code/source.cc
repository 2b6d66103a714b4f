#include "code/source.h"

#include <fmt/format.h>

#include <cstdint>
#include <span>

#include "core/ids.h"

namespace reef::code {
namespace {

bool IsComponentByte(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

Status PathError(std::string_view path, std::string_view rule) {
  return Status::InvalidArgument(fmt::format("source path '{}': {}", path, rule));
}

}  // namespace

std::string_view SourceKindName(SourceKind kind) {
  switch (kind) {
    case SourceKind::kC:
      return "c";
    case SourceKind::kWat:
      return "wat";
    case SourceKind::kWasm:
      return "wasm";
  }
  return "?";
}

Result<SourceKind> ParseSourceKind(std::string_view name) {
  if (name == "c") return SourceKind::kC;
  if (name == "wat") return SourceKind::kWat;
  if (name == "wasm") return SourceKind::kWasm;
  return Status::InvalidArgument(
      fmt::format("source kind '{}': expected one of \"c\", \"wat\", \"wasm\"", name));
}

Status ValidateSourcePath(std::string_view path) {
  if (path.empty()) return PathError(path, "must not be empty");
  if (path.size() > kMaxSourcePathBytes) {
    return Status::LimitExceeded(fmt::format("source path of {} bytes: the limit is {} bytes",
                                             path.size(), kMaxSourcePathBytes));
  }
  if (path.front() == '/') return PathError(path, "must be relative (no leading '/')");
  if (path.back() == '/') return PathError(path, "must not end with '/'");
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    std::string_view component = path.substr(start, end - start);
    if (component.empty()) return PathError(path, "empty component ('//')");
    if (component == "." || component == "..") {
      return PathError(path, fmt::format("'{}' component: no traversal", component));
    }
    for (std::size_t i = 0; i < component.size(); ++i) {
      char c = component[i];
      if (c == '.') {
        return PathError(path, fmt::format("'.' at byte {}: no extension in the path (the "
                                           "language is the stored kind)",
                                           start + i));
      }
      if (!IsComponentByte(c)) {
        return PathError(path, fmt::format("byte 0x{:02x} at {}: components use only "
                                           "A-Z a-z 0-9 _ -",
                                           static_cast<uint8_t>(c), start + i));
      }
    }
    if (component.front() == '-') {
      return PathError(path, fmt::format("component '{}' starts with '-'", component));
    }
    start = end + 1;
  }
  return Status::Ok();
}

Status ValidateSourceSize(std::string_view bytes) {
  if (bytes.size() <= kMaxSourceBytes) return Status::Ok();
  return Status::LimitExceeded(fmt::format("source of {} bytes: the limit is {} bytes (1 MiB)",
                                           bytes.size(), kMaxSourceBytes));
}

std::string SourceId(SourceKind kind, std::string_view bytes) {
  std::string input = fmt::format("reef-source:v1\n{}\n", SourceKindName(kind));
  input.append(bytes);
  return Sha256Hex(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(input.data()), input.size()));
}

bool IsValidSourceId(std::string_view id) {
  if (id.size() != 64) return false;
  for (char c : id) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace reef::code
