// RunProcess: fork + execve with a pipe for output, rlimits in the child, a poll loop with a
// deadline in the parent, wait4 for the child's resource usage.
#include "wasm/native/process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace reef::wasm::native {
namespace {

double Seconds(const timeval& tv) {
  return tv.tv_sec + tv.tv_usec / 1e6;
}

std::vector<char*> CStrings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const std::string& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// In the child between fork and exec: async-signal-safe calls only.
[[noreturn]] void ExecChild(int out_fd, const char* cwd, char* const* argv, char* const* envp,
                            uint64_t address_space_bytes, rlim_t cpu_seconds, pid_t parent) {
  setpgid(0, 0);
  // Its own process group keeps a terminal's Ctrl-C from the compiler, so a Reef that dies
  // (Ctrl-C, kill -9) takes it along: the child is killed when the thread that forked it
  // ends. If that happened before prctl, the parent is gone already.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);
  const int null_fd = open("/dev/null", O_RDONLY);
  if (null_fd >= 0) dup2(null_fd, STDIN_FILENO);
  dup2(out_fd, STDOUT_FILENO);
  dup2(out_fd, STDERR_FILENO);
  // Nothing else of the server's goes to the compiler: not its listening socket, store files
  // or locks (descriptors opened without O_CLOEXEC would otherwise stay open in it).
  syscall(SYS_close_range, 3u, ~0u, 0u);
  const rlimit as{address_space_bytes, address_space_bytes};
  setrlimit(RLIMIT_AS, &as);
  // Inherited by the compiler's own children (cc1, as, ld), which the death signal does not
  // reach: an orphaned one still stops once it has used the wall-time cap in CPU.
  const rlimit cpu{cpu_seconds, cpu_seconds};
  setrlimit(RLIMIT_CPU, &cpu);
  if (chdir(cwd) == 0) execve(argv[0], argv, envp);
  // strerror is not async-signal-safe: report the errno number.
  char message[] = "exec failed: errno 000\n";
  const int error = errno;
  message[19] = static_cast<char>('0' + error / 100 % 10);
  message[20] = static_cast<char>('0' + error / 10 % 10);
  message[21] = static_cast<char>('0' + error % 10);
  (void)!write(STDERR_FILENO, message, sizeof message - 1);
  _exit(127);
}

}  // namespace

Result<ProcessResult> RunProcess(const std::vector<std::string>& argv,
                                 const std::vector<std::string>& env,
                                 const std::filesystem::path& cwd, const ProcessLimits& limits) {
  if (argv.empty() || argv[0].empty() || argv[0][0] != '/') {
    return Status::InvalidArgument("RunProcess needs an absolute program path");
  }
  std::vector<char*> c_argv = CStrings(argv);
  std::vector<char*> c_env = CStrings(env);
  const std::string c_cwd = cwd.string();
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    return Status::Internal(fmt::format("pipe: {}", std::strerror(errno)));
  }
  const auto start = std::chrono::steady_clock::now();
  const pid_t parent = getpid();
  const rlim_t cpu_seconds =
      static_cast<rlim_t>(std::chrono::ceil<std::chrono::seconds>(limits.wall_time).count() + 1);
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return Status::Internal(fmt::format("fork: {}", std::strerror(errno)));
  }
  if (pid == 0)
    ExecChild(fds[1], c_cwd.c_str(), c_argv.data(), c_env.data(), limits.address_space_bytes,
              cpu_seconds, parent);
  close(fds[1]);
  setpgid(pid, pid);  // also in the child: whichever runs first, the group exists for kill

  ProcessResult result;
  const auto deadline = start + limits.wall_time;
  bool open_pipe = true;
  char buf[4096];
  while (open_pipe) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      kill(-pid, SIGKILL);
      break;
    }
    if (limits.cancel != nullptr && limits.cancel->load()) {
      result.cancelled = true;
      kill(-pid, SIGKILL);
      break;
    }
    pollfd pfd{fds[0], POLLIN, 0};
    const int64_t wait_ms = limits.cancel != nullptr ? 100 : 1000;
    const int ready = poll(&pfd, 1, static_cast<int>(std::min<int64_t>(left.count(), wait_ms)));
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    const ssize_t n = read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      open_pipe = false;
      break;
    }
    const size_t room =
        limits.max_output_bytes - std::min(limits.max_output_bytes, result.output.size());
    result.output.append(buf, std::min<size_t>(room, static_cast<size_t>(n)));
  }
  close(fds[0]);

  int status = 0;
  rusage usage{};
  pid_t waited;
  do {
    waited = wait4(pid, &status, 0, &usage);
  } while (waited < 0 && errno == EINTR);
  // A grandchild may still hold the group alive after a timeout; make sure it ends too.
  if (result.timed_out || result.cancelled) kill(-pid, SIGKILL);
  if (waited < 0) return Status::Internal(fmt::format("wait4: {}", std::strerror(errno)));
  result.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.cpu_seconds = Seconds(usage.ru_utime) + Seconds(usage.ru_stime);
  if (WIFSIGNALED(status)) {
    result.signaled = true;
    result.signal = WTERMSIG(status);
  } else if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  }
  return result;
}

Result<std::filesystem::path> FindExecutable(std::string_view name, std::string_view path_list) {
  // An executable regular file (a directory is "executable" to access(2) too).
  auto executable = [](const std::filesystem::path& file) {
    std::error_code ec;
    return access(file.c_str(), X_OK) == 0 && std::filesystem::is_regular_file(file, ec);
  };
  if (name.find('/') != std::string_view::npos) {
    if (executable(std::filesystem::path(name))) return std::filesystem::path(name);
    return Status::NotFound(fmt::format("C compiler `{}` is not an executable file", name));
  }
  size_t begin = 0;
  while (begin <= path_list.size()) {
    size_t end = path_list.find(':', begin);
    if (end == std::string_view::npos) end = path_list.size();
    std::string_view dir = path_list.substr(begin, end - begin);
    if (!dir.empty()) {
      std::filesystem::path candidate = std::filesystem::path(dir) / name;
      if (executable(candidate)) return candidate;
    }
    begin = end + 1;
  }
  return Status::NotFound(fmt::format("no `{}` in PATH ({})", name, path_list));
}

}  // namespace reef::wasm::native
