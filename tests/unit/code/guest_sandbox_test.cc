// The guest C compile sandbox (code/guest_sandbox.h) through the real Compiler and clang: a
// guest source reads no file of the server, and its compile errors echo none.
#include "code/guest_sandbox.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "code/compiler.h"

namespace reef::code {
namespace {

namespace fs = std::filesystem;

// A valid actor, appended to the sources below so that only the part under test can fail.
constexpr std::string_view kActor = R"(
#include "reef.h"
static reef_cbor handle(reef_cbor state, reef_cbor sender, reef_cbor message) {
  (void)sender; (void)message; return state;
}
REEF_ACTOR(handle);
)";

// The non-empty lines of a file of the server, to check that none comes back.
std::vector<std::string> LinesOf(const fs::path& file) {
  std::ifstream in(file);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (line.size() >= 4) lines.push_back(line);
  }
  return lines;
}

class GuestSandboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (compiler_->options().clang.empty()) GTEST_SKIP() << "no clang for wasm32 configured";
    // A data directory and, next to it, a file of the server holding a secret that is valid C.
    std::string pattern = (fs::temp_directory_path() / "reef-sandbox-test-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
    fs::create_directories(root_ / "data");
    secret_ = root_ / "secret.h";
    std::ofstream(secret_) << "int leaked_secret = 4242; /* SECRET-MARKER-7f3a */\n";
  }
  void TearDown() override {
    std::error_code ec;
    if (!root_.empty()) fs::remove_all(root_, ec);
  }

  // Compiles `source` + kActor as actors/probe and returns the status.
  Status Compile(const std::string& source) {
    return compiler_->Compile(SourceKind::kC, source + std::string(kActor), "actors/probe")
        .status();
  }

  // Expects a compile error that echoes no line of /etc/passwd or of the secret file.
  void ExpectRefusedWithoutEcho(const Status& status, std::string_view want) {
    ASSERT_EQ(status.code(), Code::kInvalidArgument) << status.ToString();
    const std::string& message = status.message();
    EXPECT_TRUE(message.starts_with("compile error:\n")) << message;
    EXPECT_NE(message.find(want), std::string::npos) << message;
    for (const std::string& line : LinesOf("/etc/passwd")) {
      EXPECT_EQ(message.find(line), std::string::npos) << "echoed /etc/passwd: " << message;
    }
    EXPECT_EQ(message.find("SECRET-MARKER"), std::string::npos) << message;
    EXPECT_EQ(message.find("reef-cc-"), std::string::npos) << "names the sandbox: " << message;
  }

  std::shared_ptr<const Compiler> compiler_ = Compiler::Create();
  fs::path root_;
  fs::path secret_;
};

TEST_F(GuestSandboxTest, IncludeOfEtcPasswdIsRefusedAndNotEchoed) {
  ExpectRefusedWithoutEcho(Compile("#include \"/etc/passwd\"\n"),
                           "actors/probe.c:1: #include \"/etc/passwd\" refused: an absolute path");
  ExpectRefusedWithoutEcho(Compile("#include </etc/passwd>\n"), "an absolute path");
}

TEST_F(GuestSandboxTest, IncludeOfAFileNextToTheDataDirIsRefusedHoweverItIsSpelled) {
  std::string absolute = secret_.string();
  std::string dotdot = "../../../../../../../../.." + absolute;
  // Spelled literally: refused before clang runs, naming the rule.
  ExpectRefusedWithoutEcho(Compile("#include \"" + absolute + "\"\n"), "an absolute path");
  ExpectRefusedWithoutEcho(Compile("#include \"" + dotdot + "\"\n"), "a '..' component");
  ExpectRefusedWithoutEcho(Compile("  %:  include_next \"" + absolute + "\"\n"), "refused");
  ExpectRefusedWithoutEcho(Compile("?\?=include \"" + absolute + "\"\n"), "refused");
  ExpectRefusedWithoutEcho(Compile("#inc\\\nlude \"" + absolute + "\"\n"), "refused");
  // Built by a macro, the scan cannot see it: the file does not exist inside the sandbox.
  ExpectRefusedWithoutEcho(Compile("#define F \"" + absolute + "\"\n#include F\n"),
                           "file not found");
  ExpectRefusedWithoutEcho(
      Compile("#define S(x) #x\n#define F(x) S(x)\n#include F(" + dotdot + ")\n"),
      "file not found");
  ExpectRefusedWithoutEcho(Compile("#pragma GCC dependency \"" + absolute + "\"\n"),
                           "file not found");
}

