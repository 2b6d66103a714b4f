// The pre-pass over wasm binaries (wasm/binary_scan.h): every declared count and size is
// checked against the bytes that remain, and against ModuleLimits, before wabt reads anything.
#include "wasm/binary_scan.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "wasm/module.h"

namespace reef::wasm {
namespace {

using Bytes = std::vector<uint8_t>;

Bytes Leb(uint64_t value) {
  Bytes out;
  do {
    uint8_t byte = value & 0x7f;
    value >>= 7;
    out.push_back(value ? byte | 0x80 : byte);
  } while (value);
  return out;
}

Bytes Cat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const Bytes& p : parts) {
    for (uint8_t byte : p) out.push_back(byte);
  }
  return out;
}

Bytes Section(uint8_t id, const Bytes& body) {
  return Cat({{id}, Leb(body.size()), body});
}

// The 8-byte header followed by `sections`.
Bytes Wasm(std::initializer_list<Bytes> sections) {
  Bytes out = {0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00};
  for (const Bytes& s : sections) {
    for (uint8_t byte : s) out.push_back(byte);
  }
  return out;
}

const Bytes kHuge = Leb(0xffffffffu);
const Bytes kOneType = Section(1, {0x01, 0x60, 0x00, 0x00});  // type 0: () -> ()
const Bytes kOneFunction = Section(3, {0x01, 0x00});          // function 0 has type 0

struct HostileCount {
  const char* count;  // what the count counts
  Bytes wasm;
  const char* message;  // expected part of the error
};

// One module per kind of declared count or size, each claiming 2^32-1 (or more than remains).
std::vector<HostileCount> HostileCounts() {
  return {
      {"data count", Wasm({Section(12, kHuge)}),
       "malformed data count section: declares 4294967295 data segments"},
      {"types", Wasm({Section(1, kHuge)}), "malformed type section: declares 4294967295 types"},
      {"params", Wasm({Section(1, Cat({{0x01, 0x60}, kHuge}))}),
       "malformed type section: declares 4294967295 value types"},
      {"results", Wasm({Section(1, Cat({{0x01, 0x60, 0x00}, kHuge}))}),
       "malformed type section: declares 4294967295 value types"},
      {"imports", Wasm({Section(2, kHuge)}), "malformed import section: declares 4294967295"},
      {"import name", Wasm({Section(2, Cat({{0x01}, kHuge}))}),
       "malformed import section: length out of bounds"},
      {"functions", Wasm({Section(3, kHuge)}), "malformed function section: declares 4294967295"},
      {"tables", Wasm({Section(4, kHuge)}), "malformed table section: declares 4294967295"},
      {"memories", Wasm({Section(5, kHuge)}), "malformed memory section: declares 4294967295"},
      {"globals", Wasm({Section(6, kHuge)}), "malformed global section: declares 4294967295"},
      {"exports", Wasm({Section(7, kHuge)}), "malformed export section: declares 4294967295"},
      {"export name", Wasm({Section(7, Cat({{0x01}, kHuge}))}),
       "malformed export section: length out of bounds"},
      {"element segments", Wasm({Section(9, kHuge)}),
       "malformed element section: declares 4294967295 element segments"},
      {"element entries", Wasm({Section(9, Cat({{0x01, 0x01, 0x00}, kHuge}))}),
       "malformed element section: declares 4294967295 elements"},
      {"function bodies", Wasm({kOneType, kOneFunction, Section(10, kHuge)}),
       "malformed code section: declares 4294967295 function bodies"},
      {"function body size", Wasm({kOneType, kOneFunction, Section(10, Cat({{0x01}, kHuge}))}),
       "malformed code section: function body 0 declares 4294967295 bytes"},
      {"local declarations",
       Wasm({kOneType, kOneFunction, Section(10, Cat({{0x01, 0x06}, kHuge, {0x0b}}))}),
       "malformed code section: declares 4294967295 local declarations"},
      {"data segments", Wasm({Section(11, kHuge)}),
       "malformed data section: declares 4294967295 data segments"},
      {"data segment size", Wasm({Section(11, Cat({{0x01, 0x01}, kHuge}))}),
       "malformed data section: data segment 0 declares 4294967295 bytes"},
      {"section size", Cat({Wasm({}), {0x01}, kHuge}),
       "malformed type section: length out of bounds"},
      {"custom section name", Wasm({Section(0, Cat({kHuge}))}),
       "malformed custom section: length out of bounds"},
  };
}

