// Reef's glue for wasm2c output: the uniform entry points described in native/c_gen.h.
//
// Thread ownership: stateless; any thread.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "wasm/native/c_gen.h"

namespace reef::wasm::native::detail {

struct Glue {
  std::string source;
  std::vector<NativeExport> exports;  // host-callable, Reef's own exports left out
  std::vector<NativeImport> imports;
  std::vector<NativeGlobal> globals;
};

// The export names under which c_gen.cc exported what the glue reads; empty or absent when
// the module has no such item.
struct RuntimeExports {
  std::string memory;                // memory 0
  std::string start;                 // the start function (taken out of instantiation)
  std::vector<std::string> globals;  // global i
  std::vector<std::string> tables;   // table i
};

// The C symbol prefix wasm2c gives `module_name` (wabt 1.0.32 CWriter::MangleName): "Z_"
// followed by the name, every byte that is not [A-Za-z0-9_] or is 'Z' written as "Z%02X".
std::string MangleName(std::string_view name);

// Writes the glue for `module` as generated with module name `c_module_name`, whose header is
// `header_name`. REQUIRES: `module` validated and named (GenerateNames + ApplyNames), with
// the exports `runtime` names.
// Errors: Unimplemented for a non-function import or a function import with a non-number
// type, or two imports of one module.name with different signatures (wasm2c declares one).
// `export_names`: the module's own export names, by position in `module.exports`, as the
// module spells them (c_gen.cc renames the ones unsafe in C text); the glue's NativeExport
// names are these.
Result<Glue> GenerateGlue(const wabt::Module& module, std::string_view c_module_name,
                          std::string_view header_name, const RuntimeExports& runtime,
                          std::span<const std::string> export_names);

}  // namespace reef::wasm::native::detail
