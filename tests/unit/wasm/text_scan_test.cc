// ScanText (src/wasm/text_scan.h) and Module::FromText's limits: .wat text is refused before
// wabt's parser builds its IR when it would cost too much, with the text's line and column.
#include "wasm/text_scan.h"

#include <gtest/gtest.h>

#include <string>

#include "wasm/module.h"

namespace reef::wasm {
namespace {

std::string Repeat(std::string_view piece, int n) {
  std::string out;
  out.reserve(piece.size() * n);
  for (int i = 0; i < n; ++i) out += piece;
  return out;
}

TEST(TextScanTest, AMegabyteOfEmptyFunctionsIsRefusedBeforeParsing) {
  // 540 KB of `(func)` would take ~50 MB of parser memory (about 540 bytes per field), under
  // max_functions but past 16 x 540 KB + 16 MiB
  std::string wat = "(module" + Repeat("(func)", 90'000) + ")";
  auto shape = ScanText(wat, "funcs.wat", ModuleLimits{});
  ASSERT_FALSE(shape.ok());
  EXPECT_EQ(shape.status().code(), Code::kLimitExceeded);
  EXPECT_NE(shape.status().message().find("funcs.wat: error: parsing this module text would take "
                                          "about"),
            std::string::npos)
      << shape.status().message();
  EXPECT_NE(shape.status().message().find("90000 module fields"), std::string::npos);
  EXPECT_NE(shape.status().message().find("load_memory_factor=16"), std::string::npos);
  // and Module::FromText gives the same answer
  auto module = Module::FromText(wat, "funcs.wat");
  EXPECT_EQ(module.status().message(), shape.status().message());
}

TEST(TextScanTest, AFieldCountPastItsLimitIsNamedAtItsLineAndColumn) {
  ModuleLimits limits;
  limits.max_functions = 10;
  std::string wat = "(module\n" + Repeat("  (func)\n", 11) + ")";
  auto module = Module::FromText(wat, "many.wat", limits);
  ASSERT_FALSE(module.ok());
  EXPECT_EQ(module.status().code(), Code::kLimitExceeded);
  EXPECT_EQ(module.status().message(),
            "many.wat:12:3: error: more than 10 functions; limit max_functions=10");
  // Ten are fine; so are fields counted by kind (ten functions and ten types).
  std::string ten = "(module\n" + Repeat("  (type (func))\n  (func)\n", 10) + ")";
  EXPECT_TRUE(Module::FromText(ten, "ten.wat", limits).ok());
}

TEST(TextScanTest, FieldsOfATextWithoutAModuleFormAreCountedToo) {
  ModuleLimits limits;
  limits.max_globals = 2;
  auto module = Module::FromText(Repeat("(global i32 (i32.const 0))\n", 3), "bare.wat", limits);
  ASSERT_FALSE(module.ok());
  EXPECT_EQ(module.status().message(),
            "bare.wat:3:1: error: more than 2 globals; limit max_globals=2");
}

TEST(TextScanTest, InlineExportsCountAsExports) {
  ModuleLimits limits;
  limits.max_exports = 3;
  std::string wat = "(module\n  (func" + Repeat(" (export \"e\")", 2) +
                    ")\n  (func (export \"f\")" + " (export \"g\")))";
  auto module = Module::FromText(wat, "inline.wat", limits);
  ASSERT_FALSE(module.ok());
  EXPECT_EQ(module.status().message(),
            "inline.wat:3:22: error: more than 3 exports; limit max_exports=3");
}

TEST(TextScanTest, OrdinaryTextIsEstimatedUnderTheBound) {
  std::string body = Repeat("    local.get 0\n    i32.const 1\n    i32.add\n    drop\n", 20'000);
  std::string wat = "(module\n  (func (export \"f\") (param i32)\n" + body + "  )\n)";
  auto shape = ScanText(wat, "code.wat", ModuleLimits{});
  ASSERT_TRUE(shape.ok()) << shape.status().ToString();
  EXPECT_EQ(shape->fields, 2u);                 // the func and its inline export
  EXPECT_EQ(shape->tokens, 5u + 6u * 20'000u);  // module, func, export, param, i32; 6 a group
  EXPECT_TRUE(Module::FromText(wat, "code.wat").ok());
}

TEST(TextScanTest, StringsAndCommentsAreNotCounted) {
  auto shape = ScanText("(module ;; (func) (func)\n (; (func) ;) (data \"(func) (func)\"))",
                        "quiet.wat", ModuleLimits{});
  ASSERT_TRUE(shape.ok()) << shape.status().ToString();
  EXPECT_EQ(shape->fields, 1u);
  EXPECT_EQ(shape->string_bytes, 14u);  // the quotes' contents and the opening quote
}

TEST(TextScanTest, AHugeBadTokenIsNotEchoedWhole) {
  std::string wat = "(module (func (result f64) (f64.const " + std::string(1'000'000, '1') + ")))";
  auto module = Module::FromText(wat, "long.wat");
  ASSERT_FALSE(module.ok());
  EXPECT_LT(module.status().message().size(), 2'000u);
  EXPECT_NE(module.status().message().find("more bytes)"), std::string::npos)
      << module.status().message().substr(0, 500);
}

TEST(TextScanTest, ALimitFoundInTheEncodedBinaryIsNotGivenAsATextOffset) {
  // A type's arity is counted in the binary wabt encodes from the text
  std::string wat = "(module (type (func (param" + Repeat(" i32", 1'001) + "))))";
  auto module = Module::FromText(wat, "wide.wat");
  ASSERT_FALSE(module.ok());
  EXPECT_EQ(module.status().code(), Code::kLimitExceeded);
  EXPECT_EQ(module.status().message().rfind("wide.wat: error: type section: 1001 params", 0), 0u)
      << module.status().message();
  EXPECT_NE(module.status().message().find("of the binary encoding of the text"),
            std::string::npos);
}

}  // namespace
}  // namespace reef::wasm
