#include "code/compiler.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>
#include <span>
#include <system_error>
#include <thread>
#include <vector>

#include "code/guest_sandbox.h"
#include "core/ids.h"

namespace reef::code {
namespace {

namespace fs = std::filesystem;

// Flags shared with cmake/guest.cmake (see compiler.h); part of the C fingerprint.
const std::vector<std::string> kCompileFlags = {"--target=wasm32",
                                                "-mbulk-memory",
                                                "-O2",
                                                "-flto",
                                                "-c",
                                                "-std=c11",
                                                "-ffreestanding",
                                                "-nostdlib",
                                                "-Wall",
                                                "-Wextra",
                                                "-fno-color-diagnostics"};
// Flags only the compile of a guest's own source gets: the sandbox (guest_sandbox.h).
const std::vector<std::string> kSandboxFlags = {"-nostdinc",
                                                "-fno-crash-diagnostics",
                                                "-ivfsoverlay",
                                                std::string(kSandboxOverlayFile),
                                                "-include",
                                                std::string(kSandboxPreludeFile),
                                                "-I" + std::string(kSandboxIncludeDir)};
const std::vector<std::string> kLinkFlags = {
    "--target=wasm32",      "-nostdlib",        "-fuse-ld=lld", "-flto", "-Wl,--no-entry",
    "-Wl,--export-dynamic", "-Wl,--stack-first"};

// The object file of the compiled source; SDK objects are named after their sources
// (reef_*.o), and source paths never contain '.', so the names cannot clash.
constexpr const char* kSourceObject = "reef-source.o";
constexpr const char* kOutputWasm = "reef-out.wasm";
constexpr const char* kDiagnosticsFile = "reef-diagnostics.txt";

std::span<const uint8_t> AsBytes(std::string_view text) {
  return {reinterpret_cast<const uint8_t*>(text.data()), text.size()};
}

Result<std::string> ReadFile(const fs::path& path, std::size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(fmt::format("cannot read '{}'", path.string()));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.size() > max_bytes) {
    std::size_t total = text.size();
    text.resize(max_bytes);
    text += fmt::format("\n[diagnostics cut at {} of {} bytes]\n", max_bytes, total);
  }
  return text;
}

Status WriteFile(const fs::path& path, std::string_view bytes) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (ec || !out) {
    return Status::Unavailable(fmt::format("compiler: cannot write '{}'", path.string()));
  }
  return Status::Ok();
}

// A fresh directory (0700, canonical path) under the system temporary directory, removed with
// its contents on destruction.
class TempDir {
 public:
  static Result<std::unique_ptr<TempDir>> Create() {
    std::error_code ec;
    fs::path base = fs::temp_directory_path(ec);
    if (ec) base = "/tmp";
    std::string pattern = (base / "reef-cc-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      return Status::Unavailable(
          fmt::format("compiler: cannot create a temporary directory under '{}'", base.string()));
    }
    // Canonical, so that its path is the one clang's working directory resolves to (the
    // sandbox overlay names files by absolute path).
    fs::path canonical = fs::canonical(pattern, ec);
    return std::unique_ptr<TempDir>(new TempDir(ec ? fs::path(pattern) : canonical));
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  explicit TempDir(fs::path path) : path_(std::move(path)) {}
  fs::path path_;
};

struct ProcessResult {
  bool timed_out = false;
  int exit_code = -1;  // -1 when killed by a signal
  std::string output;  // stdout and stderr interleaved
};

// The environment clang runs with: only PATH (to find its linker), the C locale, and TMPDIR
// set to `cwd`, so no variable of the server (CPATH, C_INCLUDE_PATH, ...) reaches it.
std::vector<std::string> ClangEnvironment(const fs::path& cwd) {
  const char* path = std::getenv("PATH");
  return {std::string("PATH=") + (path != nullptr ? path : "/usr/bin:/bin"), "LC_ALL=C",
          "TMPDIR=" + cwd.string()};
}

