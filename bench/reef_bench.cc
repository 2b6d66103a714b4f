// reef_bench: the Reef columns of `make bench`, one engine tier per run (see
// docs/benchmarks.md).
//
// Loads bench_kernels.wasm with Module::FromFile, instantiates it through an Engine with an
// empty HostRegistry("reef", 1) and times, each REPEATS samples (the median is what counts):
//   fib(FIB_N), loop(LOOP_N) and mem(MEM_N) through Instance::Call with one large budget, and again
//   driven by hand with Start + Run(10,000) slices (the free-running slice size), and
//   CALLS calls of nop(i) through Instance::Call and through Start + Run on one instance.
//
// Usage: reef_bench KERNELS.wasm FIB_N LOOP_N MEM_N CALLS REPEATS [interp|native]
// (interp by default; native compiles the module with the system C compiler first, untimed,
// and prints engine=reef-native).
// Every measurement runs once untimed (warm-up and calibration); then each sample repeats it
// back to back for at least kMinSampleMs and reports the time of one run (`reps` per sample).
// Prints one line per figure, machine-readable (parsed by scripts/bench.sh):
//   bench engine=reef kernel=fib mode=call budget=1000000000000 n=30 result=832040
//         unit=ms median=412.3 runs=410.9,412.3,415.0 reps=1 [slices=... minstr_per_s=...]
// Exits non-zero when anything fails or two modes disagree on a result.
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "wasm/engine.h"
#include "wasm/host.h"
#include "wasm/invocation.h"
#include "wasm/module.h"

namespace {

using reef::wasm::Engine;
using reef::wasm::HostRegistry;
using reef::wasm::Instance;
using reef::wasm::Invocation;
using reef::wasm::Module;
using reef::wasm::RunState;
using reef::wasm::WasmValue;
using Clock = std::chrono::steady_clock;

// Budget (engine instructions) for Instance::Call: large enough that no kernel here runs out.
constexpr uint64_t kLargeBudget = 1'000'000'000'000;
// The free-running slice: the budget a reactor gives one invocation per turn.
constexpr uint64_t kSliceBudget = 10'000;
// A sample lasts at least this long (milliseconds), so short runs are not all timer noise.
constexpr double kMinSampleMs = 100;

[[noreturn]] void Die(std::string_view what) {
  std::fprintf(stderr, "reef_bench: %.*s\n", static_cast<int>(what.size()), what.data());
  std::exit(1);
}

double MillisSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// A wasm result as a decimal integer (i32 and i64 only; the kernels return nothing else).
int64_t AsInteger(const WasmValue& v) {
  if (const auto* i = std::get_if<int32_t>(&v)) return *i;
  if (const auto* l = std::get_if<int64_t>(&v)) return *l;
  Die("kernel returned a non-integer value");
}

struct Sample {
  std::vector<double> runs;  // one figure per sample, in `unit`
  int64_t result = 0;        // what the kernel computed (checked equal on every run)
  int reps = 1;              // runs per sample
  uint64_t slices = 0;       // Run calls of one run (sliced mode only)
};

// "reef" (the interpreter) or "reef-native": the engine field of every printed line.
const char* g_engine_name = "reef";

void Print(std::string_view kernel, std::string_view mode, uint64_t budget, int64_t n,
           std::string_view unit, const Sample& s) {
  double median = Median(s.runs);
  std::printf("bench engine=%s kernel=%.*s mode=%.*s budget=%" PRIu64 " n=%" PRId64
              " result=%" PRId64 " unit=%.*s median=%.3f runs=",
              g_engine_name, static_cast<int>(kernel.size()), kernel.data(),
              static_cast<int>(mode.size()), mode.data(), budget, n, s.result,
              static_cast<int>(unit.size()), unit.data(), median);
  for (size_t i = 0; i < s.runs.size(); ++i) std::printf(i ? ",%.3f" : "%.3f", s.runs[i]);
  std::printf(" reps=%d", s.reps);
  if (s.slices > 0) {
    // Every slice but the last used its whole budget, so this is exact to within one slice.
    double instructions = static_cast<double>(s.slices) * static_cast<double>(budget);
    std::printf(" slices=%" PRIu64 " minstr_per_s=%.1f", s.slices,
                instructions / (median / 1e3) / 1e6);
  }
  std::printf("\n");
  std::fflush(stdout);
}

// Runs `once` (which returns the kernel's result) untimed, then `repeats` samples of `reps`
// back-to-back runs; each figure is milliseconds per run * `scale`.
template <typename Once>
Sample Measure(int repeats, double scale, Once once) {
  Sample s;
  auto start = Clock::now();
  s.result = once();
  double warm_ms = MillisSince(start);
  s.reps = static_cast<int>(std::clamp(std::ceil(kMinSampleMs / warm_ms), 1.0, 1e6));
  for (int r = 0; r < repeats; ++r) {
    start = Clock::now();
    for (int i = 0; i < s.reps; ++i) {
      if (once() != s.result) Die("result changed between runs");
    }
    s.runs.push_back(MillisSince(start) / s.reps * scale);
  }
  return s;
}

// Instance::Call(name, {n}) with the large budget; ms per call.
Sample TimeCall(Instance& instance, std::string_view name, int32_t n, int repeats) {
  const WasmValue args[] = {n};
  return Measure(repeats, 1, [&]() -> int64_t {
    auto results = instance.Call(name, args, nullptr, kLargeBudget);
    if (!results.ok()) Die(results.status().ToString());
    return AsInteger(results->at(0));
  });
}

// Start(name, {n}), then Run(kSliceBudget) until it finishes; ms per call.
Sample TimeSliced(Instance& instance, std::string_view name, int32_t n, int repeats) {
  const WasmValue args[] = {n};
  uint64_t slices = 0;
  Sample s = Measure(repeats, 1, [&]() -> int64_t {
    auto invocation = instance.Start(name, args);
    if (!invocation.ok()) Die(invocation.status().ToString());
    slices = 0;
    RunState state = RunState::kBudgetExhausted;
    while (state == RunState::kBudgetExhausted) {
      state = (*invocation)->Run(kSliceBudget);
      ++slices;
    }
    if (state != RunState::kFinished) {
      Die(std::string("sliced run ended ") + std::string(reef::wasm::RunStateName(state)));
    }
    return AsInteger((*invocation)->results().at(0));
  });
  s.slices = slices;
  return s;
}

// `calls` calls of nop(i) for i in [0, calls), result = the sum of nop(i); ns per call.
template <typename CallOnce>
Sample TimeCalls(int32_t calls, int repeats, CallOnce call_once) {
  return Measure(repeats, 1e6 / calls, [&]() -> int64_t {
    int64_t sum = 0;
    for (int32_t i = 0; i < calls; ++i) sum += call_once(i);
    return sum;
  });
}

int32_t ParseArg(const char* text, const char* what) {
  char* end = nullptr;
  long v = std::strtol(text, &end, 10);
  if (*end != '\0' || v < 1 || v > INT32_MAX) Die(std::string("bad ") + what + ": " + text);
  return static_cast<int32_t>(v);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 7 && argc != 8) {
    Die("usage: reef_bench KERNELS.wasm FIB_N LOOP_N MEM_N CALLS REPEATS [interp|native]");
  }
  const std::string tier = argc == 8 ? argv[7] : "interp";
  if (tier != "interp" && tier != "native") Die("bad tier: " + tier);
  if (tier == "native") g_engine_name = "reef-native";
  const int32_t fib_n = ParseArg(argv[2], "FIB_N");
  const int32_t loop_n = ParseArg(argv[3], "LOOP_N");
  const int32_t mem_n = ParseArg(argv[4], "MEM_N");
  const int32_t calls = ParseArg(argv[5], "CALLS");
  const int repeats = ParseArg(argv[6], "REPEATS");

