// native_tier_bench: what the native tier costs and gains, next to the interpreter.
//
//   native_tier_bench compile FILE.wasm...
//     per module: C generation time, then the system C compiler's CPU and wall time at -O1
//     and -O2 (the compiler and its subprocesses, wait4 rusage), one compile each; each
//     library is loaded too (dlopen resolves the runtime symbols).
//   native_tier_bench run KERNELS.wasm FIB_N LOOP_N REPEATS
//     fib(FIB_N) and loop(LOOP_N) of bench_kernels.wasm on an engine of each tier
//     (Instance::Call, metered); median of REPEATS runs each, milliseconds.
//   native_tier_bench cache DIR FILE.wasm...
//     the compile cache (native/code_cache.h) in DIR, emptied first, with the metering pass and
//     the default options (-O1): per module, the CPU of a miss (C generation and loading on
//     this thread plus the compiler processes), then, in a new process (this program run as
//     `cache-hit DIR FILE...`), the wall time of a hit: the key (the first one runs the
//     compiler's --version) and the verified load. Goals beside: <= 1 s CPU, <= 5 ms.
//   native_tier_bench instantiate COMMAND.wasm...
//     per command module and tier (interpreter, native): the wall time of Engine::Instantiate once
//     the engine holds the module's code (native: compiled and loaded, untimed, first), and of
//     Instance::Reset (what a pooled instance costs before it serves another caller), untouched
//     and after a 4 KiB write; median of 200 samples, microseconds. Goal beside the native
//     figures: <= 10 us.
//   native_tier_bench emit-c FILE.wasm DIR
//     writes the C the native tier compiles for FILE (metered, as the cache compiles it) into
//     DIR (m.c, m.h, reef_glue.c), for reading and profiling; not a benchmark.
//
// One machine-readable line per figure, e.g.
//   compile file=bank_deposit.wasm wasm_bytes=18384 c_bytes=... gen_ms=... o1_cpu_s=...
//   run kernel=fib n=30 tier=native result=832040 median_ms=...
//   cache_miss file=bank_deposit.wasm outcome=compiled cpu_s=... goal_cpu_s=1
//   cache_hit file=bank_deposit.wasm key_ms=... load_ms=... total_ms=... goal_ms=5
// Exits non-zero when anything fails or the tiers disagree on a result.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "apps/module_abi.h"
#include "wasm/detail/meter.h"
#include "wasm/engine.h"
#include "wasm/module.h"
#include "wasm/native/c_gen.h"
#include "wasm/native/code_cache.h"
#include "wasm/native/code_source.h"
#include "wasm/native/compiler.h"
#include "wasm/native/native_module.h"
#include "wasm/native/process.h"

namespace {

using namespace reef::wasm;
using Clock = std::chrono::steady_clock;

int Fail(const std::string& what, const reef::Status& status) {
  std::fprintf(stderr, "%s: %s\n", what.c_str(), status.ToString().c_str());
  return 1;
}

int CompileCommand(int argc, char** argv) {
  for (int i = 2; i < argc; ++i) {
    const std::filesystem::path path = argv[i];
    auto module = Module::FromFile(path);
    if (!module.ok()) return Fail(path.string(), module.status());
    const auto start = Clock::now();
    auto c = native::GenerateC(**module);
    const double gen_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    if (!c.ok()) return Fail(path.string(), c.status());
    std::printf("compile file=%s wasm_bytes=%zu c_bytes=%zu gen_ms=%.1f", path.filename().c_str(),
                (*module)->bytes().size(),
                c->module_source.size() + c->module_header.size() + c->glue_source.size(), gen_ms);
    for (int level : {1, 2}) {
      native::CompileOptions options;
      options.optimization = level;
      auto so = native::Compile(*c, options);
      if (!so.ok()) return Fail(path.string(), so.status());
      std::printf(" o%d_cpu_s=%.2f o%d_wall_s=%.2f", level, so->stats.cpu_seconds, level,
                  so->stats.wall_seconds);
      // Loading resolves every runtime symbol the generated code uses.
      auto loaded = native::NativeModule::Load(*module, std::move(*so), *c);
      if (!loaded.ok()) return Fail(path.string(), loaded.status());
    }
    std::printf("\n");
  }
  return 0;
}

// Median wall time of `repeats` runs of `call`, which returns the result or -1 on failure.
template <typename Call>
double MedianMs(int repeats, Call call, int64_t* result) {
  std::vector<double> runs;
  for (int i = 0; i < repeats; ++i) {
    const auto start = Clock::now();
    *result = call();
    runs.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  std::sort(runs.begin(), runs.end());
  return runs[runs.size() / 2];
}

int64_t AsInt(const reef::Result<std::vector<WasmValue>>& r) {
  if (!r.ok()) return -1;
  return std::visit([](auto v) { return static_cast<int64_t>(v); }, (*r)[0]);
}

int RunCommand(char** argv) {
  auto module = Module::FromFile(argv[2]);
  if (!module.ok()) return Fail(argv[2], module.status());
  const int32_t fib_n = std::atoi(argv[3]);
  const int32_t loop_n = std::atoi(argv[4]);
  const int repeats = std::max(1, std::atoi(argv[5]));
  struct Kernel {
    const char* name;
    int32_t n;
  };
  const Kernel kernels[] = {{"fib", fib_n}, {"loop", loop_n}};
  std::vector<int64_t> expected;

  HostRegistry registry("reef", 1);
  Engine engine(registry);
  auto interp = engine.Instantiate(*module);
  if (!interp.ok()) return Fail("interpreter", interp.status());
  for (const Kernel& k : kernels) {
    int64_t result = 0;
    std::vector<WasmValue> args{k.n};
    double ms = MedianMs(
        repeats, [&] { return AsInt((*interp)->Call(k.name, args, nullptr, 1ull << 50)); },
        &result);
    expected.push_back(result);
    std::printf("run kernel=%s n=%d tier=interpreter result=%lld median_ms=%.2f\n", k.name, k.n,
                static_cast<long long>(result), ms);
  }
  Engine native_engine(registry, {}, Tier::kNative);
  auto instance = native_engine.Instantiate(*module);
  if (!instance.ok()) return Fail("native instance", instance.status());
  for (size_t i = 0; i < std::size(kernels); ++i) {
    const Kernel& k = kernels[i];
    int64_t result = 0;
    std::vector<WasmValue> args{k.n};
    double ms = MedianMs(
        repeats, [&] { return AsInt((*instance)->Call(k.name, args, nullptr, 1ull << 50)); },
        &result);
    std::printf("run kernel=%s n=%d tier=native result=%lld median_ms=%.2f\n", k.name, k.n,
                static_cast<long long>(result), ms);
    if (result != expected[i]) {
      std::fprintf(stderr, "%s: native disagrees with the interpreter\n", k.name);
      return 1;
    }
  }
  return 0;
}

// ---- cache / cache-hit ----------------------------------------------------------------------

double ThreadCpuSeconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) / 1e9;
}

