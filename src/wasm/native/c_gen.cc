// C generation pipeline (c_gen.h): wabt IR -> pass -> validate -> names -> WriteC -> glue.
#include "wasm/native/c_gen.h"

#include <fmt/format.h>

#include <exception>
#include <memory>
#include <new>
#include <string_view>

#include "wabt/apply-names.h"
#include "wabt/binary-reader-ir.h"
#include "wabt/binary-reader.h"
#include "wabt/c-writer.h"
#include "wabt/error-formatter.h"
#include "wabt/feature.h"
#include "wabt/generate-names.h"
#include "wabt/ir.h"
#include "wabt/stream.h"
#include "wabt/validator.h"
#include "wasm/native/detail/c_glue.h"

namespace reef::wasm::native {
namespace {

constexpr std::string_view kCModuleName = "m";
// The exports Reef adds so the glue reaches the runtime's fields whatever the module exports
// (wasm2c writes an accessor per export): memory 0, the start function, every global and
// every table. MangleName escapes the ':' and '.'; a name the module already exports gets
// the first free "<name>.<n>" instead.
constexpr std::string_view kMemoryExport = "reef:memory0";
constexpr std::string_view kStartExport = "reef:start";
constexpr std::string_view kGlobalExport = "reef:global";
constexpr std::string_view kTableExport = "reef:table";

// The proposals wabt 1.0.32's C writer compiles: its defaults without SIMD (the writer has
// no v128 support) and with exceptions, threads and the rest off.
wabt::Features CFeatures() {
  wabt::Features features;
  features.disable_simd();
  return features;
}

std::string Errors(const wabt::Errors& errors) {
  std::string text = wabt::FormatErrorsToString(errors, wabt::Location::Type::Binary);
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text.empty() ? "unknown error" : text;
}

std::string Text(wabt::MemoryStream& stream) {
  const auto& data = stream.output_buffer().data;
  return std::string(data.begin(), data.end());
}

// wabt's C writer traps every table fault as WASM_RT_TRAP_OOB, like a memory fault, and
// every call_indirect fault as WASM_RT_TRAP_CALL_INDIRECT. Reef reports them as the
// interpreter does: index past the table -> table_out_of_bounds; null entry or wrong type
// -> indirect_call_mismatch. The table helpers sit between two fixed markers of wabt
// 1.0.32's source prelude; CALL_INDIRECT is replaced whole. Fails if the text moved.
Status RewriteTableTraps(std::string& c) {
  static constexpr std::string_view kCallIndirect =
      "#define CALL_INDIRECT(table, t, ft, x, ...)             \\\n"
      "  (LIKELY((x) < table.size && table.data[x].func &&     \\\n"
      "          table.data[x].func_type == func_types[ft]) || \\\n"
      "       TRAP(CALL_INDIRECT),                             \\\n"
      "   ((t)table.data[x].func)(__VA_ARGS__))\n";
  static constexpr std::string_view kReefCallIndirect =
      "#define CALL_INDIRECT(table, t, ft, x, ...)                        \\\n"
      "  (LIKELY((x) < table.size) || TRAP(TABLE_OOB),                    \\\n"
      "   LIKELY(table.data[x].func &&                                    \\\n"
      "          table.data[x].func_type == func_types[ft]) ||            \\\n"
      "       TRAP(CALL_INDIRECT),                                        \\\n"
      "   ((t)table.data[x].func)(__VA_ARGS__))\n";
  static constexpr std::string_view kTablesBegin = "static inline void funcref_table_init(";
  static constexpr std::string_view kTablesEnd = "DEFINE_TABLE_FILL(externref)";
  static constexpr std::string_view kOob = "TRAP(OOB)";
  static constexpr std::string_view kTableOob = "TRAP(TABLE_OOB)";

  const size_t call = c.find(kCallIndirect);
  const size_t begin = c.find(kTablesBegin);
  const size_t end = c.find(kTablesEnd, begin == std::string::npos ? 0 : begin);
  if (call == std::string::npos || begin == std::string::npos || end == std::string::npos ||
      call > begin) {
    return Status::Internal(
        "wabt's C writer output changed shape (CALL_INDIRECT or table helpers not found); "
        "Reef pins wabt 1.0.32");
  }
  int rewritten = 0;
  for (size_t at = c.find(kOob, begin); at != std::string::npos && at < end;
       at = c.find(kOob, at + kTableOob.size())) {
    c.replace(at, kOob.size(), kTableOob);
    ++rewritten;
  }
  if (rewritten == 0) {
    return Status::Internal("wabt's C writer table helpers have no OOB traps; Reef pins 1.0.32");
  }
  c.replace(call, kCallIndirect.size(), kReefCallIndirect);
  return Status::Ok();
}

// Exports item `index` of `kind` under `name`, or the first free "<name>.<n>"; returns the
// name used.
std::string AddExport(wabt::Module& module, wabt::ExternalKind kind, uint32_t index,
                      std::string name) {
  const std::string base = name;
  for (int n = 1; module.GetExport(name) != nullptr; ++n) name = fmt::format("{}.{}", base, n);
  auto field = std::make_unique<wabt::ExportModuleField>();
  field->export_.name = name;
  field->export_.kind = kind;
  field->export_.var = wabt::Var(index, wabt::Location());
  module.AppendField(std::move(field));
  return name;
}

// Adds the exports the glue reads (detail::RuntimeExports) and takes the start function out
// of instantiation: the host runs it as an invocation of its own, metered and within
// EngineLimits::max_start_instructions, as the interpreter does.
detail::RuntimeExports ExportRuntimeFields(wabt::Module& module) {
  detail::RuntimeExports names;
  if (!module.memories.empty()) {
    names.memory = AddExport(module, wabt::ExternalKind::Memory, 0, std::string(kMemoryExport));
  }
  if (!module.starts.empty()) {
    const wabt::Index start = module.GetFuncIndex(*module.starts.front());
    names.start = AddExport(module, wabt::ExternalKind::Func, start, std::string(kStartExport));
    module.starts.clear();
  }
  for (uint32_t i = 0; i < module.globals.size(); ++i) {
    names.globals.push_back(
        AddExport(module, wabt::ExternalKind::Global, i, fmt::format("{}.{}", kGlobalExport, i)));
  }
  for (uint32_t i = 0; i < module.tables.size(); ++i) {
    names.tables.push_back(
        AddExport(module, wabt::ExternalKind::Table, i, fmt::format("{}.{}", kTableExport, i)));
  }
  return names;
}

Result<GeneratedC> Generate(const Module& module, const IrPass& pass) {
  const wabt::Features features = CFeatures();
  wabt::Errors errors;
  wabt::Module ir;
  const wabt::ReadBinaryOptions read_options(features, /*log_stream=*/nullptr,
                                             /*read_debug_names=*/true,
                                             /*stop_on_first_error=*/true,
                                             /*fail_on_custom_section_error=*/false);
  const std::span<const uint8_t> bytes = module.bytes();
  if (wabt::Failed(wabt::ReadBinaryIr("module.wasm", bytes.data(), bytes.size(), read_options,
                                      &errors, &ir))) {
    return Status::InvalidArgument("native tier cannot read the module: " + Errors(errors));
  }
  if (pass) REEF_RETURN_IF_ERROR(pass(ir));
  if (wabt::Failed(wabt::ValidateModule(&ir, &errors, wabt::ValidateOptions(features)))) {
    return Status::InvalidArgument("module invalid for the native tier: " + Errors(errors));
  }
  const detail::RuntimeExports runtime_exports = ExportRuntimeFields(ir);
  if (wabt::Failed(wabt::GenerateNames(&ir))) {
    return Status::Internal("wabt GenerateNames failed");
  }
  // wasm2c ignores ApplyNames' result too: a name it cannot apply stays an index.
  (void)wabt::ApplyNames(&ir);

  REEF_ASSIGN_OR_RETURN(detail::Glue glue,
                        detail::GenerateGlue(ir, kCModuleName, kModuleHeaderName, runtime_exports));

  wabt::MemoryStream c_stream;
  wabt::MemoryStream h_stream;
  wabt::WriteCOptions options;
  options.module_name = kCModuleName;
  if (wabt::Failed(wabt::WriteC(&c_stream, &h_stream, kModuleHeaderName, &ir, options))) {
    return Status::Internal("wabt WriteC failed");
  }
  GeneratedC out;
  out.module_source = Text(c_stream);
  out.module_header = Text(h_stream);
  REEF_RETURN_IF_ERROR(RewriteTableTraps(out.module_source));
  out.glue_source = std::move(glue.source);
  out.exports = std::move(glue.exports);
  out.imports = std::move(glue.imports);
  out.globals = std::move(glue.globals);
  out.has_start = !runtime_exports.start.empty();
  return out;
}

}  // namespace

Result<GeneratedC> GenerateC(const Module& module, const IrPass& pass) {
  try {
    return Generate(module, pass);
  } catch (const std::bad_alloc&) {
    return Status::LimitExceeded("out of memory generating C for the module");
  } catch (const std::exception& e) {
    return Status::Internal(fmt::format("generating C: {}", e.what()));
  }
}

}  // namespace reef::wasm::native
