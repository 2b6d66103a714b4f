// C generation: a validated Module -> C source through wabt 1.0.32's C writer (wasm2c's
// library), plus Reef's glue, ready for native/compiler.h.
//
// Pipeline: ReadBinaryIr -> IrPass (the hook where metering will transform the IR) ->
// ValidateModule -> GenerateNames/ApplyNames -> WriteC (module name "m") -> Reef's trap-kind
// rewrite of the table helpers -> glue. The glue (C, compiled into the same library) gives
// the host fixed, uniform entry points so it never needs the generated names or C signatures:
//
//   uint32_t reef_glue_abi(void);                  // kGlueAbiVersion
//   size_t   reef_glue_instance_size(void);        // bytes of the instance struct
//   void     reef_glue_init_module(void);          // once per loaded library
//   void     reef_glue_instantiate(void* instance, reef_rt_host* host);  // instance zeroed
//   void     reef_glue_free(void* instance);       // after instantiate, trapped or not
//   wasm_rt_memory_t* reef_glue_memory(void* instance);  // memory 0, or NULL
//   void     reef_glue_start(void* instance);      // the start function (nothing without)
//   void     reef_glue_out_of_fuel(void* host);    // the meter table's function: calls
//                                                  // host->out_of_fuel (reef_rt_host*)
//   int      reef_glue_registers(void);            // REEF_RT_REGISTERS it was compiled with
//   void*    reef_glue_global(void* instance, uint32_t index);  // global `index`'s value
//   wasm_rt_funcref_table_t* reef_glue_funcref_table(void* instance, uint32_t index);
//                                                  // table `index`, NULL unless funcref
//   void     <NativeExport::thunk>(void* instance, const reef_rt_value* args,
//                                  reef_rt_value* results);
//
// The start function does not run while instantiating: the host runs reef_glue_start as an
// invocation of its own (metered, on a fiber), after reef_glue_instantiate.
//
// Function imports become C functions that pack their arguments into reef_rt_value arrays
// and call reef_rt_host::call_import with the import's index (see native/rt/wasm-rt.h).
//
// Thread ownership: stateless; any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "wasm/module.h"
#include "wasm/types.h"

namespace wabt {
struct Module;
}

namespace reef::wasm::native {

// Version of the glue entry points above; the loader refuses a library with another.
inline constexpr uint32_t kGlueAbiVersion = 3;

// What a pass reports about the module it changed.
struct PassResult {
  // The global holding the metering fuel, when the pass metered the module
  // (wasm/detail/meter.h): the generated code keeps it in a register where the compiler
  // allows it (rt/wasm-rt.h, "Registers of the generated code").
  std::optional<uint32_t> fuel_global;
};

// A transformation of the module's wabt IR, run before validation (metering goes here).
// It may change anything; the result must validate. Errors abort generation unchanged.
using IrPass = std::function<Result<PassResult>(wabt::Module&)>;

// A function export callable from the host: all its parameter and result types are numbers.
struct NativeExport {
  std::string name;  // the export name
  FuncSignature signature;
  std::string thunk;  // C symbol of its glue entry point, "reef_glue_export_<n>"
};

// A function import, in the order of the module's function imports: call_import's index.
struct NativeImport {
  std::string module;
  std::string name;
  FuncSignature signature;
};

// A global of the module, by index (reef_glue_global's `index`).
struct NativeGlobal {
  ValType type;
  bool mutable_ = false;
};

// What the host needs of a compiled module's glue to load and drive it.
struct NativeInterface {
  std::vector<NativeExport> exports;
  std::vector<NativeImport> imports;
  std::vector<NativeGlobal> globals;  // every global, in index order
  bool has_start = false;             // reef_glue_start runs a start function
};

struct GeneratedC {
  std::string module_source;  // wasm2c's C for the module; includes "m.h"
  std::string module_header;  // "m.h"; includes "wasm-rt.h"
  std::string glue_source;    // Reef's glue; includes "m.h"
  std::vector<NativeExport> exports;
  std::vector<NativeImport> imports;
  std::vector<NativeGlobal> globals;  // every global, in index order
  bool has_start = false;             // reef_glue_start runs a start function

  NativeInterface interface() const { return {exports, imports, globals, has_start}; }
};

// File names the sources expect next to each other (and next to rt/wasm-rt.h).
inline constexpr const char* kModuleHeaderName = "m.h";

// Generates C for `module`. `pass`, when set, runs on the IR before validation.
// Errors: InvalidArgument when wabt cannot read or validate the module (wabt's messages,
// e.g. a proposal Reef's C tier does not compile: SIMD, exceptions, threads);
// Unimplemented for imports the native tier cannot supply yet (memories, tables, globals,
// tags, or functions with non-number types); the pass's own error; Internal when wabt's
// C writer fails or its output no longer has the shape the trap rewrite expects.
Result<GeneratedC> GenerateC(const Module& module, const IrPass& pass = {});

}  // namespace reef::wasm::native
