// The native tier's pipeline: C generation, the compiler run and its failure modes, loading.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <fstream>

#include "unit/wasm/native_support.h"
#include "wasm/host.h"
#include "wasm/native/c_gen.h"
#include "wasm/native/compiler.h"
#include "wasm/native/detail/c_glue.h"
#include "wasm/native/process.h"

namespace reef::wasm::native {
namespace {

using native_test::CompileWat;
using native_test::ParseWat;

constexpr std::string_view kAddWat = R"((module
  (import "reef" "send" (func (param i32 i32)))
  (memory 1)
  (func (export "add") (param i32 i32) (result i32) local.get 0 local.get 1 i32.add)
  (func (export "take_ref") (param externref))
))";

TEST(NativeCGen, MangleNameFollowsWasm2c) {
  EXPECT_EQ(detail::MangleName("m"), "Z_m");
  EXPECT_EQ(detail::MangleName("send_2"), "Z_send_2");
  EXPECT_EQ(detail::MangleName("Zed.x"), "Z_Z5AedZ2Ex");
  EXPECT_EQ(detail::MangleName(""), "Z_");
}

TEST(NativeCGen, GeneratesModuleHeaderAndGlueWithHostCallableExportsOnly) {
  auto module = ParseWat(kAddWat);
  ASSERT_NE(module, nullptr);

  auto c = GenerateC(*module);

  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_NE(c->module_header.find("Z_m_instance_t"), std::string::npos);
  EXPECT_NE(c->module_source.find("TRAP(TABLE_OOB)"), std::string::npos);
  EXPECT_NE(c->glue_source.find("reef_glue_instantiate"), std::string::npos);
  ASSERT_EQ(c->exports.size(), 1u);  // take_ref has a reference parameter
  EXPECT_EQ(c->exports[0].name, "add");
  ASSERT_EQ(c->imports.size(), 1u);
  EXPECT_EQ(c->imports[0].module, "reef");
  EXPECT_EQ(c->imports[0].signature.ToString(), "(i32, i32) -> ()");
}

// wabt 1.0.32 copies export names into C comments unescaped: a name holding "*/" must not
// reach the C text, and the export still answers to the name the module gave it.
TEST(NativeCGen, ExportNamesNeverReachTheCText) {
  constexpr std::string_view kPayload = R"(*/\n#error injected\n/*)";  // WAT escapes
  auto module = ParseWat(fmt::format(R"((module
    (func (export "{0}") (result i32) i32.const 7)
    (func (export "reef:export.0") (result i32) i32.const 8)
    (global (export "{0}.g") i32 (i32.const 1))
    (func (export "plain") (result i32) i32.const 9)))",
                                     kPayload));
  ASSERT_NE(module, nullptr);

  auto c = GenerateC(*module);

  ASSERT_TRUE(c.ok()) << c.status().ToString();
  for (const std::string* text : {&c->module_source, &c->module_header, &c->glue_source}) {
    EXPECT_EQ(text->find("#error injected"), std::string::npos);
  }
  ASSERT_EQ(c->exports.size(), 3u);
  EXPECT_EQ(c->exports[0].name, "*/\n#error injected\n/*");
  EXPECT_EQ(c->exports[1].name, "reef:export.0");
  EXPECT_EQ(c->exports[2].name, "plain");

  HostRegistry registry("reef", 1);
  Engine engine(registry, {}, Tier::kNative);
  auto instance = native_test::Instantiate(engine, module);
  ASSERT_NE(instance, nullptr);
  const int32_t expected[] = {7, 8, 9};
  for (size_t i = 0; i < 3; ++i) {
    auto result = instance->Call(c->exports[i].name, {});
    ASSERT_TRUE(result.ok()) << result.status().ToString();
    EXPECT_EQ(std::get<int32_t>(result->at(0)), expected[i]);
  }
}

TEST(NativeCGen, IrPassRunsBeforeValidationAndItsErrorStopsGeneration) {
  auto module = ParseWat(kAddWat);
  ASSERT_NE(module, nullptr);
  int runs = 0;

  auto c = GenerateC(*module, [&runs](wabt::Module&) {
    ++runs;
    return Status::FailedPrecondition("metering refused");
  });

  EXPECT_EQ(runs, 1);
  EXPECT_EQ(c.status().code(), Code::kFailedPrecondition);
}

