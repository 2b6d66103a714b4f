// ReefServer: the real `reef serve` binary started on loopback for integration tests and
// benchmarks, with a fresh data directory and its log in one temporary directory.
//
// Thread ownership: caller synchronizes (one owner starts, reads the port, and destroys it).
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

extern char** environ;

namespace reef::testing {

// `reef serve --listen 127.0.0.1:0 --data-dir DIR/data [extra args]`, stdout and stderr in
// DIR/serve.log. Stopped (SIGTERM, then SIGKILL after 5 s) and DIR removed on destruction.
class ReefServer {
 public:
  // `binary`: path of the `reef` executable. `extra_args`: appended to the serve command.
  explicit ReefServer(std::string binary, std::vector<std::string> extra_args = {})
      : binary_(std::move(binary)), extra_args_(std::move(extra_args)) {}
  ReefServer(const ReefServer&) = delete;
  ReefServer& operator=(const ReefServer&) = delete;
  ~ReefServer() {
    Stop();
    if (!dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
    }
  }

  // Starts the server and waits (10 s at most) for its "serving on ws://HOST:PORT" line.
  // Returns an empty string, or what went wrong with the log so far. After Stop(), starts
  // again on the same data directory (a restart; the port changes, the log starts over).
  std::string Start() {
    namespace fs = std::filesystem;
    if (pid_ > 0) return "already running";
    if (dir_.empty()) {
      std::string templ = (fs::temp_directory_path() / "reef-serve-XXXXXX").string();
      if (::mkdtemp(templ.data()) == nullptr) return "mkdtemp failed";
      dir_ = templ;
      log_ = dir_ / "serve.log";
    }
    port_ = 0;
    std::vector<std::string> args = {binary_,       "serve",      "--listen",
                                     "127.0.0.1:0", "--data-dir", (dir_ / "data").string()};
    args.insert(args.end(), extra_args_.begin(), extra_args_.end());
    std::vector<char*> argv;
    for (std::string& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    // The outer environment's REEF_* settings (an auth token, a log filter) do not apply, but
    // for the native code cache the tests share (tests/CMakeLists.txt reef_share_native_cache).
    std::vector<char*> envp;
    for (char** e = environ; *e != nullptr; e++) {
      std::string_view entry(*e);
      if (entry.starts_with("REEF_") && !entry.starts_with("REEF_NATIVE_CACHE=")) continue;
      envp.push_back(*e);
    }
    envp.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    int rc = ::posix_spawn(&pid_, binary_.c_str(), &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
      pid_ = -1;
      return "cannot start " + binary_ + ": " + std::strerror(rc);
    }
    static const std::regex kReady(R"(serving on ws://[^ ]*:([0-9]+))");
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      std::smatch match;
      std::string log = Log();
      if (std::regex_search(log, match, kReady)) {
        port_ = static_cast<uint16_t>(std::stoi(match[1].str()));
        return "";
      }
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return "reef serve exited before it was ready:\n" + log;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return "reef serve was not ready within 10 s:\n" + Log();
  }

  // The data directory (`--data-dir`); empty before the first Start.
  std::filesystem::path data_dir() const { return dir_.empty() ? dir_ : dir_ / "data"; }

  // The listening port; 0 before a successful Start.
  uint16_t port() const { return port_; }
  // The server's process id; -1 when it is not running.
  pid_t pid() const { return pid_; }

  // What the server wrote to stdout and stderr so far.
  std::string Log() const {
    std::ifstream in(log_);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  // Kills the server at once (SIGKILL: a crash) and waits for it. Keeps the data directory.
  void Crash() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }

  // Stops the server: SIGTERM, then SIGKILL after 5 s. Keeps the data directory. Returns
  // false when it took the SIGKILL.
  bool Stop() {
    if (pid_ <= 0) return true;
    ::kill(pid_, SIGTERM);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    int status = 0;
    while (::waitpid(pid_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() >= deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        pid_ = -1;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    pid_ = -1;
    return true;
  }

 private:
  std::string binary_;
  std::vector<std::string> extra_args_;
  std::filesystem::path dir_;
  std::filesystem::path log_;
  pid_t pid_ = -1;
  uint16_t port_ = 0;
};

}  // namespace reef::testing
