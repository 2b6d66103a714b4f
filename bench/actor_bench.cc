// actor_bench: the Reef column of the actor workloads in `make bench` (docs/benchmarks.md,
// "Actor workloads"). The same workloads as the Erlang anchors (bench/anchors/actors.escript),
// on wasm actors in a free-running Runtime:
//
//   actor_bench GUEST_DIR REACTORS pingpong|fanout|call|spawn...   mode=one_thread (1) /
//   two_threads (2) actor_bench GUEST_DIR 2 memory                            alone: it needs a
//   fresh process REEF_ENGINE=native actor_bench ...                        the same on the native
//   tier
//
// GUEST_DIR holds pingpong.wasm, fanout.wasm, caller.wasm (bench/actors/) and counter.wasm
// (examples/).
// Every figure is one machine-readable line (joined with the Erlang lines by
// scripts/bench_anchors.sh on kernel + mode, + n for idle_rss):
//
//   bench engine=reef kernel=pingpong mode=one_thread n=100000 result=100000 unit=msg_per_s
//         median=... runs=r1,r2,r3 [extra=...]
//
// Like the escript, each workload runs once untimed, then REEF_BENCH_ACTOR_REPEATS (3) timed
// runs, and prints the median. Sizes (environment, same names as the escript; Reef's defaults
// are smaller where it is slower, since rates need not use equal sizes):
// REEF_BENCH_PINGPONG_N [50000], REEF_BENCH_PINGPONG_CROSS_N [20000], REEF_BENCH_FANOUT_WORKERS
// [1000], REEF_BENCH_FANOUT_ROUNDS [20], REEF_BENCH_CALL_N [50000], REEF_BENCH_CALL_CROSS_N
// [20000], REEF_BENCH_SPAWN_N [20000], REEF_BENCH_MEMORY_SIZES
// [100000,1000000] (memory per actor must use the Erlang sizes to be comparable).
//
// How completion is detected: the actors count what they handle in their state, and the host
// polls Inspect (a command run on the actor's reactor) every kPollInterval until the count is
// reached, so a figure includes up to one poll interval (1 ms; runs take hundreds) of latency.
// Each poll is a command the measured reactor runs between turns, so polling more often (it
// was every 100 us) takes a visible share of the reactor it measures. Any actor that fails, or a
// workload that does not finish within kDeadline, ends the program with a diagnosis (exit 1):
// a lost message shows as a count that stops short.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "actor/actor.h"
#include "actor/runtime.h"
#include "bench_engine.h"
#include "core/value.h"
#include "wasm/engine.h"
#include "wasm/module.h"

// Every C++ allocation of this process is counted, so the ping-pong probe can report the
// heap allocations per handled message (issue 15: none that a pool can avoid).
namespace {
std::atomic<uint64_t> g_allocations{0};
}  // namespace

// Only `new` is replaced: libstdc++'s operator delete frees with std::free, which matches.
// Not inlined: GCC would pair its malloc with the callers' operator delete and warn.
[[gnu::noinline]] void* operator new(size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}

namespace {

using reef::ActorRef;
using reef::Record;
using reef::Value;
using reef::actor::ActorSnapshot;
using reef::actor::ActorStatus;
using reef::actor::Implementation;
using reef::actor::Runtime;
using reef::actor::RuntimeOptions;
using reef::actor::SchedulingMode;
using reef::actor::SpawnOptions;
using Clock = std::chrono::steady_clock;

constexpr auto kPollInterval = std::chrono::microseconds(1000);
constexpr auto kDeadline = std::chrono::seconds(120);
constexpr int kSpawnCallers = 4;

[[noreturn]] void Die(std::string_view what) {
  std::fprintf(stderr, "actor_bench: %.*s\n", static_cast<int>(what.size()), what.data());
  std::exit(1);
}

int64_t Env(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  long long parsed = std::strtoll(v, &end, 10);
  if (*end != '\0' || parsed <= 0) Die(fmt::format("{}={} is not a positive integer", name, v));
  return parsed;
}

std::vector<int64_t> Sizes(const char* name, std::string_view fallback) {
  const char* v = std::getenv(name);
  std::string text = v != nullptr && *v != '\0' ? v : std::string(fallback);
  std::vector<int64_t> sizes;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = std::min(text.find(',', start), text.size());
    std::string item = text.substr(start, comma - start);
    char* end = nullptr;
    long long parsed = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || parsed <= 0) Die(fmt::format("bad {}={}", name, text));
    sizes.push_back(parsed);
    start = comma + 1;
  }
  return sizes;
}

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// "reef", or "reef-native" when REEF_ENGINE=native put every engine on the native tier.
std::string g_engine_name = "reef";

