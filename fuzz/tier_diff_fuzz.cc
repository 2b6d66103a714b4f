// libFuzzer target: differential fuzzing of the engine's two tiers (docs/engine.md
// "Differential fuzzing"). binaryen's `wasm-opt -ttf` ("translate to fuzz") turns each input
// into a valid module; the module is instantiated on the interpreter and on the native tier
// (-O0) against one host registry (binaryen's `fuzzing-support` logging imports, which record
// their arguments), and each exported function is called on both with the same arguments and
// instruction budget, run in budgeted slices on one tier and in one piece on the other. After
// every call the two tiers must agree on the run state, results, trap kind (not its function,
// offset or message: the native tier names the export it called), instructions charged, the
// host calls made, memory 0 and the exported globals. A mismatch prints both outcomes and
// aborts; the module is kept beside the report. The one allowed divergence is StackDivergence
// (documented). Two engine bugs this fuzzer found are fixed: native code did not trap at
// max_call_depth where the interpreter's out-of-fuel call does, and a slice that suspended
// in a host call with its fuel below 0 charged its overshoot twice.
//
// Input: byte 0 chooses the run plan (budget and slice, which tier is sliced, whether host
// calls suspend, the call depth limit, whether binaryen optimizes the module), byte 1 seeds the
// arguments, the rest is wasm-opt's random input. Modules that wasm-opt or Reef's loader
// refuse, or that neither tier instantiates, are skipped and counted (the counts print every
// 100 inputs and at exit); one tier instantiating what the other refuses is a mismatch.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "wasm/engine.h"
#include "wasm/native/code_source.h"
#include "wasm/native/process.h"