// Runs `argv` (argv[0] is a path) in `cwd` with the environment ClangEnvironment(cwd), in its
// own process group, with stdin from /dev/null and stdout+stderr into `cwd`/kDiagnosticsFile.
// After `timeout` the whole group is killed with SIGKILL.
Result<ProcessResult> RunProcess(const std::vector<std::string>& argv, const fs::path& cwd,
                                 std::chrono::milliseconds timeout, std::size_t max_output) {
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env_text = ClangEnvironment(cwd);
  std::vector<char*> env;
  for (const std::string& entry : env_text) env.push_back(const_cast<char*>(entry.c_str()));
  env.push_back(nullptr);
  std::string cwd_text = cwd.string();
  std::string output_file = (cwd / kDiagnosticsFile).string();

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addchdir_np(&actions, cwd_text.c_str());
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, output_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t empty_mask;
  sigemptyset(&empty_mask);
  sigset_t default_signals;
  sigemptyset(&default_signals);
  sigaddset(&default_signals, SIGPIPE);
  posix_spawnattr_setsigmask(&attr, &empty_mask);
  posix_spawnattr_setsigdefault(&attr, &default_signals);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, args[0], &actions, &attr, args.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    return Status::Unavailable(
        fmt::format("compiler: cannot start '{}': {}", argv[0], std::strerror(rc)));
  }

  ProcessResult result;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  int wait_status = 0;
  while (true) {
    pid_t done = waitpid(pid, &wait_status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) {
      return Status::Internal(fmt::format("compiler: waitpid failed: {}", std::strerror(errno)));
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      kill(-pid, SIGKILL);
      while (waitpid(pid, &wait_status, 0) < 0 && errno == EINTR) {
      }
      result.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (!result.timed_out && WIFEXITED(wait_status)) result.exit_code = WEXITSTATUS(wait_status);
  auto output = ReadFile(output_file, max_output);
  if (output.ok()) result.output = std::move(*output);
  return result;
}

// The reef_*.c sources of the SDK, sorted (the SDK's CMakeLists compiles the same set).
std::vector<fs::path> SdkSources(const fs::path& sdk_dir) {
  std::vector<fs::path> sources;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(sdk_dir, ec)) {
    const fs::path& path = entry.path();
    if (path.extension() == ".c" && path.filename().string().starts_with("reef_")) {
      sources.push_back(path);
    }
  }
  std::sort(sources.begin(), sources.end());
  return sources;
}

std::string Join(const std::vector<std::string>& items) {
  std::string joined;
  for (const std::string& item : items) joined += (joined.empty() ? "" : " ") + item;
  return joined;
}

}  // namespace

struct Compiler::SdkObjects {
  std::unique_ptr<TempDir> dir;
  std::vector<fs::path> objects;  // absolute paths, in SdkSources order
};

std::shared_ptr<const Compiler> Compiler::Create(CompilerOptions options) {
  if (options.clang.empty()) options.clang = REEF_GUEST_CC_PATH;
  if (options.sdk_dir.empty()) options.sdk_dir = REEF_SDK_C_DIR;
  std::shared_ptr<Compiler> compiler(new Compiler(std::move(options)));
  compiler->wat_fingerprint_ = "wat: in-process wabt 1.0.32 (reef::wasm::Module::FromText)";
  compiler->wasm_fingerprint_ = "wasm: in-process wabt 1.0.32 (reef::wasm::Module::FromBinary)";
  return compiler;
}