void Emit(std::string_view kernel, std::string_view mode, int64_t n, int64_t result,
          std::string_view unit, const std::vector<double>& runs, std::string_view extra = {}) {
  std::string joined;
  for (double r : runs) joined += fmt::format("{}{:.1f}", joined.empty() ? "" : ",", r);
  fmt::print("bench engine={} kernel={} mode={} n={} result={} unit={} median={:.1f} runs={}{}\n",
             g_engine_name, kernel, mode, n, result, unit, Median(runs), joined, extra);
  std::fflush(stdout);
}

std::shared_ptr<const Implementation> Load(const std::string& dir, const std::string& name) {
  auto module = reef::wasm::Module::FromFile(dir + "/" + name + ".wasm");
  if (!module.ok()) Die(fmt::format("loading {}: {}", name, module.status().ToString()));
  auto implementation = reef::actor::MakeImplementation(*module, name);
  if (!implementation.ok()) Die(fmt::format("{}: {}", name, implementation.status().ToString()));
  return *implementation;
}

std::unique_ptr<Runtime> FreeRunning(uint32_t reactors) {
  RuntimeOptions options;
  options.mode = SchedulingMode::kFreeRunning;
  options.reactors = reactors;
  options.call_timeout = std::chrono::milliseconds(30'000);
  auto runtime = Runtime::Create(options);
  if (!runtime.ok()) Die(runtime.status().ToString());
  return std::move(*runtime);
}

ActorRef Spawn(Runtime& runtime, const std::shared_ptr<const Implementation>& implementation,
               const SpawnOptions& options = {}) {
  auto ref = runtime.Spawn(implementation, Value::Int(0), options);
  if (!ref.ok()) Die(fmt::format("spawn: {}", ref.status().ToString()));
  return *ref;
}

SpawnOptions On(uint32_t reactor, std::optional<uint32_t> capacity = std::nullopt) {
  SpawnOptions options;
  options.reactor = reactor;
  options.mailbox_capacity = capacity;
  return options;
}

ActorSnapshot Inspect(Runtime& runtime, const ActorRef& ref) {
  auto snap = runtime.Inspect(ref);
  if (!snap.ok()) Die(fmt::format("inspect @{}: {}", ref.str(), snap.status().ToString()));
  if (snap->status == ActorStatus::kFailed) {
    Die(fmt::format("actor @{} failed: {}", ref.str(), snap->failure.value_or("?")));
  }
  return std::move(*snap);
}

// Polls until the states (integers) of `refs` sum to `target`; dies on a failed actor or
// at the deadline, describing where the count stopped.
void WaitForSum(Runtime& runtime, const std::vector<ActorRef>& refs, int64_t target,
                std::string_view what) {
  auto deadline = Clock::now() + kDeadline;
  for (;;) {
    int64_t sum = 0;
    std::string where;
    for (const ActorRef& ref : refs) {
      ActorSnapshot s = Inspect(runtime, ref);
      sum += s.state.as_int();
      where += fmt::format(" @{}: state={} status={} queued={}{}", ref.str(), s.state.as_int(),
                           reef::actor::ActorStatusName(s.status), s.queued.size(),
                           s.reserved ? " reserved" : "");
    }
    if (sum == target) return;
    if (sum > target)
      Die(fmt::format("{}: count {} passed the expected {}:{}", what, sum, target, where));
    if (Clock::now() > deadline) {
      Die(fmt::format("{}: stuck at {} of {} after {} s:{}", what, sum, target, kDeadline.count(),
                      where));
    }
    std::this_thread::sleep_for(kPollInterval);
  }
}

void Send(Runtime& runtime, const ActorRef& to, Value message) {
  auto sent = runtime.TrySend(to, std::move(message));
  if (!sent.status.ok()) Die(fmt::format("send to @{}: {}", to.str(), sent.status.ToString()));
}

// Runs `run` (returns seconds) once untimed, then REEF_BENCH_ACTOR_REPEATS times.
template <typename Fn>
std::vector<double> Sample(Fn run) {
  run();
  std::vector<double> seconds;
  for (int64_t i = 0, n = Env("REEF_BENCH_ACTOR_REPEATS", 3); i < n; ++i) seconds.push_back(run());
  return seconds;
}

std::vector<double> Rates(double count, const std::vector<double>& seconds) {
  std::vector<double> rates;
  for (double s : seconds) rates.push_back(count / s);
  return rates;
}

// ---- workloads -------------------------------------------------------------------------------

struct PerMessage {
  uint64_t instructions;  // wasm instructions
  double allocations;     // C++ heap allocations (operator new)
};

// Wasm instructions and heap allocations per handled message of a short ping-pong
// (kProbeMessages), in a manual-mode runtime whose TickReport counts the instructions: context
// for the rates (the engine's instruction rate is in the engine table). The allocations are
// counted over the ticks only, on this thread (a manual runtime runs in Tick).
PerMessage ProbePerMessage(const std::shared_ptr<const Implementation>& pingpong) {
  constexpr int64_t kProbeMessages = 1000;
  auto runtime = Runtime::Create(RuntimeOptions{});
  if (!runtime.ok()) Die(runtime.status().ToString());
  ActorRef a = Spawn(**runtime, pingpong);
  ActorRef b = Spawn(**runtime, pingpong);
  Record start;
  start.emplace("n", Value::Int(kProbeMessages - 1));
  start.emplace("peer", Value::Ref(b));
  Send(**runtime, a, Value::RecordOf(std::move(start)));
  // One message per tick (a, then b, ...), all in one Tick call.
  const uint64_t allocations_before = g_allocations.load();
  auto report = (*runtime)->Tick(kProbeMessages, 1'000'000);
  const uint64_t allocations = g_allocations.load() - allocations_before;
  if (!report.ok() || report->failures > 0) Die("pingpong: the instruction probe failed");
  const uint64_t commits = report->commits;
  if (commits != kProbeMessages) Die("pingpong: the instruction probe did not finish");
  return {report->instructions / commits,
          static_cast<double>(allocations) / static_cast<double>(commits)};
}

// Two pingpong actors bounce one message n times: the host sends {"n": n, "peer": b} to a;
// each actor counts what it handles, so the pair has handled n + 1 messages (n between them).
void PingPong(const std::string& dir, uint32_t reactors, std::string_view mode) {
  bool cross = reactors > 1;
  int64_t n =
      cross ? Env("REEF_BENCH_PINGPONG_CROSS_N", 20'000) : Env("REEF_BENCH_PINGPONG_N", 50'000);
  auto runtime = FreeRunning(reactors);
  auto pingpong = Load(dir, "pingpong");
  uint32_t placed_a = 0, placed_b = 0;
  auto seconds = Sample([&] {
    ActorRef a = Spawn(*runtime, pingpong, On(0));
    ActorRef b = Spawn(*runtime, pingpong, On(cross ? 1 : 0));
    Record start;
    start.emplace("n", Value::Int(n));
    start.emplace("peer", Value::Ref(b));
    auto t0 = Clock::now();
    Send(*runtime, a, Value::RecordOf(std::move(start)));
    WaitForSum(*runtime, {a, b}, n + 1, "pingpong");
    double s = Seconds(t0);
    placed_a = Inspect(*runtime, a).reactor;
    placed_b = Inspect(*runtime, b).reactor;
    return s;
  });
  const PerMessage per = ProbePerMessage(pingpong);
  Emit("pingpong", mode, n, n, "msg_per_s", Rates(static_cast<double>(n), seconds),
       fmt::format(" reactors={}+{} instr_per_msg={} allocs_per_msg={:.2f}", placed_a, placed_b,
                   per.instructions, per.allocations));
}

// A coordinator sends {"op":"ping"} to each of w workers, each replies {"op":"pong"}, and the
// round ends when the coordinator has counted w more pongs; `rounds` rounds per run. Workers
// are spawned before the clock starts, placed round-robin; the coordinator is on reactor 0 and
// its mailbox holds a whole round of replies (sends to a full mailbox fail the sender).
void FanOut(const std::string& dir, uint32_t reactors, std::string_view mode) {
  int64_t w = Env("REEF_BENCH_FANOUT_WORKERS", 1000);
  int64_t rounds = Env("REEF_BENCH_FANOUT_ROUNDS", 20);
  auto runtime = FreeRunning(reactors);
  auto fanout = Load(dir, "fanout");
  reef::List workers;
  std::vector<ActorRef> worker_refs;
  for (int64_t i = 0; i < w; ++i) {
    worker_refs.push_back(Spawn(*runtime, fanout));
    workers.push_back(Value::Ref(worker_refs.back()));
  }
  ActorRef coordinator = Spawn(*runtime, fanout, On(0, static_cast<uint32_t>(w) + 16));
  Record fields;
  fields.emplace("op", Value::String("start"));
  fields.emplace("workers", Value::ListOf(std::move(workers)));
  const Value start = Value::RecordOf(std::move(fields));
  int64_t replies = 0;
  auto seconds = Sample([&] {
    auto t0 = Clock::now();
    for (int64_t r = 0; r < rounds; ++r) {
      Send(*runtime, coordinator, start);
      replies += w;
      WaitForSum(*runtime, {coordinator}, replies, "fanout");
    }
    return Seconds(t0);
  });
  // Every worker answered every ping exactly once.
  int64_t pings = 0;
  for (const ActorRef& ref : worker_refs) pings += Inspect(*runtime, ref).state.as_int();
  if (pings != replies)
    Die(fmt::format("fanout: workers handled {} pings, expected {}", pings, replies));
  int64_t result = rounds * w;
  std::string extra = fmt::format(" workers={} rounds={}", w, rounds);
  Emit("fanout", mode, w, result, "rounds_per_s", Rates(static_cast<double>(rounds), seconds),
       extra);
  Emit("fanout_msg", mode, w, result, "msg_per_s", Rates(2.0 * w * rounds, seconds), extra);
}

// A client actor makes n calls, one after the other, to a server actor that replies to each
// (the `call` import; Erlang's counterpart is gen_server:call): the host sends
// {"n": n, "server": s} to the client, and the pair's states reach 2n (n calls handled by the
// server, n made by the client) when the last reply is in. The two are on one reactor
// (one_thread) or on two (two_threads), like ping-pong.
void CallRoundTrip(const std::string& dir, uint32_t reactors, std::string_view mode) {
  bool cross = reactors > 1;
  int64_t n = cross ? Env("REEF_BENCH_CALL_CROSS_N", 20'000) : Env("REEF_BENCH_CALL_N", 50'000);
  auto runtime = FreeRunning(reactors);
  auto caller = Load(dir, "caller");
  auto seconds = Sample([&] {
    ActorRef client = Spawn(*runtime, caller, On(0));
    ActorRef server = Spawn(*runtime, caller, On(cross ? 1 : 0));
    Record start;
    start.emplace("n", Value::Int(n));
    start.emplace("server", Value::Ref(server));
    auto t0 = Clock::now();
    Send(*runtime, client, Value::RecordOf(std::move(start)));
    WaitForSum(*runtime, {client, server}, 2 * n, "call");
    return Seconds(t0);
  });
  Emit("call", mode, n, n, "calls_per_s", Rates(static_cast<double>(n), seconds),
       fmt::format(" late_replies={}", runtime->LateReplies()));
}

uint64_t ActorCount(Runtime& runtime) {
  uint64_t count = 0;
  for (const auto& r : runtime.Reactors()) count += r.actors;
  return count;
}

// Spawns `n` idle counter actors (state 0, default placement) from `callers` host threads at
// once (each Spawn queues the actor's insertion on its reactor and returns).
void SpawnMany(Runtime& runtime, const std::shared_ptr<const Implementation>& implementation,
               int64_t n, int callers) {
  std::vector<std::thread> threads;
  for (int c = 0; c < callers; ++c) {
    int64_t share = n / callers + (c < n % callers ? 1 : 0);
    threads.emplace_back([&runtime, &implementation, share] {
      for (int64_t i = 0; i < share; ++i) Spawn(runtime, implementation);
    });
  }
  for (std::thread& t : threads) t.join();
}

// Spawns n idle counter actors (state 0) into a fresh runtime, placed round-robin, from one
// host thread (the row joined with Erlang's one spawner process) and again from kSpawnCallers
// threads (mode=<mode>_4_callers, Reef-only context). Spawn returns once the actor's insertion
// is queued on its reactor (ahead of anything done with the ref); the clock stops when every
// reactor has inserted its actors. An idle actor has no wasm instance, so nothing runs. The runtime
// is destroyed, untimed, after each run.
void SpawnRate(const std::string& dir, uint32_t reactors, std::string_view mode) {
  int64_t n = Env("REEF_BENCH_SPAWN_N", 20'000);
  auto counter = Load(dir, "counter");
  for (int callers : {1, kSpawnCallers}) {
    uint64_t result = 0;
    auto seconds = Sample([&] {
      auto runtime = FreeRunning(reactors);
      auto t0 = Clock::now();
      SpawnMany(*runtime, counter, n, callers);
      // Every insertion was queued before this no-op on its reactor: once each has run, all
      // the actors exist.
      for (uint32_t r = 0; r < runtime->ReactorCount(); ++r) {
        if (!runtime->PostAndWait(r, [] {}).ok()) Die("spawn: a reactor stopped");
      }
      double s = Seconds(t0);
      result = ActorCount(*runtime);
      return s;
    });
    std::string row =
        callers == 1 ? std::string(mode) : fmt::format("{}_{}_callers", mode, callers);
    Emit("spawn", row, n, static_cast<int64_t>(result), "spawn_per_s",
         Rates(static_cast<double>(n), seconds));
  }
}

int64_t RssBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::strtoll(line.c_str() + 6, nullptr, 10) * 1024;
  }
  Die("no VmRSS in /proc/self/status");
}