const native::IrPass kMeter = native::MeterPass();

double MsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

int CacheHitCommand(int argc, char** argv) {
  auto cache = native::CodeCache::Open(argv[2]);
  if (!cache.ok()) return Fail(argv[2], cache.status());
  for (int i = 3; i < argc; ++i) {
    const std::filesystem::path path = argv[i];
    auto module = Module::FromFile(path);
    if (!module.ok()) return Fail(path.string(), module.status());
    const native::CompileOptions options;
    auto start = Clock::now();
    auto key = (*cache)->Key(**module, options, true, detail::kMeterVersion);
    const double key_ms = MsSince(start);
    if (!key.ok()) return Fail(path.string(), key.status());
    start = Clock::now();
    auto hit = (*cache)->GetOrCompile(*module, options, kMeter, detail::kMeterVersion);
    const double load_ms = MsSince(start);
    if (!hit.ok()) return Fail(path.string(), hit.status());
    if (hit->outcome != native::CacheOutcome::kHit) {
      return Fail(path.string(),
                  reef::Status::Internal("expected a cache hit, got " +
                                         std::string(native::CacheOutcomeName(hit->outcome))));
    }
    std::printf("cache_hit file=%s key_ms=%.2f load_ms=%.2f total_ms=%.2f goal_ms=5\n",
                path.filename().c_str(), key_ms, load_ms, key_ms + load_ms);
  }
  return 0;
}

int CacheCommand(int argc, char** argv) {
  auto cache = native::CodeCache::Open(argv[2]);
  if (!cache.ok()) return Fail(argv[2], cache.status());
  if (auto cleared = (*cache)->Clear(); !cleared.ok()) return Fail(argv[2], cleared);
  for (int i = 3; i < argc; ++i) {
    const std::filesystem::path path = argv[i];
    auto module = Module::FromFile(path);
    if (!module.ok()) return Fail(path.string(), module.status());
    const double cpu_start = ThreadCpuSeconds();
    auto miss = (*cache)->GetOrCompile(*module, {}, kMeter, detail::kMeterVersion);
    const double here_s = ThreadCpuSeconds() - cpu_start;
    if (!miss.ok()) return Fail(path.string(), miss.status());
    const native::CompileStats& stats = miss->module->compile_stats();
    std::printf(
        "cache_miss file=%s outcome=%s wasm_bytes=%zu c_bytes=%zu in_process_cpu_s=%.2f "
        "compiler_cpu_s=%.2f cpu_s=%.2f goal_cpu_s=1\n",
        path.filename().c_str(), std::string(native::CacheOutcomeName(miss->outcome)).c_str(),
        (*module)->bytes().size(), stats.c_bytes, here_s, stats.cpu_seconds,
        here_s + stats.cpu_seconds);
  }
  // Hits in a new process: nothing of this one (loaded libraries, the compiler's version).
  std::vector<std::string> child = {std::filesystem::read_symlink("/proc/self/exe").string(),
                                    "cache-hit", argv[2]};
  for (int i = 3; i < argc; ++i) child.push_back(std::filesystem::absolute(argv[i]).string());
  const char* path_env = std::getenv("PATH");
  auto run = native::RunProcess(child, {std::string("PATH=") + (path_env ? path_env : "")},
                                std::filesystem::current_path(), native::ProcessLimits{});
  if (!run.ok()) return Fail("cache-hit", run.status());
  std::fputs(run->output.c_str(), stdout);
  return run->ok() ? 0 : 1;
}

