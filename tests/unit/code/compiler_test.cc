// Compiling sources (.wat in-process, .c through clang) and the compile cache.
#include "code/compiler.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "actor/guest_abi.h"
#include "code/compile_cache.h"
#include "code/source_store.h"
#include "wasm/engine.h"

namespace reef::code {
namespace {

// An actor in .wat: handle returns the state it was given (ABI v1 exports).
constexpr std::string_view kWatActor = R"((module
  (memory (export "memory") 1)
  (global $top (mut i32) (i32.const 1024))
  (func (export "reef_abi_version") (result i32) (i32.const 1))
  (func (export "reef_alloc") (param $n i32) (result i32)
    (local $p i32)
    (local.set $p (global.get $top))
    (global.set $top (i32.add (global.get $top) (local.get $n)))
    (local.get $p))
  (func (export "reef_handle") (param i32 i32 i32 i32 i32 i32) (result i64)
    (i64.const 0)))
)";

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class CompilerTest : public ::testing::Test {
 protected:
  void RequireClang() {
    if (compiler_->options().clang.empty()) GTEST_SKIP() << "no clang for wasm32 configured";
  }
  std::shared_ptr<const Compiler> compiler_ = Compiler::Create();
};

TEST_F(CompilerTest, CompileWatInProcess) {
  auto output = compiler_->Compile(SourceKind::kWat, "(module (func (export \"f\")))", "m");
  ASSERT_TRUE(output.ok()) << output.status().ToString();
  EXPECT_NE(output->module->FindExport("f"), nullptr);
}

TEST_F(CompilerTest, CompileWatErrorNamesTheLine) {
  auto output = compiler_->Compile(SourceKind::kWat, "(module\n  (func (foo)))", "actors/bad");
  EXPECT_EQ(output.status().code(), Code::kInvalidArgument);
  EXPECT_TRUE(output.status().message().starts_with("compile error:\nactors/bad.wat:2:"))
      << output.status().message();
}

TEST_F(CompilerTest, CompileCReturnsClangDiagnostics) {
  RequireClang();
  // Given C source with a syntax error on line 3
  std::string source = "#include \"reef.h\"\nint f(void) {\n  return 1 +;\n}\n";
  // when it is compiled
  auto output = compiler_->Compile(SourceKind::kC, source, "actors/broken");
  // then clang's diagnostics come back verbatim, naming the file and line
  ASSERT_EQ(output.status().code(), Code::kInvalidArgument) << output.status().ToString();
  const std::string message = output.status().message();
  EXPECT_TRUE(message.starts_with("compile error:\n")) << message;
  EXPECT_NE(message.find("actors/broken.c:3:"), std::string::npos) << message;
  EXPECT_NE(message.find("error:"), std::string::npos) << message;
}

TEST_F(CompilerTest, AnSdkThatDoesNotBuildIsReefsErrorAndIsTriedAgain) {
  RequireClang();
  // Given an SDK directory whose one source has a syntax error
  const std::filesystem::path sdk =
      std::filesystem::temp_directory_path() / fmt::format("reef-sdk-test-{}", ::getpid());
  std::filesystem::create_directories(sdk);
  auto write = [&sdk](const char* name, const char* text) { std::ofstream(sdk / name) << text; };
  write("reef.h", "int reef_sdk_answer(void);\n");
  write("reef_broken.c", "int reef_sdk_answer(void) { return 1 +; }\n");
  CompilerOptions options;
  options.sdk_dir = sdk.string();
  std::shared_ptr<const Compiler> compiler = Compiler::Create(options);
  // when a guest that is fine compiles, it fails as Reef's fault, not the guest's
  const std::string source = "#include \"reef.h\"\nint f(void) { return reef_sdk_answer(); }\n";
  auto broken = compiler->Compile(SourceKind::kC, source, "actors/fine");
  EXPECT_EQ(broken.status().code(), Code::kInternal) << broken.status().ToString();
  EXPECT_NE(broken.status().message().find("the C SDK"), std::string::npos);
  // and once the SDK builds, the same compiler builds its objects and links them
  write("reef_broken.c", "int reef_sdk_answer(void) { return 1; }\n");
  auto mended = compiler->Compile(SourceKind::kC, source, "actors/fine");
  EXPECT_TRUE(mended.ok()) << mended.status().ToString();
  std::filesystem::remove_all(sdk);
}

