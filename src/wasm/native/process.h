// Running a helper program (the C compiler) without a shell, under limits.
//
// Thread ownership: RunProcess is safe to call from any thread; each call owns its child.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/status.h"

namespace reef::wasm::native {

struct ProcessLimits {
  // The child's process group is killed after this; the child and its children also get
  // RLIMIT_CPU of this plus 1 s (so one orphaned by Reef's death stops), and the child is
  // killed (PR_SET_PDEATHSIG) when the thread that started it ends.
  std::chrono::milliseconds wall_time{60'000};
  uint64_t address_space_bytes = 2ull << 30;  // RLIMIT_AS of the child (and its children)
  size_t max_output_bytes = 64 * 1024;        // stdout+stderr kept; the rest is dropped
  // When not null and it turns true, the child's process group is killed (checked at least
  // every 100 ms): a shutdown does not wait for a compile in progress.
  const std::atomic<bool>* cancel = nullptr;
};

struct ProcessResult {
  int exit_code = -1;  // valid when !signaled
  int signal = 0;      // the signal that ended it, when signaled
  bool signaled = false;
  bool timed_out = false;  // killed at ProcessLimits::wall_time
  bool cancelled = false;  // killed because ProcessLimits::cancel turned true
  std::string output;      // stdout and stderr, interleaved, truncated to max_output_bytes
  double cpu_seconds = 0;  // user + system time of the child and the children it waited for
  double wall_seconds = 0;
  bool ok() const { return !signaled && !timed_out && exit_code == 0; }
};

// Runs `argv` (argv[0] an absolute path; never through a shell) in `cwd` with exactly `env`
// ("NAME=value" entries), stdin from /dev/null, in its own process group, with RLIMIT_AS set
// in the child. Blocks until it exits or the wall time passes (then SIGKILLs the group).
// Errors: Internal when the pipe, fork or wait fails. A child that cannot exec reports exit
// code 127 with the reason in `output`.
Result<ProcessResult> RunProcess(const std::vector<std::string>& argv,
                                 const std::vector<std::string>& env,
                                 const std::filesystem::path& cwd, const ProcessLimits& limits);

// The first executable `name` in the colon-separated `path_list`; `name` containing '/' is
// checked as it is. Errors: NotFound naming `name` and the directories searched.
Result<std::filesystem::path> FindExecutable(std::string_view name, std::string_view path_list);

}  // namespace reef::wasm::native
