// What a refused module is told: one line naming the file once, the offset and the reason;
// and which modules the spec calls malformed because of a custom section.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "wasm/module.h"

namespace reef::wasm {
namespace {

using Bytes = std::vector<uint8_t>;

Bytes Wasm(const Bytes& sections) {
  Bytes out = {0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00};
  for (uint8_t byte : sections) out.push_back(byte);
  return out;
}

// (func (result i32) (i64.const 0)): valid framing, invalid types.
const Bytes kTypeMismatch = Wasm({0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7f,  // type
                                  0x03, 0x02, 0x01, 0x00,                    // function
                                  0x0a, 0x06, 0x01, 0x04, 0x00, 0x42, 0x00, 0x0b});

TEST(ModuleErrorsTest, AnInvalidBinaryIsOneLineNamingTheFileOnce) {
  auto module = Module::FromBinary(kTypeMismatch, "memory.7.wasm");
  ASSERT_FALSE(module.ok());
  EXPECT_EQ(module.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(module.status().message(),
            "memory.7.wasm:000001b: error: type mismatch in implicit return, expected [i32] but "
            "got [i64]");
}

TEST(ModuleErrorsTest, AMalformedBinaryIsOneLineNamingTheSection) {
  const Bytes truncated = Wasm({0x01, 0xff});
  auto module = Module::FromBinary(truncated, "bad.wasm");
  ASSERT_FALSE(module.ok());
  EXPECT_EQ(module.status().message(),
            "bad.wasm:0000009: error: malformed type section: unexpected end (in a LEB128 "
            "integer)");
}

TEST(ModuleErrorsTest, ADirectoryIsNotAModuleFile) {
  auto dir = std::filesystem::temp_directory_path();
  auto module = Module::FromFile(dir);
  ASSERT_FALSE(module.ok());
  EXPECT_EQ(module.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(module.status().message(),
            dir.string() + ": is a directory, not a module file (.wasm or .wat)");
}

TEST(ModuleErrorsTest, AFileErrorNamesThePathOnce) {
  auto path = std::filesystem::temp_directory_path() / "reef_module_errors_test.wasm";
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(kTypeMismatch.data()),
              static_cast<std::streamsize>(kTypeMismatch.size()));
  }
  auto module = Module::FromFile(path);
  std::filesystem::remove(path);
  ASSERT_FALSE(module.ok());
  EXPECT_EQ(module.status().message(),
            path.string() +
                ":000001b: error: type mismatch in implicit return, expected [i32] but got [i64]");
}

// From the spec suite (custom.wast, binary-leb128.wast, utf8-custom-section-id.wast): a custom
// section's framing and name are part of the binary format, so these modules are malformed.
TEST(ModuleErrorsTest, MalformedCustomSectionsMakeTheModuleMalformed) {
  struct Case {
    const char* spec;
    Bytes wasm;
    const char* reason;
  };
  const Case cases[] = {
      {"custom.wast:68 no name", Wasm({0x00, 0x00}), "unexpected end"},
      {"custom.wast:76 empty section, then a name past its section",
       Wasm({0x00, 0x00, 0x00, 0x05, 0x01, 0x00, 0x07, 0x00, 0x00}), "unexpected end"},
      {"binary-leb128.wast:268 name length in 6 bytes",
       Wasm({0x00, 0x0a, 0x83, 0x80, 0x80, 0x80, 0x80, 0x00, '1', '2', '3', '4'}),
       "integer representation too long"},
      {"binary-leb128.wast:593 name length with unused bits set",
       Wasm({0x00, 0x09, 0x83, 0x80, 0x80, 0x80, 0x40, '1', '2', '3', '4'}), "integer too large"},
      {"utf8-custom-section-id.wast:7 name is a lone continuation byte",
       Wasm({0x00, 0x02, 0x01, 0x80}), "malformed UTF-8 encoding"},
      {"a surrogate code point (U+D800) as the name", Wasm({0x00, 0x04, 0x03, 0xed, 0xa0, 0x80}),
       "malformed UTF-8 encoding"},
  };
  for (const Case& c : cases) {
    auto module = Module::FromBinary(c.wasm, "custom.wasm");
    ASSERT_FALSE(module.ok()) << c.spec;
    EXPECT_EQ(module.status().code(), Code::kInvalidArgument) << c.spec;
    EXPECT_NE(module.status().message().find("malformed custom section"), std::string::npos)
        << c.spec << ": " << module.status().message();
    EXPECT_NE(module.status().message().find(c.reason), std::string::npos)
        << c.spec << ": " << module.status().message();
  }
}

// The spec does not look inside a custom section: contents that would be a broken name
// section (or anything else) leave the module valid.
TEST(ModuleErrorsTest, CustomSectionContentsAreNotValidated) {
  const Bytes broken_names = Wasm({0x00, 0x08, 0x04, 'n', 'a', 'm', 'e', 0x01, 0xff, 0xff});
  EXPECT_TRUE(Module::FromBinary(broken_names, "names.wasm").ok());
  const Bytes broken_linking =
      Wasm({0x00, 0x0a, 0x07, 'l', 'i', 'n', 'k', 'i', 'n', 'g', 0x02, 0xff});
  EXPECT_TRUE(Module::FromBinary(broken_linking, "linking.wasm").ok());
  const Bytes utf8_name = Wasm({0x00, 0x05, 0x04, 0xf0, 0x9f, 0x90, 0xa0});  // U+1F420
  EXPECT_TRUE(Module::FromBinary(utf8_name, "fish.wasm").ok());
}

}  // namespace
}  // namespace reef::wasm