namespace {

using namespace reef;
using namespace reef::wasm;

// ---- Generating modules --------------------------------------------------------------------

// The proposals both tiers take: wabt 1.0.32's defaults less SIMD (native/c_gen.cc). Reference
// types stay off: binaryen 108 treats funcref as a subtype of its anyref (= externref), which
// wabt rejects (33 of 40 modules in a trial). --denan replaces every NaN a function computes
// with 0: the spec leaves the payload and sign of a computed NaN nondeterministic, and such a
// NaN reinterpreted or stored would let every later value differ legitimately. Half the
// inputs add --fuzz-passes: binaryen then optimizes the module with passes it picks from the
// input (after --denan), giving the shapes optimized code has.
constexpr std::array kTtfFlags = {"-ttf",
                                  "--enable-sign-ext",
                                  "--enable-mutable-globals",
                                  "--enable-nontrapping-float-to-int",
                                  "--enable-bulk-memory",
                                  "--enable-multivalue",
                                  "--denan"};
constexpr size_t kConfigBytes = 2;
constexpr size_t kMaxInputBytes = 16 * 1024;  // bounds the module, so the native compile
constexpr size_t kMaxCalls = 8;               // exports called per module

struct Paths {
  std::filesystem::path wasm_opt;
  std::filesystem::path dir;  // private temporary directory, removed at exit
};

Paths& paths() {
  static Paths p;
  return p;
}

// The module wasm-opt makes of `random`, or nullopt when it fails (counted as a skip).
std::optional<std::vector<uint8_t>> TranslateToFuzz(std::span<const uint8_t> random,
                                                    bool optimize) {
  const std::filesystem::path input = paths().dir / "input.dat";
  const std::filesystem::path output = paths().dir / "module.wasm";
  {
    std::ofstream out(input, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(random.data()),
              static_cast<std::streamsize>(random.size()));
    if (!out) return std::nullopt;
  }
  std::filesystem::remove(output);
  std::vector<std::string> argv = {paths().wasm_opt.string(), input.string()};
  argv.insert(argv.end(), kTtfFlags.begin(), kTtfFlags.end());
  if (optimize) argv.emplace_back("--fuzz-passes");
  argv.insert(argv.end(), {"-o", output.string()});
  native::ProcessLimits limits;
  limits.wall_time = std::chrono::milliseconds(30'000);
  auto run = native::RunProcess(argv, {"PATH=/usr/bin:/bin", "LC_ALL=C"}, paths().dir, limits);
  if (!run.ok() || !run->ok()) return std::nullopt;
  std::ifstream in(output, std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  if (bytes.empty()) return std::nullopt;
  return bytes;
}

// ---- The run plan --------------------------------------------------------------------------

// Budgets and slices: small budgets stop calls midway (ttf's hang limit ends loops after ten
// iterations, so a large budget rarely runs out); slice 1 stops at every check.
struct Plan {
  uint64_t budget;  // instructions for the whole call, on both tiers
  uint64_t slice;   // the sliced tier's Run budget
};
constexpr std::array<Plan, 8> kPlans = {{{100'000, 1'000},
                                         {100'000, 100'000},
                                         {20'000, 97},
                                         {3'000, 1},
                                         {1'000, 13},
                                         {300, 7},
                                         {50, 1},
                                         {100'000, 4'096}}};
// EngineLimits::max_call_depth: the default, and limits ttf's call chains reach (an export
// calling a function that calls the host is three frames).
constexpr std::array<uint32_t, 4> kCallDepths = {1'024, 1'024, 3, 2};

struct Config {
  Plan plan;
  bool slice_native;   // else the interpreter runs sliced
  bool suspend;        // host calls suspend; the harness completes them
  uint32_t max_depth;  // EngineLimits::max_call_depth
  bool optimize;       // binaryen runs passes of its choice on the module
  uint8_t arg_seed;
};

Config ReadConfig(std::span<const uint8_t> bytes) {
  const uint8_t b = bytes[0];
  return Config{kPlans[b & 7],  (b & 8) != 0, (b & 16) != 0, kCallDepths[(b >> 5) & 3],
                (b & 128) != 0, bytes[1]};
}

// ---- Host imports --------------------------------------------------------------------------

// One host call as the guest made it.
struct HostCallRecord {
  std::string import;
  WasmValue arg;
};

// A tier's invocation context: what its host calls recorded and how they answer.
struct HostLog {
  bool suspend = false;
  std::vector<HostCallRecord> calls;
};

// binaryen's imports for ttf modules: fuzzing-support.log-{i32,i64,f32,f64}, each taking one
// value and returning nothing.
const HostRegistry& FuzzingSupport() {
  static const HostRegistry* registry = [] {
    auto* r = new HostRegistry("fuzzing-support", 1);  // never destroyed: engines use it
    for (ValType type : {ValType::kI32, ValType::kI64, ValType::kF32, ValType::kF64}) {
      std::string name = fmt::format("log-{}", ValTypeName(type));
      HostHandler handler = [name](HostCall& call) {
        auto* log = static_cast<HostLog*>(call.context());
        if (log == nullptr) return call.Fail(TrapKind::kHostError, "no log");
        log->calls.push_back({name, call.args()[0]});
        return log->suspend ? HostCallOutcome::kSuspend : HostCallOutcome::kComplete;
      };
      Status added = r->Add(
          {"fuzzing-support", name, FuncSignature{{type}, {}}, handler, "records its argument"});
      if (!added.ok()) std::abort();
    }
    return r;
  }();
  return *registry;
}

// ---- Running a call ------------------------------------------------------------------------

struct Outcome {
  Status start;  // Instance::Start's status; the rest is set only when it is OK
  RunState state = RunState::kBudgetExhausted;
  std::vector<WasmValue> results;
  TrapKind trap = TrapKind::kOther;
  std::string trap_text;
  uint64_t instructions = 0;  // Telemetry::instructions after the last Run
  uint64_t runs = 0;          // Run calls
  std::vector<HostCallRecord> host_calls;
};

// Calls `name` with `args` for `budget` instructions in Runs of at most `slice`, completing
// suspended host calls (with no results: the log imports return nothing).
Outcome Call(Instance& instance, HostLog& log, std::string_view name,
             std::span<const WasmValue> args, uint64_t budget, uint64_t slice) {
  Outcome out;
  log.calls.clear();
  auto started = instance.Start(name, args, &log);
  out.start = started.status();
  if (!started.ok()) return out;
  Invocation& invocation = **started;
  // Each Run charges its slice or ends at a host call, so this ends; the cap is a backstop.
  for (uint64_t steps = 0; steps < 10 * budget + 1'000; ++steps) {
    out.instructions = invocation.telemetry().instructions;
    if (invocation.state() == RunState::kSuspended) {
      if (!invocation.CompleteHostCall({}).ok()) std::abort();
      continue;
    }
    if (invocation.state() != RunState::kBudgetExhausted || out.instructions >= budget) break;
    invocation.Run(std::min(slice, budget - out.instructions));
    ++out.runs;
  }
  out.state = invocation.state();
  if (out.state == RunState::kFinished) out.results = invocation.results();
  if (out.state == RunState::kTrapped) {
    out.trap = invocation.trap().kind;
    out.trap_text = invocation.trap().ToString();
  }
  out.host_calls = std::move(log.calls);
  return out;
}

// ---- Comparing -----------------------------------------------------------------------------

// Equal bits, or both NaN: the spec lets a computed NaN's payload and sign differ between
// engines (--denan should leave none; a NaN constant could still reach a result).
bool SameValue(const WasmValue& a, const WasmValue& b) {
  if (a.index() != b.index()) return false;
  if (const float* x = std::get_if<float>(&a)) {
    const float y = std::get<float>(b);
    return std::bit_cast<uint32_t>(*x) == std::bit_cast<uint32_t>(y) ||
           (std::isnan(*x) && std::isnan(y));
  }
  if (const double* x = std::get_if<double>(&a)) {
    const double y = std::get<double>(b);
    return std::bit_cast<uint64_t>(*x) == std::bit_cast<uint64_t>(y) ||
           (std::isnan(*x) && std::isnan(y));
  }
  return a == b;
}

bool SameValues(std::span<const WasmValue> a, std::span<const WasmValue> b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), SameValue);
}

bool SameHostCall(const HostCallRecord& a, const HostCallRecord& b) {
  return a.import == b.import && SameValue(a.arg, b.arg);
}

// "log-i32(i32:5)", or "none" past the last call.
std::string FormatHostCall(const std::vector<HostCallRecord>& calls, size_t i) {
  return i < calls.size() ? fmt::format("{}({})", calls[i].import, FormatValue(calls[i].arg))
                          : "none";
}

bool IsStackTrap(const Outcome& o) {
  return o.state == RunState::kTrapped &&
         (o.trap == TrapKind::kCallStackExhausted || o.trap == TrapKind::kValueStackExhausted);
}

// The documented divergence (docs/engine.md "Differential fuzzing"): the tiers bound a call's
// stack with different resources. The interpreter counts values against max_value_stack and
// traps value_stack_exhausted before a frame could pass it; native frames live on a 1 MiB
// fiber stack whose guard page traps call_stack_exhausted, before max_call_depth when frames
// are large. So a tier may stop a deep call earlier than the other, but only by a stack trap,
// and having run no more than the other. Frames cannot fill either stack within a small depth
// limit, so there both must agree exactly. True when the outcomes differ only so.
bool StackDivergence(const Outcome& interp, const Outcome& native, uint32_t max_depth) {
  if (max_depth < 256) return false;
  if (IsStackTrap(interp) && IsStackTrap(native)) return true;
  if (IsStackTrap(native) && native.trap == TrapKind::kCallStackExhausted) {
    return native.instructions <= interp.instructions;
  }
  if (IsStackTrap(interp) && interp.trap == TrapKind::kValueStackExhausted) {
    return interp.instructions <= native.instructions;
  }
  return false;
}

std::string FormatValues(std::span<const WasmValue> values) {
  std::string text;
  for (const WasmValue& v : values) text += (text.empty() ? "" : ", ") + FormatValue(v);
  return "(" + text + ")";
}

std::string Describe(const Outcome& o) {
  if (!o.start.ok()) return "Start failed: " + o.start.ToString();
  std::string text =
      fmt::format("{} after {} instructions in {} runs, {} host calls", RunStateName(o.state),
                  o.instructions, o.runs, o.host_calls.size());
  if (o.state == RunState::kFinished) text += "; results " + FormatValues(o.results);
  if (o.state == RunState::kTrapped) text += "; " + o.trap_text;
  return text;
}

// The first difference between the two outcomes of one call, or "" when they agree.
std::string CompareOutcomes(const Outcome& a, const Outcome& b) {
  if (a.start.ok() != b.start.ok()) return "one Start failed";
  if (!a.start.ok()) return a.start.code() == b.start.code() ? "" : "Start errors differ";
  if (a.state != b.state) return "run states differ";
  if (a.state == RunState::kTrapped && a.trap != b.trap) return "trap kinds differ";
  if (a.instructions != b.instructions) return "instruction counts differ";
  if (!SameValues(a.results, b.results)) return "results differ";
  const auto [x, y] = std::mismatch(a.host_calls.begin(), a.host_calls.end(), b.host_calls.begin(),
                                    b.host_calls.end(), SameHostCall);
  if (x == a.host_calls.end() && y == b.host_calls.end()) return "";
  const size_t i = x - a.host_calls.begin();
  return fmt::format("host call {} differs: {} vs {}", i, FormatHostCall(a.host_calls, i),
                     FormatHostCall(b.host_calls, i));
}

// The first difference between the two instances' memory 0 and exported globals, or "".
std::string CompareState(Instance& a, Instance& b) {
  GuestMemory& ma = a.memory();
  GuestMemory& mb = b.memory();
  if (ma.size() != mb.size()) return fmt::format("memory sizes {} vs {}", ma.size(), mb.size());
  if (ma.size() > 0) {
    const uint32_t size = static_cast<uint32_t>(ma.size());
    auto va = ma.View(0, size);
    auto vb = mb.View(0, size);
    if (!va.ok() || !vb.ok()) return "memory not readable";
    // memcmp first: the fuzz build instruments std::mismatch's every byte (90% of the time).
    if (std::memcmp(va->data(), vb->data(), size) != 0) {
      auto [pa, pb] = std::mismatch(va->begin(), va->end(), vb->begin());
      return fmt::format("memory byte {} differs: {:#04x} vs {:#04x}", pa - va->begin(), *pa, *pb);
    }
  }
  for (const ExportInfo& e : a.module().exports()) {
    if (e.kind != ExternKind::kGlobal) continue;
    auto ga = a.GetGlobal(e.name);
    auto gb = b.GetGlobal(e.name);
    if (ga.ok() != gb.ok()) return fmt::format("global `{}` readable on one tier only", e.name);
    if (ga.ok() && !SameValue(*ga, *gb)) {
      return fmt::format("global `{}`: {} vs {}", e.name, FormatValue(*ga), FormatValue(*gb));
    }
  }
  return "";
}

// ---- Arguments -----------------------------------------------------------------------------

uint64_t SplitMix(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Deterministic arguments for `params`: edge values and small numbers, no NaN (a NaN argument
// would reach arithmetic that --denan does not guard).
std::vector<WasmValue> MakeArgs(std::span<const ValType> params, uint64_t seed) {
  static constexpr std::array<int64_t, 8> kInts = {0,          1,
                                                   -1,         7,
                                                   0x7fffffff, std::numeric_limits<int32_t>::min(),
                                                   65'536,     std::numeric_limits<int64_t>::min()};
  static constexpr std::array<double, 8> kFloats = {
      0.0, -0.0, 1.5, -2.0, 1e300, std::numeric_limits<double>::infinity(), 4294967296.0, 5e-324};
  std::vector<WasmValue> args;
  for (ValType type : params) {
    const uint64_t r = SplitMix(seed);
    const int64_t i = (r & 8) ? static_cast<int64_t>(r >> 40) - (1 << 23) : kInts[r & 7];
    const double f =
        (r & 8) ? static_cast<double>(static_cast<int32_t>(r >> 32)) / 64 : kFloats[r & 7];
    switch (type) {
      case ValType::kI32:
        args.emplace_back(static_cast<int32_t>(i));
        break;
      case ValType::kI64:
        args.emplace_back((r & 8) ? static_cast<int64_t>(r) : i);
        break;
      case ValType::kF32:
        args.emplace_back(static_cast<float>(f));
        break;
      default:
        args.emplace_back(f);
        break;
    }
  }
  return args;
}

// ---- Statistics ----------------------------------------------------------------------------

struct Stats {
  uint64_t inputs = 0;
  uint64_t compared = 0;          // modules instantiated on both tiers and compared
  uint64_t skipped_wasm_opt = 0;  // wasm-opt failed
  uint64_t skipped_load = 0;      // Module::FromBinary refused the module
  uint64_t skipped_instance = 0;  // both tiers refused to instantiate it
  uint64_t calls = 0;             // export calls compared
  uint64_t finished = 0, trapped = 0, exhausted = 0;
  std::array<uint64_t, 16> traps = {};  // by TrapKind
  uint64_t stack_divergences = 0;       // documented, see StackDivergence
};

Stats& stats() {
  static Stats s;
  return s;
}

void PrintStats() {
  const Stats& s = stats();
  std::string traps;
  for (size_t kind = 0; kind < s.traps.size(); ++kind) {
    if (s.traps[kind] == 0) continue;
    traps += fmt::format(", {} {}", TrapKindName(static_cast<TrapKind>(kind)), s.traps[kind]);
  }
  fmt::print(
      stderr,
      "tier_diff_fuzz: {} inputs, {} modules compared, skipped {} (wasm-opt {}, load {}, "
      "instantiate {}); {} calls: {} finished, {} out of budget, {} trapped{}; allowed: {} stack "
      "divergences\n",
      s.inputs, s.compared, s.skipped_wasm_opt + s.skipped_load + s.skipped_instance,
      s.skipped_wasm_opt, s.skipped_load, s.skipped_instance, s.calls, s.finished, s.exhausted,
      s.trapped, traps, s.stack_divergences);
}

// ---- Reporting -----------------------------------------------------------------------------

// Prints the mismatch with both outcomes, keeps the module, and aborts (libFuzzer then writes
// the input to its artifact directory).
[[noreturn]] void Mismatch(const std::string& what, const Config& config, std::string_view call,
                           std::span<const WasmValue> args, const Outcome* interp,
                           const Outcome* native, std::span<const uint8_t> module) {
  const std::filesystem::path kept = paths().dir / "mismatch.wasm";
  std::ofstream(kept, std::ios::binary)
      .write(reinterpret_cast<const char*>(module.data()),
             static_cast<std::streamsize>(module.size()));
  const char* sliced = config.suspend ? "both tiers" : config.slice_native ? "native" : "interp";
  fmt::print(stderr, "\ntier_diff_fuzz: MISMATCH: {}\n", what);
  fmt::print(stderr,
             "  call `{}`{} with a budget of {}, slices of {} on {}{}, max_call_depth {}{}\n", call,
             FormatValues(args), config.plan.budget, config.plan.slice, sliced,
             config.suspend ? ", host calls suspend" : "", config.max_depth,
             config.optimize ? ", module optimized by --fuzz-passes" : "");
  if (interp != nullptr) fmt::print(stderr, "  interp: {}\n", Describe(*interp));
  if (native != nullptr) fmt::print(stderr, "  native: {}\n", Describe(*native));
  fmt::print(stderr, "  module: {} (wasm2wat shows it)\n", kept.string());
  std::abort();
}

// ---- One module ----------------------------------------------------------------------------

struct Side {
  std::unique_ptr<Engine> engine;
  std::unique_ptr<Instance> instance;
  HostLog log;
};

// Calls `name` on both tiers; returns false when the module's comparison must end there (an
// allowed divergence: the instances' states no longer follow each other). Aborts on a
// mismatch.
bool CallBoth(Side& interp, Side& native, const Config& config, const ExportInfo& e,
              std::span<const WasmValue> args, std::span<const uint8_t> module) {
  const uint64_t budget = config.plan.budget;
  const uint64_t interp_slice = config.slice_native ? budget : config.plan.slice;
  const uint64_t native_slice = config.slice_native ? config.plan.slice : budget;
  const Outcome a = Call(*interp.instance, interp.log, e.name, args, budget, interp_slice);
  const Outcome b = Call(*native.instance, native.log, e.name, args, budget, native_slice);
  ++stats().calls;
  if (a.state == RunState::kFinished) ++stats().finished;
  if (a.state == RunState::kTrapped) {
    ++stats().trapped;
    ++stats().traps[static_cast<size_t>(a.trap) % stats().traps.size()];
  }
  if (a.state == RunState::kBudgetExhausted) ++stats().exhausted;
  const std::string differs = CompareOutcomes(a, b);
  if (!differs.empty()) {
    if (StackDivergence(a, b, config.max_depth)) {
      ++stats().stack_divergences;
      return false;
    }
    Mismatch(differs, config, e.name, args, &a, &b, module);
  }
  const std::string state = CompareState(*interp.instance, *native.instance);
  if (!state.empty()) Mismatch(state, config, e.name, args, &a, &b, module);
  return true;
}

void RunModule(std::span<const uint8_t> bytes, const Config& config) {
  auto module = Module::FromBinary(bytes, "ttf.wasm");
  if (!module.ok()) {
    ++stats().skipped_load;
    return;
  }
  EngineLimits limits;
  limits.max_call_depth = config.max_depth;
  // The native tier compiles at -O0 here: the cheapest level, with the same semantics.
  static const std::shared_ptr<native::CodeSource> code = [] {
    native::CodeSourceOptions options;
    options.compile.optimization = 0;
    options.max_loaded = 16;
    return *native::CodeSource::Create(options);  // cannot fail without a cache directory
  }();
  const auto engine = [&limits](Tier tier) {
    return std::make_unique<Engine>(
        FuzzingSupport(), limits,
        EngineOptions{.tier = tier == Tier::kNative ? TierChoice::kNative : TierChoice::kInterp,
                      .native_code = code});
  };
  Side interp{engine(Tier::kInterp), nullptr, {}};
  Side native{engine(Tier::kNative), nullptr, {}};
  auto a = interp.engine->Instantiate(*module);
  auto b = native.engine->Instantiate(*module);
  if (!a.ok() && !b.ok()) {
    ++stats().skipped_instance;
    return;
  }
  if (a.ok() != b.ok()) {
    Mismatch(fmt::format("instantiation: interp {}, native {}", a.status().ToString(),
                         b.status().ToString()),
             config, "(instantiate)", {}, nullptr, nullptr, bytes);
  }
  interp.instance = std::move(*a);
  native.instance = std::move(*b);
  interp.log.suspend = native.log.suspend = config.suspend;
  ++stats().compared;
  const std::string state = CompareState(*interp.instance, *native.instance);
  if (!state.empty()) Mismatch(state, config, "(instantiate)", {}, nullptr, nullptr, bytes);

  // ttf's hang limit: every loop iteration and call counts it down and traps at 0; binaryen's
  // harness restores it before each export call, so the calls run as binaryen meant them.
  const ExportInfo* hang_limit = (*module)->FindExport("hangLimitInitializer");
  size_t calls = 0;
  for (const ExportInfo& e : (*module)->exports()) {
    if (e.kind != ExternKind::kFunc || &e == hang_limit) continue;
    const FuncSignature& sig = e.signature;
    const auto is_number = [](ValType t) { return IsNumberType(t); };
    if (!std::all_of(sig.params.begin(), sig.params.end(), is_number) ||
        !std::all_of(sig.results.begin(), sig.results.end(), is_number)) {
      continue;
    }
    if (calls++ == kMaxCalls) break;
    if (hang_limit != nullptr && hang_limit->kind == ExternKind::kFunc &&
        !CallBoth(interp, native, config, *hang_limit, {}, bytes)) {
      return;
    }
    const std::vector<WasmValue> args = MakeArgs(sig.params, config.arg_seed * 131 + calls);
    if (!CallBoth(interp, native, config, e, args, bytes)) return;
  }
  // Reset restores both to the state right after instantiation.
  if (!interp.instance->Reset().ok() || !native.instance->Reset().ok()) std::abort();
  const std::string reset = CompareState(*interp.instance, *native.instance);
  if (!reset.empty()) Mismatch(reset, config, "(Reset)", {}, nullptr, nullptr, bytes);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  auto found = native::FindExecutable("wasm-opt", "/usr/bin:/usr/local/bin:/bin");
  if (!found.ok()) {
    std::fprintf(stderr, "tier_diff_fuzz: %s (binaryen; scripts/setup.sh installs it)\n",
                 found.status().ToString().c_str());
    std::exit(1);
  }
  paths().wasm_opt = *found;
  std::string dir = (std::filesystem::temp_directory_path() / "reef-tier-diff-XXXXXX").string();
  if (mkdtemp(dir.data()) == nullptr) {
    std::perror("tier_diff_fuzz: mkdtemp");
    std::exit(1);
  }
  paths().dir = dir;
  std::atexit([] {
    PrintStats();
    std::error_code ignored;
    std::filesystem::remove_all(paths().dir, ignored);
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < kConfigBytes || size > kMaxInputBytes) return 0;
  const std::span<const uint8_t> input(data, size);
  const Config config = ReadConfig(input);
  if (++stats().inputs % 100 == 0) PrintStats();
  auto module = TranslateToFuzz(input.subspan(kConfigBytes), config.optimize);
  if (!module) {
    ++stats().skipped_wasm_opt;
    return 0;
  }
  RunModule(*module, config);
  return 0;
}