TEST(NativeCGen, NonFunctionImportsAreUnimplemented) {
  auto module = ParseWat(R"((module (import "env" "mem" (memory 1))))");
  ASSERT_NE(module, nullptr);

  auto c = GenerateC(*module);

  EXPECT_EQ(c.status().code(), Code::kUnimplemented);
  EXPECT_NE(c.status().message().find("env.mem"), std::string::npos);
}

TEST(NativeCompiler, NoCompilerFoundNamesWhatWasTried) {
  CompileOptions options;
  options.search_path = "/nonexistent-reef-bin";

  auto found = FindCompiler(options);

  ASSERT_EQ(found.status().code(), Code::kNotFound);
  EXPECT_NE(found.status().message().find("no C compiler found"), std::string::npos);
  EXPECT_NE(found.status().message().find("cc, gcc, clang"), std::string::npos);
  EXPECT_NE(found.status().message().find("/nonexistent-reef-bin"), std::string::npos);
}

// A compiler given as a path says what is wrong with that path; a directory is no compiler.
TEST(NativeCompiler, ACompilerPathThatIsNoProgramIsNamed) {
  for (const char* path : {"/nonexistent-reef-cc", "/tmp"}) {
    CompileOptions options;
    options.compiler = path;

    auto found = FindCompiler(options);

    ASSERT_EQ(found.status().code(), Code::kNotFound) << path;
    EXPECT_NE(found.status().message().find(fmt::format("`{}` is not an executable file", path)),
              std::string::npos)
        << found.status().message();
    EXPECT_EQ(found.status().message().find("PATH"), std::string::npos) << found.status().message();
  }
}

TEST(NativeCompiler, CompileWithoutCompilerFailsCleanly) {
  auto module = ParseWat(kAddWat);
  ASSERT_NE(module, nullptr);
  CompileOptions options;
  options.compiler = "/nonexistent/reef-cc";

  auto native = NativeModule::Compile(module, options);

  ASSERT_EQ(native.status().code(), Code::kNotFound);
  EXPECT_NE(native.status().message().find("/nonexistent/reef-cc"), std::string::npos);
}

TEST(NativeCompiler, CompilerDiagnosticsAreInTheError) {
  auto module = ParseWat(kAddWat);
  ASSERT_NE(module, nullptr);
  CompileOptions options;
  options.extra_flags = {"-DREEF_BREAK", "-include", "no-such-header-reef.h"};

  auto native = NativeModule::Compile(module, options);

  ASSERT_EQ(native.status().code(), Code::kInternal);
  EXPECT_NE(native.status().message().find("C compiler failed (exit code"), std::string::npos);
  EXPECT_NE(native.status().message().find("no-such-header-reef.h"), std::string::npos);
}

TEST(NativeCompiler, CompilerPastItsWallTimeIsKilled) {
  auto dir = TempDir::Create();
  ASSERT_TRUE(dir.ok());
  const auto fake = dir->path() / "slow-cc";
  std::ofstream(fake) << "#!/bin/sh\nsleep 30\n";
  ASSERT_EQ(chmod(fake.c_str(), 0700), 0);
  auto module = ParseWat(kAddWat);
  ASSERT_NE(module, nullptr);
  CompileOptions options;
  options.compiler = fake.string();
  options.wall_time = std::chrono::milliseconds(300);
  const auto start = std::chrono::steady_clock::now();

  auto native = NativeModule::Compile(module, options);

  EXPECT_EQ(native.status().code(), Code::kLimitExceeded);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(NativeProcess, AddressSpaceCapAppliesToTheChild) {
  ProcessLimits limits;
  limits.address_space_bytes = 64ull << 20;
  // Python needs more than 64 MiB of address space to start; /bin/sh allocating 200 MB
  // portably is awkward, so ask the shell itself for its limit.
  auto run = RunProcess({"/bin/sh", "-c", "ulimit -v"}, {"PATH=/usr/bin:/bin"}, "/", limits);

  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_TRUE(run->ok());
  EXPECT_EQ(run->output, "65536\n");  // KiB
}

TEST(NativeModuleLoad, CompiledLibraryLoadsAndReportsItsCompileCost) {
  auto native = CompileWat(kAddWat);
  ASSERT_NE(native, nullptr);

  EXPECT_EQ(native->FindExport("add"), 0);
  EXPECT_EQ(native->FindExport("take_ref"), -1);
  EXPECT_GT(native->compile_stats().cpu_seconds, 0.0);
  EXPECT_GT(native->compile_stats().c_bytes, 1000u);
}

}  // namespace
}  // namespace reef::wasm::native