TEST(BinaryScanTest, EveryDeclaredCountLargerThanTheRestIsRefusedNamingItsSection) {
  for (const HostileCount& c : HostileCounts()) {
    SCOPED_TRACE(c.count);
    auto shape = ScanBinary(c.wasm, "hostile.wasm", {});
    ASSERT_FALSE(shape.ok());
    EXPECT_EQ(shape.status().code(), Code::kInvalidArgument);
    EXPECT_NE(shape.status().message().find(c.message), std::string::npos)
        << shape.status().message();
    EXPECT_EQ(shape.status().message().rfind("hostile.wasm:0", 0), 0u) << shape.status().message();
  }
}

// The module from the report: a DataCount section declaring 2^32-1 segments, 15 bytes.
TEST(BinaryScanTest, HugeDataCountIsAMalformedModuleWithinMilliseconds) {
  const Bytes wasm = {0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
                      0x0c, 0x05, 0xff, 0xff, 0xff, 0xff, 0x0f};
  auto start = std::chrono::steady_clock::now();
  auto module = Module::FromBinary(wasm, "hostile.wasm");
  auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(module.ok());
  EXPECT_EQ(module.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(module.status().message(),
            "hostile.wasm:000000a: error: malformed data count section: declares 4294967295 "
            "data segments but only 0 bytes follow it");
  EXPECT_LT(elapsed, std::chrono::milliseconds(50));
}

TEST(BinaryScanTest, LocalsAreCountedAcrossDeclarationsWithTheParams) {
  // (func (param i32) (local 30000 i32) (local 30000 i64)): 60,001 > 50,000.
  const Bytes one_param = Section(1, {0x01, 0x60, 0x01, 0x7f, 0x00});
  const Bytes code =
      Section(10, Cat({{0x01, 0x09, 0x02}, Leb(30000), {0x7f}, Leb(30000), {0x7e}, {0x0b}}));
  auto shape = ScanBinary(Wasm({one_param, kOneFunction, code}), "locals.wasm", {});
  ASSERT_FALSE(shape.ok());
  EXPECT_EQ(shape.status().code(), Code::kLimitExceeded);
  EXPECT_NE(shape.status().message().find("function 0 declares 60001 params and locals; limit "
                                          "max_function_locals=50000"),
            std::string::npos)
      << shape.status().message();
  // Two declarations of 2^32-1 locals each do not wrap around.
  const Bytes wrapping =
      Section(10, Cat({{0x01, 0x0d, 0x02}, kHuge, {0x7f}, kHuge, {0x7f}, {0x0b}}));
  EXPECT_EQ(ScanBinary(Wasm({kOneType, kOneFunction, wrapping}), "w.wasm", {}).status().code(),
            Code::kLimitExceeded);
}

TEST(BinaryScanTest, DeclaredCountsAreBoundedByModuleLimits) {
  ModuleLimits limits;
  limits.max_functions = 2;
  limits.max_types = 1;
  limits.max_globals = 1;
  limits.max_exports = 1;
  limits.max_data_segments = 1;
  struct LimitCase {
    Bytes wasm;
    const char* field;
  };
  const Bytes two_globals =
      Section(6, {0x02, 0x7f, 0x00, 0x41, 0x00, 0x0b, 0x7f, 0x00, 0x41, 0x00, 0x0b});
  const LimitCase cases[] = {
      {Wasm({kOneType, Section(3, {0x03, 0x00, 0x00, 0x00})}), "max_functions=2"},
      {Wasm({Section(1, {0x02, 0x60, 0x00, 0x00, 0x60, 0x00, 0x00})}), "max_types=1"},
      {Wasm({two_globals}), "max_globals=1"},
      {Wasm({Section(7, {0x02, 0x01, 'a', 0x00, 0x00, 0x01, 'b', 0x00, 0x00})}), "max_exports=1"},
      {Wasm({Section(12, {0x02}), Section(11, {0x02, 0x01, 0x00, 0x01, 0x00})}),
       "max_data_segments=1"},
  };
  for (const LimitCase& c : cases) {
    auto shape = ScanBinary(c.wasm, "counts.wasm", limits);
    ASSERT_FALSE(shape.ok()) << c.field;
    EXPECT_EQ(shape.status().code(), Code::kLimitExceeded) << shape.status().message();
    EXPECT_NE(shape.status().message().find(c.field), std::string::npos)
        << shape.status().message();
  }
}

// A module that honestly declares many one-byte functions is refused by its estimated load
// memory before wabt allocates anything for it.
TEST(BinaryScanTest, ManySmallFunctionsAreRefusedByTheLoadMemoryBound) {
  const uint32_t n = 50'000;
  Bytes functions = Leb(n);
  Bytes bodies = Leb(n);
  for (uint32_t i = 0; i < n; ++i) {
    functions.push_back(0x00);
    bodies.insert(bodies.end(), {0x02, 0x00, 0x0b});
  }
  const Bytes wasm = Wasm({kOneType, Section(3, functions), Section(10, bodies)});
  ModuleLimits limits;
  limits.load_memory_allowance = 1 << 20;
  auto module = Module::FromBinary(wasm, "many.wasm", limits);
  ASSERT_FALSE(module.ok());
  EXPECT_EQ(module.status().code(), Code::kLimitExceeded);
  EXPECT_NE(module.status().message().find("most of it for its 50000 functions"), std::string::npos)
      << module.status().message();
  EXPECT_NE(module.status().message().find("load_memory_factor=16"), std::string::npos);
  // The same module within a larger bound loads.
  limits.load_memory_factor = 200;
  EXPECT_TRUE(Module::FromBinary(wasm, "many.wasm", limits).ok());
}

TEST(BinaryScanTest, CountsWhatAValidModuleDeclares) {
  auto module = Module::FromText(R"((module
    (import "m" "f" (func $imported (param i32)))
    (memory 1)
    (global (mut i32) (i32.const 7))
    (table 2 funcref)
    (elem (i32.const 0) $helper $helper)
    (data (i32.const 0) "abc")
    (func $helper (local i64 i64))
    (func (export "run") (call $helper)))
  )");
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto shape = ScanBinary((*module)->bytes(), "valid.wasm", {});
  ASSERT_TRUE(shape.ok()) << shape.status().ToString();
  EXPECT_EQ(shape->imports, 1u);
  EXPECT_EQ(shape->functions, 3u);
  EXPECT_EQ(shape->imported_functions, 1u);
  EXPECT_EQ(shape->memories, 1u);
  EXPECT_EQ(shape->globals, 1u);
  EXPECT_EQ(shape->tables, 1u);
  EXPECT_EQ(shape->exports, 1u);
  EXPECT_EQ(shape->elem_segments, 1u);
  EXPECT_EQ(shape->elem_entries, 2u);
  EXPECT_EQ(shape->data_segments, 1u);
  EXPECT_EQ(shape->data_bytes, 3u);
  // The name section gives the unexported functions their names.
  EXPECT_EQ((*module)->FunctionName(0), "imported");
  EXPECT_EQ((*module)->FunctionName(1), "helper");
  EXPECT_EQ((*module)->FunctionName(2), "run");
}