// Median of `samples` timings of `step` (which returns false on failure), microseconds.
template <typename Step>
double MedianMicros(int samples, Step step) {
  std::vector<double> times;
  for (int i = 0; i < samples; ++i) {
    const auto start = Clock::now();
    if (!step()) return -1;
    times.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

int InstantiateCommand(int argc, char** argv) {
  constexpr int kSamples = 200;
  // Command modules (the bank's): their imports are the command manifest's.
  const HostRegistry& registry = reef::apps::ModuleRegistry(reef::store::ModuleKind::kCommand);
  for (int i = 2; i < argc; ++i) {
    const std::filesystem::path path = argv[i];
    auto module = Module::FromFile(path);
    if (!module.ok()) return Fail(path.string(), module.status());
    for (Tier tier : {Tier::kInterp, Tier::kNative}) {
      Engine engine(registry, {}, tier);
      auto first = engine.Instantiate(*module);  // compiles and loads native code, untimed
      if (!first.ok()) return Fail(path.string(), first.status());
      std::vector<std::unique_ptr<Instance>> kept;
      kept.reserve(kSamples);
      auto instantiate = [&] {
        auto instance = engine.Instantiate(*module);
        if (!instance.ok()) return false;
        kept.push_back(std::move(*instance));
        return true;
      };
      // Warm-up, untimed: the first instances of a fresh process take their memory from the
      // kernel (page faults: ~225 us an instance on this VM, either tier); a running server
      // reuses what earlier instances freed, which is what the timed round measures.
      const double cold_us = MedianMicros(kSamples, instantiate);
      kept.clear();
      const double instantiate_us = MedianMicros(kSamples, instantiate);
      const double reset_us = MedianMicros(kSamples, [&] { return (*first)->Reset().ok(); });
      // After a host write of one 4 KiB page (as an invocation that wrote one page): the
      // native tier restores what was written, the interpreter the whole memory.
      const std::vector<uint8_t> page(4096, 0x5a);
      GuestMemory& memory = (*first)->memory();
      const uint32_t at = static_cast<uint32_t>(std::min<uint64_t>(memory.size(), 65'536) / 2);
      const double written_us = MedianMicros(kSamples, [&] {
        return memory.size() >= at + page.size() && memory.Write(at, page).ok() &&
               (*first)->Reset().ok();
      });
      if (cold_us < 0 || instantiate_us < 0 || reset_us < 0 || written_us < 0) {
        return Fail(path.string(), reef::Status::Internal("instantiate or reset failed"));
      }
      std::printf(
          "instantiate file=%s tier=%s memory_bytes=%llu instantiate_us=%.1f reset_us=%.1f "
          "write_page_and_reset_us=%.1f cold_us=%.1f%s\n",
          path.filename().c_str(), tier == Tier::kNative ? "native" : "interpreter",
          static_cast<unsigned long long>(memory.size()), instantiate_us, reset_us, written_us,
          cold_us, tier == Tier::kNative ? " goal_us=10" : "");
    }
  }
  return 0;
}

int EmitCCommand(char** argv) {
  auto module = Module::FromFile(argv[2]);
  if (!module.ok()) return Fail(argv[2], module.status());
  auto c = native::GenerateC(**module, kMeter);
  if (!c.ok()) return Fail(argv[2], c.status());
  const std::filesystem::path dir = argv[3];
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) return Fail(argv[3], reef::Status::Internal(error.message()));
  const std::pair<const char*, const std::string*> files[] = {
      {"m.c", &c->module_source}, {"m.h", &c->module_header}, {"reef_glue.c", &c->glue_source}};
  for (const auto& [name, text] : files) {
    std::FILE* out = std::fopen((dir / name).c_str(), "w");
    if (out == nullptr) return Fail((dir / name).string(), reef::Status::Internal("cannot write"));
    std::fwrite(text->data(), 1, text->size(), out);
    std::fclose(out);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "compile" && argc > 2) return CompileCommand(argc, argv);
  if (mode == "run" && argc == 6) return RunCommand(argv);
  if (mode == "cache" && argc > 3) return CacheCommand(argc, argv);
  if (mode == "cache-hit" && argc > 3) return CacheHitCommand(argc, argv);
  if (mode == "emit-c" && argc == 4) return EmitCCommand(argv);
  if (mode == "instantiate" && argc > 2) return InstantiateCommand(argc, argv);
  std::fprintf(stderr,
               "usage: native_tier_bench compile FILE.wasm...\n"
               "       native_tier_bench run KERNELS.wasm FIB_N LOOP_N REPEATS\n"
               "       native_tier_bench cache DIR FILE.wasm...\n"
               "       native_tier_bench instantiate FILE.wasm...\n"
               "       native_tier_bench emit-c FILE.wasm DIR\n");
  return 2;
}
