// Compiling generated C (native/c_gen.h) to a shared object with the system C compiler.
//
// The sources, Reef's rt/wasm-rt.h and the output go to a private temporary directory (mode
// 0700) that the returned SharedObject owns. The compiler runs without a shell (fork/execve
// with an argument vector), with a wall-time limit and an address-space cap
// (native/process.h), and a minimal environment (PATH, LC_ALL=C, TMPDIR=the directory).
//
// Thread ownership: Compile may run on any thread, concurrently; the results are plain data.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/status.h"
#include "wasm/native/c_gen.h"

namespace reef::wasm::native {

struct CompileOptions {
  // The compiler to run: a name looked up in `search_path`, or a path. Empty: $REEF_CC if
  // set, else the first of "cc", "gcc", "clang" found.
  std::string compiler;
  // Directories searched, colon-separated. Empty: $PATH, else "/usr/local/bin:/usr/bin:/bin".
  std::string search_path;
  int optimization = 1;                          // -O<n>, 0..3
  std::chrono::milliseconds wall_time{120'000};  // whole compile, then killed
  uint64_t address_space_bytes = 4ull << 30;     // RLIMIT_AS of the compiler processes
  std::vector<std::string> extra_flags;          // appended before the sources
  bool keep_directory = false;                   // leave the temp dir for inspection
  // When not null and it turns true, the compiler is killed and Compile fails Unavailable
  // (CompileService::Shutdown). Not part of the compile's identity (CompileCommand).
  const std::atomic<bool>* cancel = nullptr;
};

// Owns a temporary directory; removes it (recursively) on destruction unless released.
class TempDir {
 public:
  // Creates "<temp_directory_path()>/reef-native-XXXXXX", mode 0700.
  // Errors: Internal naming the failing call.
  static Result<TempDir> Create();
  TempDir(TempDir&& other) noexcept;
  TempDir& operator=(TempDir&& other) noexcept;
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir();

  const std::filesystem::path& path() const { return path_; }
  // Keeps the directory on disk after destruction.
  void Keep() { keep_ = true; }
  bool kept() const { return keep_; }

 private:
  explicit TempDir(std::filesystem::path path) : path_(std::move(path)) {}
  std::filesystem::path path_;
  bool keep_ = false;
};

struct CompileStats {
  double cpu_seconds = 0;  // the compiler and its subprocesses (wait4 rusage)
  double wall_seconds = 0;
  size_t c_bytes = 0;  // generated C, module source + header + glue
};

struct SharedObject {
  TempDir directory;                 // holds the sources and the library
  std::filesystem::path library;     // "<directory>/m.so"
  std::vector<std::string> command;  // the argv that built it
  CompileStats stats;
};

// Finds the compiler CompileOptions names. Errors: NotFound listing what was tried and
// where ("no C compiler found: tried cc, gcc, clang in /usr/bin:/bin; install gcc or set
// REEF_CC").
Result<std::filesystem::path> FindCompiler(const CompileOptions& options);

// The argv Compile runs for `compiler` in its directory (sources m.c and reef_glue.c,
// output m.so): -O<n> -fPIC -shared, hidden visibility (only the glue is exported), the
// initial-exec TLS model for the runtime's thread-locals, the runtime's configuration
// macros, and -lm.
std::vector<std::string> CompileCommand(const std::filesystem::path& compiler,
                                        const CompileOptions& options);

// Writes `c` to a new temp dir and compiles it. Errors: those of FindCompiler and
// TempDir::Create; InvalidArgument for optimization outside 0..3; LimitExceeded when the
// compile passes the wall time ("C compiler killed after 120000 ms"); Internal when it
// fails, with the command's exit status and its output (diagnostics).
Result<SharedObject> Compile(const GeneratedC& c, const CompileOptions& options = {});

}  // namespace reef::wasm::native