// Idle counter actors (state 0, no message ever), spawned cumulatively up to each size by
// kSpawnCallers host threads (only to save time: one caller spawns 1.1 M actors in about a
// minute on an idle machine); (VmRSS now - VmRSS before the first spawn) / size. One run per
// process.
void Memory(const std::string& dir, uint32_t reactors, std::string_view mode) {
  auto sizes = Sizes("REEF_BENCH_MEMORY_SIZES", "100000,1000000");
  if (!std::is_sorted(sizes.begin(), sizes.end(), std::less_equal<>())) {
    Die("REEF_BENCH_MEMORY_SIZES must increase");
  }
  auto runtime = FreeRunning(reactors);
  auto counter = Load(dir, "counter");
  int64_t rss0 = RssBytes();
  int64_t spawned = 0;
  int64_t rss_prev = rss0;
  for (int64_t size : sizes) {
    int64_t before = spawned;
    SpawnMany(*runtime, counter, size - spawned, kSpawnCallers);
    spawned = size;
    auto count = static_cast<int64_t>(ActorCount(*runtime));
    int64_t rss = RssBytes();
    // marginal: growth per actor since the previous size (since the start for the first)
    Emit("idle_rss", mode, size, count, "bytes_per_actor",
         {static_cast<double>(rss - rss0) / static_cast<double>(size)},
         fmt::format(" rss_mb={:.1f} marginal={:.1f}", static_cast<double>(rss) / 1048576.0,
                     static_cast<double>(rss - rss_prev) / static_cast<double>(size - before)));
    rss_prev = rss;
  }
}

