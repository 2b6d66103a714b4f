// C generation pipeline (c_gen.h): wabt IR -> pass -> validate -> names -> WriteC -> glue.
#include "wasm/native/c_gen.h"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <memory>
#include <new>
#include <string_view>
#include <vector>

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
#include "wasm/detail/features.h"
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

// The proposals wabt 1.0.32's C writer compiles are those Reef supports on both tiers.
wabt::Features CFeatures() {
  return wasm::detail::SupportedFeatures();
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

// wasm2c's trap macro and call-depth prologue, which Reef's rewrite replaces (rt/wasm-rt.h,
// "Registers of the generated code"): a trap stores the fuel first, and the depth counter is
// REEF_RT_DEPTH (a register or wasm_rt_call_stack_depth).
constexpr std::string_view kTrapMacro = "#define TRAP(x) (wasm_rt_trap(WASM_RT_TRAP_##x), 0)\n";
constexpr std::string_view kReefTrapMacro =
    "#define TRAP(x) (REEF_RT_STORE_FUEL(), wasm_rt_trap(WASM_RT_TRAP_##x), 0)\n";
constexpr std::string_view kDepthIncrement = "++wasm_rt_call_stack_depth";
constexpr std::string_view kDepthDecrement = "--wasm_rt_call_stack_depth";

Status ReplaceOnce(std::string& c, std::string_view from, std::string_view to) {
  const size_t at = c.find(from);
  if (at == std::string::npos || c.find(from, at + from.size()) != std::string::npos) {
    return Status::Internal(fmt::format(
        "wabt's C writer output changed shape (`{}` not found once); Reef pins wabt 1.0.32",
        from.substr(0, from.find('\n'))));
  }
  c.replace(at, from.size(), to);
  return Status::Ok();
}

// Every write of the generated code to a memory marks the chunks it wrote (rt/wasm-rt.h,
// wasm_rt_memory_t::dirty), after its bounds check passed: stores (of at most 8 bytes, so
// the chunk they start in: the reset restores REEF_RT_CHUNK_SPILL bytes past each marked
// chunk), memory.fill, memory.copy and memory.init. The data segments that instantiation
// copies in are not marked: they are the state a reset goes back to.
Status RewriteMemoryWrites(std::string& c) {
  REEF_RETURN_IF_ERROR(
      ReplaceOnce(c, "    wasm_rt_memcpy(&mem->data[addr], &wrapped, sizeof(t1));            \\\n",
                  "    wasm_rt_memcpy(&mem->data[addr], &wrapped, sizeof(t1));            \\\n"
                  "    mem->dirty[addr >> REEF_RT_CHUNK_SHIFT] = 1;                       \\\n"));
  REEF_RETURN_IF_ERROR(ReplaceOnce(c, "  memset(mem->data + d, val, n);\n",
                                   "  memset(mem->data + d, val, n);\n"
                                   "  if (n) reef_rt_mark_written(mem, d, n);\n"));
  REEF_RETURN_IF_ERROR(
      ReplaceOnce(c, "  memmove(dest->data + dest_addr, src->data + src_addr, n);\n}\n",
                  "  memmove(dest->data + dest_addr, src->data + src_addr, n);\n"
                  "  if (n) reef_rt_mark_written(dest, dest_addr, n);\n}\n"));
  return ReplaceOnce(c, "  LOAD_DATA((*dest), dest_addr, src + src_addr, n);\n}\n",
                     "  LOAD_DATA((*dest), dest_addr, src + src_addr, n);\n"
                     "  if (n) reef_rt_mark_written(dest, dest_addr, n);\n}\n");
}

// What a fuel check calls when the fuel ran out (RewriteFuel): the meter table's function,
// with the checks CALL_INDIRECT makes. Out of line, so a check costs a compare and a branch.
constexpr std::string_view kOutOfFuelHelper =
    "static __attribute__((noinline, cold)) void reef_out_of_fuel(\n"
    "    const wasm_rt_funcref_table_t* table, u32 type) {\n"
    "  if (UNLIKELY(table->size == 0)) TRAP(TABLE_OOB);\n"
    "  if (UNLIKELY(!table->data[0].func || table->data[0].func_type != type))\n"
    "    TRAP(CALL_INDIRECT);\n"
    "  ((void (*)(void*))table->data[0].func)(table->data[0].module_instance);\n"
    "}\n";

// One line of wasm2c's function bodies, split at its indentation.
struct CLine {
  std::string_view indent;
  std::string_view code;
};

CLine SplitLine(std::string_view line) {
  const size_t first = line.find_first_not_of(' ');
  if (first == std::string_view::npos) return {line, {}};
  return {line.substr(0, first), line.substr(first)};
}

// Consumes `prefix` from the front of `text`.
bool Eat(std::string_view& text, std::string_view prefix) {
  if (!text.starts_with(prefix)) return false;
  text.remove_prefix(prefix.size());
  return true;
}

// Consumes a wasm2c stack temporary of kind `kind` ('j' for i64, 'i' for i32): "w2c_<kind>N".
bool EatTemp(std::string_view& text, char kind, std::string_view* temp) {
  const std::string_view start = text;
  if (!Eat(text, "w2c_") || text.empty() || text.front() != kind) return false;
  text.remove_prefix(1);
  const size_t digits = text.find_first_not_of("0123456789");
  if (digits == 0) return false;
  text.remove_prefix(digits == std::string_view::npos ? text.size() : digits);
  *temp = start.substr(0, start.size() - text.size());
  return true;
}

// Rewrites the metering code in wasm2c's function bodies so the fuel global `field` (the
// instance member) is REEF_FUEL, which m.c defines as the register or the member
// (rt/wasm-rt.h). The meter pass's shapes (wasm/detail/meter.h), in wasm2c's words:
//   charge: "jA = instance->F; jB = <n>ull; jA -= jB; instance->F = jA;" -> "REEF_FUEL -= <n>ull;"
//   check:  "jA = instance->F; jB = 0ull; iC = (u64)((s64)jA < (s64)jB); if (iC) {"
//           -> "if (UNLIKELY(REEF_FUEL < 0)) {"
//   other reads and writes (bulk charges): "jA = REEF_FUEL;", "REEF_FUEL = jA;".
// The member stays only where the host's code reaches it: its initialiser and accessor.
// Errors: Internal when any other use of the member is left (the writer changed shape).
Status RewriteFuel(std::string& c, std::string_view field) {
  const std::string member = fmt::format("instance->{}", field);
  const std::string load_suffix = fmt::format(" = {};", member);
  std::vector<std::string_view> lines;
  for (size_t at = 0; at < c.size();) {
    const size_t end = c.find('\n', at);
    const size_t next = end == std::string::npos ? c.size() : end + 1;
    lines.push_back(std::string_view(c).substr(at, next - at));
    at = next;
  }
  auto code = [&](size_t i) {
    std::string_view line = i < lines.size() ? lines[i] : std::string_view();
    if (line.ends_with('\n')) line.remove_suffix(1);
    return SplitLine(line).code;
  };
  // "jA = instance->F;" -> jA
  auto fuel_load = [&](std::string_view text, std::string_view* temp) {
    return EatTemp(text, 'j', temp) && text == load_suffix;
  };
  // "jB = <digits>ull;" -> jB, <digits>
  auto constant = [&](std::string_view text, std::string_view* temp, std::string_view* value) {
    if (!EatTemp(text, 'j', temp) || !Eat(text, " = ") || !text.ends_with("ull;")) return false;
    *value = text.substr(0, text.size() - 4);
    return !value->empty() && value->find_first_not_of("0123456789") == std::string_view::npos;
  };
  std::string out;
  out.reserve(c.size());
  for (size_t i = 0; i < lines.size();) {
    const CLine line = SplitLine(lines[i]);
    std::string_view a, b, n, cond;
    if (fuel_load(code(i), &a) && constant(code(i + 1), &b, &n)) {
      if (code(i + 2) == fmt::format("{} -= {};", a, b) &&
          code(i + 3) == fmt::format("{} = {};", member, a)) {
        out += fmt::format("{}REEF_FUEL -= {}ull;\n", line.indent, n);
        i += 4;
        continue;
      }
      std::string_view third = code(i + 2);
      if (n == "0" && EatTemp(third, 'i', &cond) &&
          third == fmt::format(" = (u64)((s64){} < (s64){});", a, b) &&
          code(i + 3) == fmt::format("if ({}) {{", cond)) {
        // The check's body, "iD = 0u; CALL_INDIRECT(T, void (*)(void*), FT, iD,
        // T.data[iD].module_instance); }", becomes one call of the cold helper.
        std::string_view index, call = code(i + 5), table, type;
        if (EatTemp(index = code(i + 4), 'i', &cond) && index == " = 0u;" &&
            Eat(call, "CALL_INDIRECT(") && (table = call.substr(0, call.find(','))).size() > 0 &&
            Eat(call, table) && Eat(call, ", void (*)(void*), ") &&
            !(type = call.substr(0, call.find(','))).empty() && Eat(call, type) &&
            call == fmt::format(", {}, {}.data[{}].module_instance);", cond, table, cond) &&
            code(i + 6) == "}") {
          out +=
              fmt::format("{}if (UNLIKELY(REEF_FUEL < 0)) reef_out_of_fuel(&{}, func_types[{}]);\n",
                          line.indent, table, type);
          i += 7;
          continue;
        }
        out += fmt::format("{}if (UNLIKELY(REEF_FUEL < 0)) {{\n", line.indent);
        i += 4;
        continue;
      }
    }
    if (fuel_load(code(i), &a)) {
      out += fmt::format("{}{} = REEF_FUEL;\n", line.indent, a);
    } else if (std::string_view text = code(i);
               Eat(text, member) && Eat(text, " = ") && EatTemp(text, 'j', &a) && text == ";") {
      out += fmt::format("{}REEF_FUEL = {};\n", line.indent, a);
    } else {
      out += lines[i];
      if (lines[i].find(member) != std::string_view::npos) {
        std::string_view rest = code(i);
        const bool initialiser = Eat(rest, member) && Eat(rest, " = ") && rest.ends_with("ull;");
        if (!initialiser && code(i) != fmt::format("return &{};", member)) {
          return Status::Internal(fmt::format(
              "wabt's C writer uses the fuel in a shape Reef does not rewrite: `{}`", code(i)));
        }
      }
      ++i;
      continue;
    }
    ++i;
  }
  c = std::move(out);
  return Status::Ok();
}

// The instance member wasm2c gave the global whose accessor is `accessor` (an exported
// global's "<prefix><mangled export name>"): "u64* <accessor>(... instance) {\n  return
// &instance-><member>;". Errors: Internal when the accessor is not there.
Result<std::string> GlobalMember(const std::string& c, std::string_view accessor) {
  const std::string head = fmt::format(" {}(", accessor);
  const size_t at = c.find(head);
  static constexpr std::string_view kReturn = "return &instance->";
  const size_t ret = at == std::string::npos ? std::string::npos : c.find(kReturn, at);
  const size_t end = ret == std::string::npos ? std::string::npos : c.find(';', ret);
  if (end == std::string::npos) {
    return Status::Internal(fmt::format("wabt's C writer wrote no accessor `{}`", accessor));
  }
  return c.substr(ret + kReturn.size(), end - ret - kReturn.size());
}

// Reef's rewrites of wasm2c's output for the registers of rt/wasm-rt.h: the trap macro, the
// depth prologue and, for a metered module, every use of the fuel global `fuel_accessor`
// names (empty: not metered).
Status RewriteForRegisters(std::string& c, std::string_view fuel_accessor) {
  REEF_RETURN_IF_ERROR(ReplaceOnce(c, kTrapMacro, kReefTrapMacro));
  REEF_RETURN_IF_ERROR(ReplaceOnce(c, kDepthIncrement, "++REEF_RT_DEPTH"));
  REEF_RETURN_IF_ERROR(ReplaceOnce(c, kDepthDecrement, "--REEF_RT_DEPTH"));
  if (fuel_accessor.empty()) return Status::Ok();
  REEF_ASSIGN_OR_RETURN(const std::string member, GlobalMember(c, fuel_accessor));
  REEF_RETURN_IF_ERROR(RewriteFuel(c, member));
  const std::string fuel_macro = fmt::format(
      "#if REEF_RT_REGISTERS\n#define REEF_FUEL reef_rt_fuel\n#else\n"
      "#define REEF_FUEL (*(s64*)&instance->{})\n#endif\n",
      member);
  return ReplaceOnce(c, kReefTrapMacro,
                     fuel_macro + std::string(kReefTrapMacro) + std::string(kOutOfFuelHelper));
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

// True for a name wabt's C writer may copy into the C text as it is: wabt 1.0.32 writes each
// export's name unescaped into a comment ("/* export: 'NAME' */"), so a name holding "*/"
// would end the comment and put the rest of itself into the C source.
bool PlainName(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == '-';
  });
}

