// Compile (compiler.h): temp dir, sources, argv, RunProcess, result.
#include "wasm/native/compiler.h"

#include <fmt/format.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <system_error>

#include "wasm/native/detail/rt_header.h"
#include "wasm/native/process.h"

namespace reef::wasm::native {
namespace {

constexpr const char* kModuleSource = "m.c";
constexpr const char* kGlueSource = "reef_glue.c";
// The one translation unit the compiler runs on: the module and its glue together cost one
// compiler process instead of two (half the time of a small module's compile).
constexpr const char* kUnitSource = "unit.c";
constexpr std::string_view kUnitText = "#include \"m.c\"\n#include \"reef_glue.c\"\n";
constexpr const char* kLibrary = "m.so";
constexpr const char* kDefaultPath = "/usr/local/bin:/usr/bin:/bin";

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

std::string SearchPath(const CompileOptions& options) {
  if (!options.search_path.empty()) return options.search_path;
  std::string path = Env("PATH");
  return path.empty() ? kDefaultPath : path;
}

Status WriteFile(const std::filesystem::path& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  if (!out) return Status::Internal(fmt::format("cannot write {}", path.string()));
  return Status::Ok();
}

}  // namespace

// ---- TempDir ------------------------------------------------------------------------------

Result<TempDir> TempDir::Create() {
  std::error_code ec;
  std::filesystem::path base = std::filesystem::temp_directory_path(ec);
  if (ec) base = "/tmp";
  std::string pattern = (base / "reef-native-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) {  // mkdtemp creates it with mode 0700
    return Status::Internal(fmt::format("mkdtemp {}: {}", pattern, std::strerror(errno)));
  }
  return TempDir(std::filesystem::path(pattern));
}

TempDir::TempDir(TempDir&& other) noexcept : path_(std::move(other.path_)), keep_(other.keep_) {
  other.path_.clear();
}

TempDir& TempDir::operator=(TempDir&& other) noexcept {
  if (this != &other) {
    TempDir doomed(std::move(*this));
    path_ = std::move(other.path_);
    keep_ = other.keep_;
    other.path_.clear();
  }
  return *this;
}

TempDir::~TempDir() {
  if (path_.empty() || keep_) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

// ---- Compile ------------------------------------------------------------------------------

Result<std::filesystem::path> FindCompiler(const CompileOptions& options) {
  const std::string path = SearchPath(options);
  std::vector<std::string> candidates;
  if (!options.compiler.empty()) {
    candidates = {options.compiler};
  } else if (std::string env_cc = Env("REEF_CC"); !env_cc.empty()) {
    candidates = {env_cc};
  } else {
    candidates = {"cc", "gcc", "clang"};
  }
  for (const std::string& name : candidates) {
    Result<std::filesystem::path> found = FindExecutable(name, path);
    if (found.ok()) return found;
    // A path (REEF_CC=/usr/bin/gcc-12) is not looked up in PATH: say what is wrong with it.
    if (name.find('/') != std::string::npos) {
      return Status::NotFound(
          fmt::format("no C compiler for the native tier: {}; install gcc or "
                      "set REEF_CC",
                      found.status().message()));
    }
  }
  return Status::NotFound(fmt::format(
      "no C compiler found for the native tier: tried {} in {}; install gcc or set REEF_CC",
      fmt::join(candidates, ", "), path));
}

std::vector<std::string> CompileCommand(const std::filesystem::path& compiler,
                                        const CompileOptions& options) {
  std::vector<std::string> argv = {
      compiler.string(),
      "-std=gnu11",
      fmt::format("-O{}", options.optimization),
      "-fPIC",
      "-shared",
      "-fvisibility=hidden",
      // The runtime's thread-locals live in the host executable's static TLS block, so a
      // direct %fs-relative access works from the dlopen'ed library.
      "-ftls-model=initial-exec",
      // A frame larger than a page touches each page as it grows the stack, so it faults in
      // the fiber's guard page rather than jumping past it into other memory.
      "-fstack-clash-protection",
      // GCC's dominator optimisations (jump threading) cost about 8% of a bank module's
      // compile (1.03 -> 0.91 CPU-s, best of 5) and gained nothing measurable on the
      // kernels (fib 2.62 vs 2.61 ms, mem 16.5 vs 15.5 ms, means of 5; docs/engine.md).
      "-fno-tree-dominator-opts",
      "-DWASM_RT_MEMCHECK_SIGNAL_HANDLER=0",
      "-DWASM_RT_USE_STACK_DEPTH_COUNT=1",
      // The generated code's registers (rt/wasm-rt.h) exist in this translation unit only.
      "-DREEF_RT_GENERATED_CODE=1",
      // The glue must match the generated declarations exactly.
      "-Werror=implicit-function-declaration",
      "-Werror=incompatible-pointer-types",
      "-Werror=int-conversion",
      "-I.",
      "-pipe",
  };
  argv.insert(argv.end(), options.extra_flags.begin(), options.extra_flags.end());
  argv.insert(argv.end(), {kUnitSource, "-o", kLibrary, "-lm"});
  return argv;
}

Result<SharedObject> Compile(const GeneratedC& c, const CompileOptions& options) {
  if (options.optimization < 0 || options.optimization > 3) {
    return Status::InvalidArgument(
        fmt::format("optimization level {} outside 0..3", options.optimization));
  }
  REEF_ASSIGN_OR_RETURN(std::filesystem::path compiler, FindCompiler(options));
  REEF_ASSIGN_OR_RETURN(TempDir dir, TempDir::Create());
  if (options.keep_directory) dir.Keep();
  REEF_RETURN_IF_ERROR(WriteFile(dir.path() / "wasm-rt.h", detail::kWasmRtHeaderText));
  REEF_RETURN_IF_ERROR(WriteFile(dir.path() / kModuleHeaderName, c.module_header));
  REEF_RETURN_IF_ERROR(WriteFile(dir.path() / kModuleSource, c.module_source));
  REEF_RETURN_IF_ERROR(WriteFile(dir.path() / kGlueSource, c.glue_source));
  REEF_RETURN_IF_ERROR(WriteFile(dir.path() / kUnitSource, kUnitText));

  std::vector<std::string> argv = CompileCommand(compiler, options);
  const std::vector<std::string> env = {"PATH=" + SearchPath(options), "LC_ALL=C",
                                        "TMPDIR=" + dir.path().string()};
  ProcessLimits limits;
  limits.wall_time = options.wall_time;
  limits.address_space_bytes = options.address_space_bytes;
  limits.cancel = options.cancel;
  REEF_ASSIGN_OR_RETURN(ProcessResult run, RunProcess(argv, env, dir.path(), limits));
  if (run.cancelled) return Status::Unavailable("C compiler stopped: shutting down");
  if (run.timed_out) {
    return Status::LimitExceeded(
        fmt::format("C compiler killed after {} ms: {}", options.wall_time.count(), argv[0]));
  }
  if (!run.ok()) {
    std::string how = run.signaled ? fmt::format("killed by signal {}", run.signal)
                                   : fmt::format("exit code {}", run.exit_code);
    return Status::Internal(
        fmt::format("C compiler failed ({}): {}\n{}", how, fmt::join(argv, " "), run.output));
  }
  SharedObject out{std::move(dir), {}, std::move(argv), {}};
  out.library = out.directory.path() / kLibrary;
  out.stats.cpu_seconds = run.cpu_seconds;
  out.stats.wall_seconds = run.wall_seconds;
  out.stats.c_bytes = c.module_source.size() + c.module_header.size() + c.glue_source.size();
  return out;
}

}  // namespace reef::wasm::native
