// WastScript: the commands of one spec-test script, read from the JSON that wabt's wast2json
// writes for a .wast file (one JSON file plus one .wasm or .wat file per module).
//
// The JSON format is wabt 1.0.32's (docs/wast2json.md in wabt): every command has "type" and
// "line"; numbers are strings holding the value's bits as an unsigned decimal ("4294967295"
// is i32 -1, f32 "2143289344" is 0x7fc00000), or "nan:canonical" / "nan:arithmetic".
//
// Thread ownership: plain values; any thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "wasm/types.h"

namespace reef::spec {

// The command kinds of the spec interpreter's script format, one row each: enumerator and
// the "type" wast2json writes.
#define REEF_SPEC_COMMANDS(X)               \
  X(kModule, "module")                      \
  X(kRegister, "register")                  \
  X(kAction, "action")                      \
  X(kAssertReturn, "assert_return")         \
  X(kAssertTrap, "assert_trap")             \
  X(kAssertExhaustion, "assert_exhaustion") \
  X(kAssertInvalid, "assert_invalid")       \
  X(kAssertMalformed, "assert_malformed")   \
  X(kAssertUnlinkable, "assert_unlinkable") \
  X(kAssertUninstantiable, "assert_uninstantiable")

enum class CommandKind : uint8_t {
#define REEF_X(name, text) name,
  REEF_SPEC_COMMANDS(REEF_X)
#undef REEF_X
};

// "assert_return", ...: the script's own name of the command.
std::string_view CommandKindName(CommandKind kind);

// One value of a command: an argument, or an expected result.
struct ScriptValue {
  enum class Pattern : uint8_t {
    kExact,          // `bits` (numbers) or `text` (references) is the value
    kCanonicalNan,   // "nan:canonical": a NaN with only the quiet bit set in its payload
    kArithmeticNan,  // "nan:arithmetic": a NaN with the quiet bit set
    kAny,            // no value given (assert_trap lists result types only)
  };
  std::string type;  // "i32", "i64", "f32", "f64", "funcref", "externref", "v128"
  Pattern pattern = Pattern::kExact;
  uint64_t bits = 0;  // a number's bits (f32 and i32 in the low 32)
  std::string text;   // the value as written ("null", "1" for references)

  // True for i32, i64, f32 and f64: the types Reef's engine API passes.
  bool is_number() const;
  // The engine value of an exact number; nullopt for references, v128 and NaN patterns.
  std::optional<wasm::WasmValue> ToWasmValue() const;
  // "i32:0x00000005", "f32:nan:canonical", "externref:null": canonical, for outcome lines.
  std::string ToString() const;
};

struct Action {
  enum class Type : uint8_t { kInvoke, kGet };
  Type type = Type::kInvoke;
  std::string module;  // "$name" of a named module; empty means the current module
  std::string field;   // export name
  std::vector<ScriptValue> args;
};

struct Command {
  CommandKind kind = CommandKind::kModule;
  uint32_t line = 0;         // line of the command in the .wast file
  std::string filename;      // module file, relative to the script's directory
  bool text_module = false;  // the module file is .wat text (module_type "text")
  std::string name;          // module: its "$name"; register: the module's "$name" or empty
  std::string as;            // register: the name other modules import it by
  Action action;             // action and assert_return/trap/exhaustion
  std::vector<ScriptValue> expected;  // assert_return results; result types elsewhere
  std::string text;                   // the failure the spec expects ("integer divide by zero")
};

struct WastScript {
  std::string source_name;    // the .wast file's name, e.g. "i32.wast"
  std::filesystem::path dir;  // directory holding the JSON and its module files
  std::vector<Command> commands;

  // Reads wast2json output. Errors: NotFound when the file cannot be read; InvalidArgument
  // naming the command's line when the JSON does not have wast2json's shape.
  static Result<WastScript> Load(const std::filesystem::path& json_path);
};

}  // namespace reef::spec