TEST_F(GuestSandboxTest, OnlyTheSdkAndFreestandingHeadersExist) {
  // __has_include sees the SDK and the freestanding headers, and nothing else.
  std::string probe =
      "#if !__has_include(\"reef.h\") || !__has_include(<stdint.h>) || "
      "!__has_include(<limits.h>)\n#error sandbox headers missing\n#endif\n"
      "#define SECRET \"" +
      secret_.string() +
      "\"\n"
      "#if __has_include(SECRET) || __has_include(\"/etc/passwd\") || __has_include(<stdio.h>) || "
      "__has_include(\"reef-vfs.yaml\") || __has_include(\"reef-diagnostics.txt\")\n"
      "#error a file outside the sandbox is visible\n#endif\n"
      "#include <stdint.h>\n#include <stddef.h>\n#include <stdbool.h>\n#include <stdarg.h>\n"
      "#include <limits.h>\n#include <float.h>\n";
  Status compiled = Compile(probe);
  EXPECT_TRUE(compiled.ok()) << compiled.ToString();
  // A system header is not there.
  ExpectRefusedWithoutEcho(Compile("#include <stdio.h>\n"), "'stdio.h' file not found");
}

TEST_F(GuestSandboxTest, InlineAssemblyIsRefusedEvenWhenAMacroBuildsTheKeyword) {
  // .incbin would copy the file into the module's data, .include would echo it.
  std::string incbin = ".incbin \\\"" + secret_.string() + "\\\"";
  ExpectRefusedWithoutEcho(Compile("__asm__(\"" + incbin + "\");\n"),
                           "inline assembly (__asm__, __asm) is not allowed");
  ExpectRefusedWithoutEcho(Compile("#define P(a, b) a##b\nP(__as, m)(\"" + incbin + "\");\n"),
                           "inline assembly");
  ExpectRefusedWithoutEcho(Compile("#undef __asm__\n__asm__(\".include \\\"/etc/passwd\\\"\");\n"),
                           "inline assembly");
}

TEST_F(GuestSandboxTest, ClangCrashDumpIsNotShown) {
  Status status = Compile("#pragma clang __debug crash\n");
  ExpectRefusedWithoutEcho(status, "clang crashed");
  EXPECT_EQ(status.message().find("Stack dump"), std::string::npos) << status.message();
  EXPECT_EQ(status.message().find("/usr/"), std::string::npos) << status.message();
}

TEST_F(GuestSandboxTest, ErrorsInTheSourceStillNameItsLines) {
  ExpectRefusedWithoutEcho(Compile("int f(void) { return 1 +; }\n"), "actors/probe.c:1:");
}

TEST(GuestSandboxFilterTest, DiagnosticsLocatedOutsideTheSandboxAreRemoved) {
  // Given clang output with one diagnostic in a visible file and one in another file
  std::string output =
      "/tmp/reef-cc-1/actors/x.c:1:10: error: something\n"
      "#include F\n"
      "         ^\n"
      "In file included from /tmp/reef-cc-1/actors/x.c:2:\n"
      "/etc/passwd:1:5: error: unknown type name 'root'\n"
      "root:x:0:0:root:/root:/bin/bash\n"
      "    ^\n"
      "/etc/passwd:2:1: note: here\n"
      "daemon:x:1:1\n"
      "2 errors generated.\n";
  // when it is filtered
  std::string filtered =
      FilterDiagnostics(output, "/tmp/reef-cc-1", std::vector<std::string>{"actors/x.c"});
  // then the visible diagnostic stays, without the sandbox path, and the other one is gone
  EXPECT_EQ(filtered,
            "actors/x.c:1:10: error: something\n"
            "#include F\n"
            "         ^\n"
            "In file included from actors/x.c:2:\n"
            "[a diagnostic located outside the guest sandbox was removed]\n"
            "2 errors generated.\n");
}

TEST(GuestSandboxFilterTest, CheckIncludesAcceptsHeaderNamesAndMacros) {
  EXPECT_TRUE(CheckIncludes("#include \"reef.h\"\n#include <stdint.h>\n#include F\n"
                            "#include \"a/b..c.h\"\n// #include \"/etc/passwd\" in a comment? no\n",
                            "x.c")
                  .ok());
  Status refused = CheckIncludes("\n\n  #  import \"sub/../../x\"\n", "x.c");
  EXPECT_EQ(refused.code(), Code::kInvalidArgument);
  EXPECT_NE(refused.message().find("x.c:3: #import \"sub/../../x\" refused"), std::string::npos)
      << refused.message();
}

}  // namespace
}  // namespace reef::code