  auto module = Module::FromFile(argv[1]);
  if (!module.ok()) Die(module.status().ToString());
  HostRegistry registry("reef", 1);
  Engine engine(registry, {},
                tier == "native" ? reef::wasm::Tier::kNative : reef::wasm::Tier::kInterp);
  auto instance_or = engine.Instantiate(*module);
  if (!instance_or.ok()) Die(instance_or.status().ToString());
  Instance& instance = **instance_or;

  Sample fib_call = TimeCall(instance, "fib", fib_n, repeats);
  Print("fib", "call", kLargeBudget, fib_n, "ms", fib_call);
  Sample fib_sliced = TimeSliced(instance, "fib", fib_n, repeats);
  Print("fib", "sliced", kSliceBudget, fib_n, "ms", fib_sliced);
  Sample loop_call = TimeCall(instance, "loop", loop_n, repeats);
  Print("loop", "call", kLargeBudget, loop_n, "ms", loop_call);
  Sample loop_sliced = TimeSliced(instance, "loop", loop_n, repeats);
  Print("loop", "sliced", kSliceBudget, loop_n, "ms", loop_sliced);
  Sample mem_call = TimeCall(instance, "mem", mem_n, repeats);
  Print("mem", "call", kLargeBudget, mem_n, "ms", mem_call);
  Sample mem_sliced = TimeSliced(instance, "mem", mem_n, repeats);
  Print("mem", "sliced", kSliceBudget, mem_n, "ms", mem_sliced);
  if (fib_call.result != fib_sliced.result || loop_call.result != loop_sliced.result ||
      mem_call.result != mem_sliced.result) {
    Die("slicing changed a result");
  }

  Sample nop_call = TimeCalls(calls, repeats, [&](int32_t i) -> int64_t {
    const WasmValue args[] = {i};
    auto results = instance.Call("nop", args, nullptr, kLargeBudget);
    if (!results.ok()) Die(results.status().ToString());
    return AsInteger(results->at(0));
  });
  Print("nop", "call", kLargeBudget, calls, "ns", nop_call);
  Sample nop_start_run = TimeCalls(calls, repeats, [&](int32_t i) -> int64_t {
    const WasmValue args[] = {i};
    auto invocation = instance.Start("nop", args);
    if (!invocation.ok()) Die(invocation.status().ToString());
    if ((*invocation)->Run(kSliceBudget) != RunState::kFinished) Die("nop did not finish");
    return AsInteger((*invocation)->results()[0]);
  });
  Print("nop", "start_run", kSliceBudget, calls, "ns", nop_start_run);
  if (nop_call.result != nop_start_run.result) Die("nop call modes disagree");
  return 0;
}