void Compiler::ProbeClang() const {
  std::call_once(clang_probed_, [this] {
    std::string version = "none";
    if (!options_.clang.empty()) {
      auto dir = TempDir::Create();
      if (dir.ok()) {
        auto run =
            RunProcess({options_.clang, "--version"}, (*dir)->path(), options_.timeout, 4096);
        if (run.ok() && run->exit_code == 0) version = run->output;
        run = RunProcess({options_.clang, "-print-resource-dir"}, (*dir)->path(), options_.timeout,
                         4096);
        if (run.ok() && run->exit_code == 0) {
          std::string resource = run->output;
          while (!resource.empty() && std::isspace(static_cast<unsigned char>(resource.back()))) {
            resource.pop_back();
          }
          if (!resource.empty()) resource_include_dir_ = fs::path(resource) / "include";
        }
      }
    }
    std::string sdk;
    std::vector<fs::path> files = SdkSources(options_.sdk_dir);
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(options_.sdk_dir, ec)) {
      if (entry.path().extension() == ".h") files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    for (const fs::path& file : files) {
      auto text = ReadFile(file, kMaxSourceBytes);
      sdk += fmt::format("{} {}\n", file.filename().string(),
                         text.ok() ? Sha256Hex(AsBytes(*text)) : "unreadable");
    }
    c_fingerprint_ =
        fmt::format("c: clang {}\nversion {}\ncompile {}\nsandbox {}\n{}link {}\nsdk {}\n{}",
                    options_.clang, version, Join(kCompileFlags), Join(kSandboxFlags),
                    SandboxPrelude(), Join(kLinkFlags), options_.sdk_dir, sdk);
  });
}

const std::string& Compiler::Fingerprint(SourceKind kind) const {
  switch (kind) {
    case SourceKind::kC:
      ProbeClang();
      return c_fingerprint_;
    case SourceKind::kWasm:
      return wasm_fingerprint_;
    case SourceKind::kWat:
      break;
  }
  return wat_fingerprint_;
}

Result<CompileOutput> Compiler::Compile(SourceKind kind, std::string_view bytes,
                                        std::string_view label) const {
  REEF_RETURN_IF_ERROR(ValidateSourceSize(bytes));
  std::string stem = ValidateSourcePath(label).ok() ? std::string(label) : "source";
  if (kind == SourceKind::kC) return CompileC(bytes, stem);
  // wabt assembles a .wat and validates a .wasm in-process; its errors are the diagnostics.
  auto module =
      kind == SourceKind::kWat
          ? wasm::Module::FromText(bytes, stem + ".wat")
          : wasm::Module::FromBinary({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()},
                                     stem + ".wasm");
  if (!module.ok()) {
    if (module.status().code() != Code::kInvalidArgument) return module.status();
    return Status::InvalidArgument("compile error:\n" + module.status().message());
  }
  return CompileOutput{std::move(*module), ""};
}

