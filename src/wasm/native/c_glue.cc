// Glue text for wasm2c 1.0.32 output (detail/c_glue.h). Every name written here follows
// wabt 1.0.32's c-writer.cc: exports are <prefix><MangleName(export)>, imports
// <MangleName(module)><MangleName(field)>, instance types <MangleName(module)>_instance_t,
// multi-value results `struct wasm_multi_<types>` with fields <type char><index>. The glue
// includes the generated header, so a naming mismatch fails the compile, never the run.
#include "wasm/native/detail/c_glue.h"

#include <fmt/format.h>

#include <map>
#include <set>
#include <string_view>

#include "wabt/cast.h"
#include "wabt/ir.h"
#include "wasm/detail/wabt_types.h"

namespace reef::wasm::native::detail {
namespace {

// C type, reef_rt_value member and wasm2c's mangle character of each number type.
struct TypeRow {
  ValType type;
  const char* c_type;
  const char* member;
  char mangle;
};
constexpr TypeRow kTypeRows[] = {
    {ValType::kI32, "u32", "i32", 'i'},
    {ValType::kI64, "u64", "i64", 'j'},
    {ValType::kF32, "f32", "f32", 'f'},
    {ValType::kF64, "f64", "f64", 'd'},
};

const TypeRow* FindTypeRow(ValType type) {
  for (const TypeRow& row : kTypeRows) {
    if (row.type == type) return &row;
  }
  return nullptr;
}

FuncSignature ToSignature(const wabt::FuncSignature& sig) {
  FuncSignature out;
  for (wabt::Type t : sig.param_types) out.params.push_back(wasm::detail::FromWabtType(t));
  for (wabt::Type t : sig.result_types) out.results.push_back(wasm::detail::FromWabtType(t));
  return out;
}

bool AllNumbers(const FuncSignature& sig) {
  for (ValType t : sig.params) {
    if (!IsNumberType(t)) return false;
  }
  for (ValType t : sig.results) {
    if (!IsNumberType(t)) return false;
  }
  return true;
}

// "struct wasm_multi_ij" for two or more results, else the one C type or "void".
std::string ResultCType(const FuncSignature& sig) {
  if (sig.results.empty()) return "void";
  if (sig.results.size() == 1) return FindTypeRow(sig.results[0])->c_type;
  std::string name = "struct wasm_multi_";
  for (ValType t : sig.results) name += FindTypeRow(t)->mangle;
  return name;
}

// `c_name`: the export's name in the IR wasm2c wrote (c_gen.cc may have renamed it).
std::string ExportThunk(const NativeExport& e, std::string_view c_name, std::string_view prefix,
                        std::string_view instance_type) {
  const FuncSignature& sig = e.signature;
  std::string call = fmt::format("{}{}(({}*)instance", prefix, MangleName(c_name), instance_type);
  for (size_t i = 0; i < sig.params.size(); ++i) {
    call += fmt::format(", args[{}].{}", i, FindTypeRow(sig.params[i])->member);
  }
  call += ")";
  std::string body;
  if (sig.results.empty()) {
    body = fmt::format("  {};\n", call);
  } else if (sig.results.size() == 1) {
    body = fmt::format("  results[0].{} = {};\n", FindTypeRow(sig.results[0])->member, call);
  } else {
    body = fmt::format("  {} r = {};\n", ResultCType(sig), call);
    for (size_t i = 0; i < sig.results.size(); ++i) {
      const TypeRow* row = FindTypeRow(sig.results[i]);
      body += fmt::format("  results[{}].{} = r.{}{};\n", i, row->member, row->mangle, i);
    }
  }
  return fmt::format(
      "/* export {}: {} */\n"
      "REEF_GLUE_EXPORT void {}(void* instance, const reef_rt_value* args,\n"
      "    reef_rt_value* results) {{\n"
      "  (void)args;\n  (void)results;\n  REEF_RT_CODE_ENTER();\n{}  REEF_RT_CODE_EXIT();\n}}\n\n",
      e.thunk.substr(e.thunk.rfind('_') + 1), sig.ToString(), e.thunk, body);
}

std::string ImportFunction(const NativeImport& im, uint32_t index) {
  const FuncSignature& sig = im.signature;
  const std::string module_type = MangleName(im.module) + "_instance_t";
  std::string text = fmt::format("{} {}{}(struct {}* host", ResultCType(sig), MangleName(im.module),
                                 MangleName(im.name), module_type);
  for (size_t i = 0; i < sig.params.size(); ++i) {
    text += fmt::format(", {} p{}", FindTypeRow(sig.params[i])->c_type, i);
  }
  text += ") {\n";
  text +=
      fmt::format("  reef_rt_value args[{}];\n  reef_rt_value results[{}];\n",
                  std::max<size_t>(sig.params.size(), 1), std::max<size_t>(sig.results.size(), 1));
  for (size_t i = 0; i < sig.params.size(); ++i) {
    text += fmt::format("  args[{}].{} = p{};\n", i, FindTypeRow(sig.params[i])->member, i);
  }
  text += fmt::format(
      "  reef_rt_host* h = reef_rt_current_host();\n"
      "  (void)host;\n"
      "  REEF_RT_HOST_CALL_BEGIN();\n"
      "  uint32_t trap = h->call_import(h, {}u, args, results);\n"
      "  REEF_RT_HOST_CALL_END();\n"
      "  if (trap != 0) reef_rt_trap_host(trap);\n"
      "  (void)results;\n",
      index);
  if (sig.results.size() == 1) {
    text += fmt::format("  return results[0].{};\n", FindTypeRow(sig.results[0])->member);
  } else if (sig.results.size() > 1) {
    text += fmt::format("  {} r;\n", ResultCType(sig));
    for (size_t i = 0; i < sig.results.size(); ++i) {
      const TypeRow* row = FindTypeRow(sig.results[i]);
      text += fmt::format("  r.{}{} = results[{}].{};\n", row->mangle, i, i, row->member);
    }
    text += "  return r;\n";
  }
  text += "}\n\n";
  return text;
}

// A C function `<result> <name>(void* instance, uint32_t index)` returning accessor i's
// value for index i, else NULL.
std::string IndexedAccessor(std::string_view result, std::string_view name,
                            const std::vector<std::string>& accessors) {
  std::string text = fmt::format(
      "REEF_GLUE_EXPORT {} {}(void* instance, uint32_t index) {{\n"
      "  (void)instance;\n  switch (index) {{\n",
      result, name);
  for (size_t i = 0; i < accessors.size(); ++i) {
    if (!accessors[i].empty()) text += fmt::format("    case {}: return {};\n", i, accessors[i]);
  }
  text += "    default: return NULL;\n  }\n}\n\n";
  return text;
}

}  // namespace

std::string MangleName(std::string_view name) {
  std::string out = "Z_";
  for (unsigned char c : name) {
    const bool plain =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Y') || (c >= '0' && c <= '9') || c == '_';
    if (plain) {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("Z{:02X}", c);
    }
  }
  return out;
}

Result<Glue> GenerateGlue(const wabt::Module& module, std::string_view c_module_name,
                          std::string_view header_name, const RuntimeExports& runtime,
                          std::span<const std::string> export_names) {
  Glue glue;
  const std::string prefix = MangleName(c_module_name);
  const std::string instance_type = prefix + "_instance_t";

  // Imports: functions only; wasm2c declares one C function per module.name.
  std::set<std::string> import_modules;
  std::map<std::pair<std::string, std::string>, FuncSignature> declared;
  std::string import_text;
  for (const wabt::Import* import : module.imports) {
    if (import->kind() != wabt::ExternalKind::Func) {
      return Status::Unimplemented(
          fmt::format("import {}.{}: the native tier supplies function imports only",
                      import->module_name, import->field_name));
    }
    const auto* func_import = wabt::cast<wabt::FuncImport>(import);
    NativeImport im{import->module_name, import->field_name,
                    ToSignature(func_import->func.decl.sig)};
    if (!AllNumbers(im.signature)) {
      return Status::Unimplemented(fmt::format("import {}.{} {}: only number types", im.module,
                                               im.name, im.signature.ToString()));
    }
    auto [it, inserted] = declared.try_emplace({im.module, im.name}, im.signature);
    if (!inserted && it->second != im.signature) {
      return Status::Unimplemented(
          fmt::format("import {}.{} appears with two signatures", im.module, im.name));
    }
    if (inserted) {
      import_text += ImportFunction(im, static_cast<uint32_t>(glue.imports.size()));
    }
    import_modules.insert(im.module);
    glue.imports.push_back(std::move(im));
  }
  // A repeated module.name calls the first one's index: same signature, same host function.

  // wasm2c's accessor of export `name`, called on the glue's `instance`.
  auto accessor = [&](std::string_view name) {
    return fmt::format("{}{}(({}*)instance)", prefix, MangleName(name), instance_type);
  };
  const std::string memory_getter = runtime.memory.empty() ? "NULL" : accessor(runtime.memory);
  const std::string start_call = runtime.start.empty() ? "" : accessor(runtime.start) + ";";
  std::vector<std::string> globals;
  for (size_t i = 0; i < runtime.globals.size(); ++i) {
    const wabt::Global* global = module.globals[i];
    glue.globals.push_back({wasm::detail::FromWabtType(global->type), global->mutable_});
    globals.push_back(accessor(runtime.globals[i]));
  }
  std::vector<std::string> funcref_tables;
  for (size_t i = 0; i < runtime.tables.size(); ++i) {
    const bool funcref = module.tables[i]->elem_type == wabt::Type::FuncRef;
    funcref_tables.push_back(funcref ? accessor(runtime.tables[i]) : "");
  }

  std::string export_text;
  for (size_t i = 0; i < export_names.size() && i < module.exports.size(); ++i) {
    const wabt::Export* e = module.exports[i];
    if (e->kind != wabt::ExternalKind::Func) continue;
    const wabt::Func* func = module.GetFunc(e->var);
    NativeExport ne{export_names[i], ToSignature(func->decl.sig),
                    fmt::format("reef_glue_export_{}", glue.exports.size())};
    if (!AllNumbers(ne.signature)) continue;  // not callable from the host
    export_text += ExportThunk(ne, e->name, prefix, instance_type);
    glue.exports.push_back(std::move(ne));
  }

  std::string instantiate_args;
  for (const std::string& m : import_modules) {  // std::set order, as wasm2c's SymbolSet
    instantiate_args += fmt::format(", (struct {}_instance_t*)host", MangleName(m));
  }

  glue.source = fmt::format(
      "/* Reef glue for wasm2c module `{prefix}` (generated by native/c_glue.cc). */\n"
      "#include \"{header}\"\n\n"
      "#define REEF_GLUE_EXPORT __attribute__((visibility(\"default\")))\n\n"
      "REEF_GLUE_EXPORT uint32_t reef_glue_abi(void) {{ return {abi}u; }}\n"
      "REEF_GLUE_EXPORT size_t reef_glue_instance_size(void) {{\n"
      "  return sizeof({itype});\n}}\n"
      "REEF_GLUE_EXPORT void reef_glue_init_module(void) {{ {prefix}_init_module(); }}\n"
      "REEF_GLUE_EXPORT void reef_glue_instantiate(void* instance, reef_rt_host* host) {{\n"
      "  (void)host;\n  {prefix}_instantiate(({itype}*)instance{args});\n}}\n"
      "REEF_GLUE_EXPORT void reef_glue_free(void* instance) {{\n"
      "  {prefix}_free(({itype}*)instance);\n}}\n"
      "REEF_GLUE_EXPORT wasm_rt_memory_t* reef_glue_memory(void* instance) {{\n"
      "  (void)instance;\n  return {memory};\n}}\n"
      "REEF_GLUE_EXPORT void reef_glue_start(void* instance) {{\n"
      "  (void)instance;\n  REEF_RT_CODE_ENTER();\n  {start}\n  REEF_RT_CODE_EXIT();\n}}\n"
      "REEF_GLUE_EXPORT void reef_glue_out_of_fuel(void* host) {{\n"
      "  REEF_RT_HOST_CALL_BEGIN();\n"
      "  ((reef_rt_host*)host)->out_of_fuel((reef_rt_host*)host);\n"
      "  REEF_RT_HOST_CALL_END();\n}}\n"
      "REEF_GLUE_EXPORT int reef_glue_registers(void) {{ return REEF_RT_REGISTERS; }}\n\n"
      "{globals}{tables}{imports}{exports}",
      fmt::arg("prefix", prefix), fmt::arg("header", header_name), fmt::arg("abi", kGlueAbiVersion),
      fmt::arg("itype", instance_type), fmt::arg("args", instantiate_args),
      fmt::arg("memory", memory_getter), fmt::arg("start", start_call),
      fmt::arg("globals", IndexedAccessor("void*", "reef_glue_global", globals)),
      fmt::arg("tables", IndexedAccessor("wasm_rt_funcref_table_t*", "reef_glue_funcref_table",
                                         funcref_tables)),
      fmt::arg("imports", import_text), fmt::arg("exports", export_text));
  return glue;
}

}  // namespace reef::wasm::native::detail