TEST_F(CompilerTest, CompileCProducesAnActorImplementation) {
  RequireClang();
  // Given the counter example saved in a source store
  std::string pattern = (std::filesystem::temp_directory_path() / "reef-cc-test-XXXXXX").string();
  ASSERT_NE(mkdtemp(pattern.data()), nullptr);
  {
    auto store = SourceStore::Open(pattern);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    // The repository's example, found from the fixtures directory (tests/fixtures).
    std::string counter =
        ReadText((std::filesystem::path(REEF_FIXTURES_DIR) / "../../examples/counter/counter.c")
                     .lexically_normal()
                     .string());
    ASSERT_TRUE((*store)->Write("actors/counter", SourceKind::kC, counter, std::nullopt).ok());
    auto file = (*store)->Read("actors/counter");
    ASSERT_TRUE(file.ok());
    // when it is compiled through the cache
    CompileCache cache(compiler_);
    auto implementation = cache.Get(*file);
    // then it is an ABI v1 actor implementation that instantiates
    ASSERT_TRUE(implementation.ok()) << implementation.status().ToString();
    EXPECT_EQ((*implementation)->label, "actors/counter");
    // whose identity is the source's, under this compiler, engine and ABI
    EXPECT_EQ((*implementation)->id,
              actor::ImplementationId(
                  SourceOrigin(file->id, "actors/counter", compiler_->Fingerprint(SourceKind::kC)),
                  actor::AbiV1Registry()));
    EXPECT_NE((*implementation)->id,
              actor::ImplementationId(actor::ModuleOrigin(*(*implementation)->module),
                                      actor::AbiV1Registry()));
    wasm::Engine engine(actor::AbiV1Registry());
    auto instance = engine.Instantiate((*implementation)->module);
    EXPECT_TRUE(instance.ok()) << instance.status().ToString();
  }
  std::error_code ec;
  std::filesystem::remove_all(pattern, ec);
}

TEST_F(CompilerTest, CacheHitDoesNotRecompile) {
  CompileCache cache(compiler_);
  // Given a source compiled once
  auto first = cache.Get(SourceKind::kWat, kWatActor, "actors/echo");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(cache.compile_count(), 1u);
  // when the unchanged source is asked for again
  auto second = cache.Get(SourceKind::kWat, kWatActor, "actors/echo");
  // then the same implementation comes back without a compile
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(first->get(), second->get());
  EXPECT_EQ(cache.compile_count(), 1u);
  EXPECT_EQ(cache.Find((*first)->id), *first);
  // and a changed source compiles again
  auto changed = cache.Get(SourceKind::kWat, std::string(kWatActor) + " ", "actors/echo");
  ASSERT_TRUE(changed.ok());
  EXPECT_EQ(cache.compile_count(), 2u);
  // to the same module, but a different source: a different implementation identity
  EXPECT_EQ((*changed)->module->id(), (*first)->module->id());
  EXPECT_NE((*changed)->id, (*first)->id);
  EXPECT_EQ(cache.size(), 2u);
}

TEST_F(CompilerTest, TheSameSourceAtTwoPathsIsTwoImplementationsEachWithItsPath) {
  CompileCache cache(compiler_);
  auto echo = cache.Get(SourceKind::kWat, kWatActor, "actors/echo");
  auto copy = cache.Get(SourceKind::kWat, kWatActor, "actors/copy");
  ASSERT_TRUE(echo.ok() && copy.ok());
  // Each keeps its own path (reload recompiles it; the durable image records it by id).
  EXPECT_EQ((*echo)->label, "actors/echo");
  EXPECT_EQ((*copy)->label, "actors/copy");
  EXPECT_NE((*echo)->id, (*copy)->id);
  EXPECT_EQ(cache.compile_count(), 2u);
  // and each is found again without a compile
  auto again = cache.Get(SourceKind::kWat, kWatActor, "actors/copy");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->get(), copy->get());
  EXPECT_EQ(cache.compile_count(), 2u);
}

TEST_F(CompilerTest, InvalidSourceProducesNoImplementationAndIsNotRecompiled) {
  CompileCache cache(compiler_);
  auto first = cache.Get(SourceKind::kWat, "(module (func", "bad");
  auto second = cache.Get(SourceKind::kWat, "(module (func", "bad");
  EXPECT_EQ(first.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(second.status().message(), first.status().message());
  EXPECT_EQ(cache.compile_count(), 1u);
  EXPECT_EQ(cache.size(), 0u);
}

}  // namespace
}  // namespace reef::code