// Gives every export whose name is not plain the name "reef:export.<i>" (its position), and
// returns every export's original name, by position: the glue names the thunks after those.
// The new names are unique: they differ by position, and every name kept is plain (no ':').
// Import names need no such care: the writer puts function imports' names into identifiers
// only, through MangleName, and the glue refuses the others.
std::vector<std::string> RenameExportsForC(wabt::Module& module) {
  std::vector<std::string> original;
  original.reserve(module.exports.size());
  for (size_t i = 0; i < module.exports.size(); ++i) {
    wabt::Export& e = *module.exports[i];
    original.push_back(e.name);
    if (!PlainName(e.name)) e.name = fmt::format("reef:export.{}", i);
  }
  // GetExport (ExportRuntimeFields' AddExport) looks names up in the bindings: rebuild them.
  module.export_bindings.clear();
  for (size_t i = 0; i < module.exports.size(); ++i) {
    module.export_bindings.emplace(module.exports[i]->name,
                                   wabt::Binding(static_cast<wabt::Index>(i)));
  }
  return original;
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
                                             // Debug names would only reach the C text.
                                             /*read_debug_names=*/false,
                                             /*stop_on_first_error=*/true,
                                             /*fail_on_custom_section_error=*/false);
  const std::span<const uint8_t> bytes = module.bytes();
  if (wabt::Failed(wabt::ReadBinaryIr("module.wasm", bytes.data(), bytes.size(), read_options,
                                      &errors, &ir))) {
    return Status::InvalidArgument("native tier cannot read the module: " + Errors(errors));
  }
  PassResult pass_result;
  if (pass) {
    REEF_ASSIGN_OR_RETURN(pass_result, pass(ir));
  }
  if (pass_result.fuel_global.has_value() && *pass_result.fuel_global >= ir.globals.size()) {
    return Status::Internal("the pass names a fuel global the module does not have");
  }
  if (wabt::Failed(wabt::ValidateModule(&ir, &errors, wabt::ValidateOptions(features)))) {
    return Status::InvalidArgument("module invalid for the native tier: " + Errors(errors));
  }
  const std::vector<std::string> export_names = RenameExportsForC(ir);
  const detail::RuntimeExports runtime_exports = ExportRuntimeFields(ir);
  if (wabt::Failed(wabt::GenerateNames(&ir))) {
    return Status::Internal("wabt GenerateNames failed");
  }
  // wasm2c ignores ApplyNames' result too: a name it cannot apply stays an index.
  (void)wabt::ApplyNames(&ir);

  REEF_ASSIGN_OR_RETURN(detail::Glue glue, detail::GenerateGlue(ir, kCModuleName, kModuleHeaderName,
                                                                runtime_exports, export_names));

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
  REEF_RETURN_IF_ERROR(RewriteMemoryWrites(out.module_source));
  const std::string fuel_accessor =
      pass_result.fuel_global.has_value()
          ? std::string(detail::MangleName(kCModuleName)) +
                detail::MangleName(runtime_exports.globals[*pass_result.fuel_global])
          : std::string();
  REEF_RETURN_IF_ERROR(RewriteForRegisters(out.module_source, fuel_accessor));
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