Result<CompileOutput> Compiler::CompileC(std::string_view bytes, std::string_view stem) const {
  if (options_.clang.empty()) {
    return Status::FailedPrecondition(
        "compiler: no clang for wasm32 is configured (install clang-16 and lld-16), so .c "
        "sources cannot compile");
  }
  ProbeClang();
  if (resource_include_dir_.empty()) {
    return Status::FailedPrecondition(fmt::format(
        "compiler: '{} -print-resource-dir' named no directory, so the C freestanding headers "
        "(stdint.h, ...) cannot be found and .c sources cannot compile",
        options_.clang));
  }
  std::string source_file = std::string(stem) + ".c";
  REEF_RETURN_IF_ERROR(CheckIncludes(bytes, source_file));
  REEF_ASSIGN_OR_RETURN(std::unique_ptr<TempDir> dir, TempDir::Create());
  const fs::path& cwd = dir->path();
  REEF_RETURN_IF_ERROR(WriteFile(cwd / source_file, bytes));

  // The sandbox: the source, the prelude and include/ (SDK and freestanding headers) only.
  REEF_RETURN_IF_ERROR(WriteFile(cwd / kSandboxPreludeFile, SandboxPrelude()));
  std::vector<SandboxFile> files = {{source_file, cwd / source_file},
                                    {std::string(kSandboxPreludeFile), cwd / kSandboxPreludeFile}};
  auto add_header = [&files](const fs::path& file) {
    std::error_code ec;
    if (!fs::is_regular_file(file, ec)) return;
    files.push_back({fmt::format("{}/{}", kSandboxIncludeDir, file.filename().string()), file});
  };
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(options_.sdk_dir, ec)) {
    if (entry.path().extension() == ".h") add_header(entry.path());
  }
  for (std::string_view header : FreestandingHeaders()) add_header(resource_include_dir_ / header);
  std::vector<std::string> visible;
  for (const SandboxFile& file : files) visible.push_back(file.name);
  REEF_RETURN_IF_ERROR(WriteFile(cwd / kSandboxOverlayFile, SandboxOverlay(cwd, files)));

  // Runs one clang step (the source's compile, the link); a failure carries its diagnostics,
  // with lines of files outside the sandbox left out.
  std::string warnings;
  auto step = [&](std::vector<std::string> args) -> Status {
    args.insert(args.begin(), options_.clang);
    REEF_ASSIGN_OR_RETURN(ProcessResult run,
                          RunProcess(args, cwd, options_.timeout, options_.max_diagnostics_bytes));
    if (run.timed_out) {
      return Status::LimitExceeded(
          fmt::format("compile of '{}' exceeded the {} ms compiler timeout", source_file,
                      options_.timeout.count()));
    }
    run.output = FilterDiagnostics(run.output, cwd, visible);
    if (run.exit_code != 0) return Status::InvalidArgument("compile error:\n" + run.output);
    warnings += run.output;
    return Status::Ok();
  };

  std::vector<std::string> user = kCompileFlags;
  user.insert(user.end(), kSandboxFlags.begin(), kSandboxFlags.end());
  user.insert(user.end(), {"-o", kSourceObject, source_file});
  REEF_RETURN_IF_ERROR(step(user));
  std::string user_warnings = std::move(warnings);
  warnings.clear();

  REEF_ASSIGN_OR_RETURN(std::shared_ptr<const SdkObjects> sdk, BuildSdkObjects());
  std::vector<std::string> link = kLinkFlags;
  link.insert(link.end(), {"-o", kOutputWasm, kSourceObject});
  for (const fs::path& object : sdk->objects) link.push_back(object.string());
  warnings.clear();
  REEF_RETURN_IF_ERROR(step(link));
  user_warnings += warnings;

  auto wasm = ReadFile(cwd / kOutputWasm, wasm::ModuleLimits{}.max_module_bytes + 1);
  if (!wasm.ok()) return Status::Internal("compiler: clang succeeded but wrote no module");
  auto module = wasm::Module::FromBinary(AsBytes(*wasm), std::string(stem) + ".wasm");
  if (!module.ok()) return module.status().WithContext("compiler: clang's output");
  return CompileOutput{std::move(*module), std::move(user_warnings)};
}

Result<std::shared_ptr<const Compiler::SdkObjects>> Compiler::BuildSdkObjects() const {
  MutexLock lock(sdk_mu_);
  if (sdk_objects_ != nullptr) return sdk_objects_;
  auto built = std::make_shared<SdkObjects>();
  REEF_ASSIGN_OR_RETURN(built->dir, TempDir::Create());
  std::vector<std::string> args = {options_.clang};
  args.insert(args.end(), kCompileFlags.begin(), kCompileFlags.end());
  args.push_back("-I" + options_.sdk_dir);
  for (const fs::path& source : SdkSources(options_.sdk_dir)) {
    args.push_back(source.string());
    built->objects.push_back(built->dir->path() / (source.stem().string() + ".o"));
  }
  if (!built->objects.empty()) {
    REEF_ASSIGN_OR_RETURN(ProcessResult run, RunProcess(args, built->dir->path(), options_.timeout,
                                                        options_.max_diagnostics_bytes));
    if (run.timed_out) {
      return Status::LimitExceeded(fmt::format(
          "compile of the C SDK exceeded the {} ms compiler timeout", options_.timeout.count()));
    }
    if (run.exit_code != 0) {  // SDK warnings are not the user's; its errors are Reef's
      return Status::Internal(fmt::format("compiler: the C SDK in '{}' does not build:\n{}",
                                          options_.sdk_dir, run.output));
    }
  }
  sdk_objects_ = std::move(built);
  return sdk_objects_;
}

}  // namespace reef::code