namespace reef::wasm {
namespace {

// Proposals Reef refuses are refused at load, before any tier is chosen, with their name.
TEST(ModuleErrorsTest, RefusedProposalsAreNamedInTextAndBinary) {
  const struct {
    std::string_view feature;
    std::string_view wat;
  } kCases[] = {
      {"SIMD (v128)",
       "(module (func (result i32) (i32x4.extract_lane 0 (v128.const i32x4 1 2 3 4))))"},
      {"SIMD (v128)", "(module (func (param v128)))"},
      {"tail calls", "(module (func $f (return_call $f)))"},
      {"exception handling", "(module (tag $e) (func (throw $e)))"},
      {"threads (atomics, shared memory)", "(module (memory 1 1 shared))"},
      {"threads (atomics, shared memory)",
       "(module (memory 1 1 shared) (func (result i32) (i32.atomic.load (i32.const 0))))"},
      {"memory64", "(module (memory i64 1))"},
      {"multiple memories", "(module (memory 1) (memory 1))"},
  };
  for (const auto& c : kCases) {
    auto module = Module::FromText(c.wat, "f.wat");
    ASSERT_FALSE(module.ok()) << c.wat;
    EXPECT_EQ(module.status().code(), Code::kInvalidArgument);
    EXPECT_EQ(module.status().message(),
              "f.wat: error: the module uses " + std::string(c.feature) +
                  ", which Reef does not support (on either engine tier)")
        << c.wat;
  }
  auto tag_section = Module::FromBinary(Wasm({0x0d, 0x01, 0x00}), "t.wasm");
  EXPECT_EQ(tag_section.status().message(),
            "t.wasm: error: the module uses exception handling, which Reef does not support (on "
            "either engine tier)");
  // Malformed is still malformed, not a proposal.
  auto malformed = Module::FromBinary(Wasm({0x0a, 0x04, 0x01, 0x02, 0x00, 0xfd}), "m.wasm");
  ASSERT_FALSE(malformed.ok());
  EXPECT_EQ(malformed.status().message().find("the module uses"), std::string::npos)
      << malformed.status().message();
}

}  // namespace
}  // namespace reef::wasm
