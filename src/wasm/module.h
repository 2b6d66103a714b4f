// Module: one validated WebAssembly binary, identified by the SHA-256 of its bytes.
//
// A Module is immutable once loaded and holds no engine state: it can be shared across
// reactors (any thread). Engines compile it into their own store when instantiating.
// Load errors name the location: a byte offset for .wasm, line:column for .wat.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"
#include "wasm/module_limits.h"
#include "wasm/types.h"

namespace reef::wasm {

struct ImportInfo {
  std::string module;
  std::string name;
  ExternKind kind = ExternKind::kFunc;
  FuncSignature signature;  // set when kind == kFunc
};

struct ExportInfo {
  std::string name;
  ExternKind kind = ExternKind::kFunc;
  FuncSignature signature;  // set when kind == kFunc
  uint32_t index = 0;       // in the index space of `kind` (imports first)
};

// Declared limits of a memory (64 KiB pages) or a table (elements).
struct DeclaredLimits {
  uint64_t initial = 0;
  std::optional<uint64_t> max;
  bool imported = false;
};

class Module {
 public:
  // Scans (wasm/binary_scan.h), then parses and validates `.wasm` bytes. `name` only labels
  // error messages. Memory: at most about limits.load_memory_factor * bytes.size() +
  // limits.load_memory_allowance bytes while loading (docs/engine.md).
  // Errors: one line each, InvalidArgument "<name>:000001f: error: <reason>" (byte offset, 7
  // hex digits) for a malformed or invalid module; LimitExceeded naming the ModuleLimits field.
  static Result<std::shared_ptr<const Module>> FromBinary(std::span<const uint8_t> bytes,
                                                          std::string_view name = "module.wasm",
                                                          const ModuleLimits& limits = {});
  // Parses `.wat` text in-process, resolves names, validates, and encodes it to binary (with
  // a name section); the module id is the SHA-256 of that binary.
  // Errors: InvalidArgument "<name>:3:7: <reason>" with the offending source line.
  static Result<std::shared_ptr<const Module>> FromText(std::string_view wat,
                                                        std::string_view name = "module.wat",
                                                        const ModuleLimits& limits = {});
  // Reads a file: `.wat` parses as text, anything else must be a wasm binary.
  // Errors: NotFound / InvalidArgument from reading, then those of FromBinary/FromText.
  static Result<std::shared_ptr<const Module>> FromFile(const std::filesystem::path& path,
                                                        const ModuleLimits& limits = {});

  // Lowercase hex SHA-256 of bytes(), 64 characters.
  const std::string& id() const { return id_; }
  // The binary encoding (what id() hashes).
  std::span<const uint8_t> bytes() const { return bytes_; }

  const std::vector<ImportInfo>& imports() const { return imports_; }
  const std::vector<ExportInfo>& exports() const { return exports_; }
  const std::vector<DeclaredLimits>& memories() const { return memories_; }
  const std::vector<DeclaredLimits>& tables() const { return tables_; }
  // nullptr when there is no such export.
  const ExportInfo* FindExport(std::string_view name) const;

  // Name of function `index` (imports first): its export name, else its name-section name,
  // else "func[index]".
  std::string FunctionName(uint32_t index) const;
  uint32_t function_count() const { return static_cast<uint32_t>(function_names_.size()); }
  // Largest params + locals of any function: the most values one call can add to the value
  // stack (the engine uses it to keep the value stack strictly within its limit).
  uint32_t max_frame_values() const { return max_frame_values_; }
  // Index of the start function (imports first), if the module declares one.
  std::optional<uint32_t> start_function() const { return start_function_; }

 private:
  Module() = default;
  // FromText's work, which may throw from inside wabt.
  static Result<std::shared_ptr<const Module>> ParseText(std::string_view wat,
                                                         std::string_view name,
                                                         const ModuleLimits& limits);
  // Shared tail of the factories: scans and validates `bytes`, then fills in the metadata.
  static Result<std::shared_ptr<const Module>> Build(std::vector<uint8_t> bytes,
                                                     std::string_view name,
                                                     const ModuleLimits& limits);
  // Build's work after the scan, which may throw std::bad_alloc from inside wabt.
  static Result<std::shared_ptr<const Module>> Read(
      std::vector<uint8_t> bytes, std::string_view name,
      std::vector<std::pair<uint32_t, std::string>> function_names);

  std::string id_;
  std::vector<uint8_t> bytes_;
  std::vector<ImportInfo> imports_;
  std::vector<ExportInfo> exports_;
  std::vector<DeclaredLimits> memories_;
  std::vector<DeclaredLimits> tables_;
  std::vector<std::string> function_names_;  // "" when unnamed
  uint32_t max_frame_values_ = 0;
  std::optional<uint32_t> start_function_;
};

}  // namespace reef::wasm