TEST(BinaryScanTest, OverlongAndOversizedLeb128AreMalformed) {
  // A type count of 1 written in 6 bytes, and a 5-byte one with bits above 32 set.
  auto too_long = ScanBinary(Wasm({Section(1, {0x81, 0x80, 0x80, 0x80, 0x80, 0x00})}), "l", {});
  EXPECT_NE(too_long.status().message().find("integer representation too long"), std::string::npos)
      << too_long.status().message();
  auto too_large = ScanBinary(Wasm({Section(1, {0x81, 0x80, 0x80, 0x80, 0x10})}), "l", {});
  EXPECT_NE(too_large.status().message().find("integer too large"), std::string::npos)
      << too_large.status().message();
}

// Found by fuzz/module_fuzz.cc: wabt 1.0.32 accepts a global whose initializer runs to the
// end of its section without `end` (its LEB128 ate the 0x0b); the spec calls it malformed.
TEST(BinaryScanTest, AConstantExpressionWithoutItsEndIsMalformed) {
  const Bytes wasm = Wasm({Section(6, {0x01, 0x7f, 0x00, 0x41, 0xff, 0xff, 0x0b})});
  auto module = Module::FromBinary(wasm, "cut.wasm");
  ASSERT_FALSE(module.ok());
  EXPECT_EQ(module.status().message(),
            "cut.wasm:0000011: error: malformed global section: unexpected end: a constant "
            "expression needs its `end` (0x0b)");
}

}  // namespace
}  // namespace reef::wasm