// Tick cost against stopped actors (issue 16: a tick costs in proportion to the runnable
// actors): a manual runtime with `stopped` killed actors and one ping-pong pair bouncing a
// long message; each run times Tick(100) (100 ticks with a budget of 1 M instructions, so each
// handles whole messages), then kills its pair.
// Lines kernel=tick100 with stopped=0 and stopped=20000: the rates should match.
void TickCost(const std::string& dir) {
  auto pingpong = Load(dir, "pingpong");
  for (int64_t stopped : {int64_t{0}, Env("REEF_BENCH_TICK_STOPPED", 20'000)}) {
    auto runtime = Runtime::Create(RuntimeOptions{});
    if (!runtime.ok()) Die(runtime.status().ToString());
    for (int64_t i = 0; i < stopped; ++i) {
      reef::Status killed = (*runtime)->Kill(Spawn(**runtime, pingpong));
      if (!killed.ok()) Die("tick: kill: " + killed.ToString());
    }
    auto seconds = Sample([&] {
      ActorRef a = Spawn(**runtime, pingpong);
      ActorRef b = Spawn(**runtime, pingpong);
      Record start;
      start.emplace("n", Value::Int(1'000'000));
      start.emplace("peer", Value::Ref(b));
      Send(**runtime, a, Value::RecordOf(std::move(start)));
      auto t0 = Clock::now();
      auto report = (*runtime)->Tick(100, 1'000'000);
      double s = Seconds(t0);
      // One or two commits per tick: b runs in a's tick when its ref comes after a's.
      if (!report.ok() || report->commits < 100) Die("tick: the pair stalled");
      if (!(*runtime)->Kill(a).ok() || !(*runtime)->Kill(b).ok()) Die("tick: kill the pair");
      return s;
    });
    Emit("tick100", "one_thread", 100, 100, "ticks_per_s", Rates(100, seconds),
         fmt::format(" stopped={}", stopped));
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    Die("usage: actor_bench GUEST_DIR REACTORS pingpong|fanout|call|spawn|tick...\n"
        "       actor_bench GUEST_DIR REACTORS memory   (alone: it needs a fresh process)");
  }
  std::string dir = argv[1];
  long reactors = std::strtol(argv[2], nullptr, 10);
  if (reactors < 1 || reactors > 64) Die("REACTORS must be 1..64");
  std::string mode = reactors == 1   ? "one_thread"
                     : reactors == 2 ? "two_threads"
                                     : fmt::format("{}_threads", reactors);
  // REEF_ENGINE=native: every engine of the runtime on the native tier (compiled on first
  // use, before the untimed warm-up run); the lines say engine=reef-native.
  auto tier = reef::bench::UseEngineFromEnvironment();
  if (!tier.ok()) Die(tier.status().ToString());
  if (*tier == "native") g_engine_name = "reef-native";
  std::vector<std::string_view> workloads(argv + 3, argv + argc);
  bool memory = std::find(workloads.begin(), workloads.end(), "memory") != workloads.end();
  if (memory && workloads.size() > 1) Die("memory must run alone (it needs a fresh process)");
  for (std::string_view w : workloads) {
    if (w == "pingpong") {
      PingPong(dir, static_cast<uint32_t>(reactors), mode);
    } else if (w == "fanout") {
      FanOut(dir, static_cast<uint32_t>(reactors), mode);
    } else if (w == "call") {
      CallRoundTrip(dir, static_cast<uint32_t>(reactors), mode);
    } else if (w == "spawn") {
      SpawnRate(dir, static_cast<uint32_t>(reactors), mode);
    } else if (w == "tick") {
      TickCost(dir);
    } else if (w == "memory") {
      Memory(dir, static_cast<uint32_t>(reactors), mode);
    } else {
      Die(fmt::format("unknown workload '{}'", w));
    }
  }
  return 0;
}
