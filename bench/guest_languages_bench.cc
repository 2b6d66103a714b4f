// guest_languages_bench: the same bank command in C, AssemblyScript and Rust (issue 18), for the
// "Guest languages" table of `make bench` (docs/benchmarks.md). Measured, not a goal: the
// issue asks for the figures, to show what each language's SDK costs.
//
// For each language's deposit module (build/guests/bank_deposit{,_as,_rs}.wasm): its size in
// bytes, then one execution's guest calls on the interpreter as the runtime makes them, each
// from the memory right after instantiation (ModuleInstance::Reset):
// reef_command_init(input), reef_command_fold(state, input, page) over a page of --events
// events of the account (AccountOpened, then MoneyDeposited of 1 each), and
// reef_command_decide(state, input); the engine instructions of each call
// (ModuleInstance::last_call_instructions) and the median wall time of the three calls over
// --repeats runs (the instance made once). Every language's decision must equal the C one's
// (else exit 1).
//
//   guest_languages_bench [--events N] [--repeats N]
// Prints one line per language: `bench language=L bytes=B init=I fold=F decide=D total=T us=U`.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "apps/module_abi.h"
#include "bench_die.h"
#include "core/json.h"
#include "wasm/module.h"

namespace {

using reef::Value;
using reef::apps::ModuleInstance;
using reef::apps::ModuleKind;
using reef::bench::Check;
using reef::bench::Die;

Value Json(const std::string& text) {
  return Check(reef::ValueFromJson(text, reef::apps::ModuleValueLimits()), "a bench input");
}

std::string Text(const Value& value) {
  return reef::ValueToJson(value).dump();
}

// The account's history: AccountOpened, then events - 1 deposits of 1.
Value Page(int events) {
  std::string page = "[";
  for (int i = 1; i <= events; ++i) {
    bool opened = i == 1;
    page += fmt::format(
        R"({}{{"position": {}, "id": "00000000-0000-4000-8000-{:012d}", "type": "{}",
            "tags": ["account:a1"], "data": {}, "timestamp_ms": 1764547200000}})",
        i == 1 ? "" : ",", i, i, opened ? "AccountOpened" : "MoneyDeposited",
        opened ? R"({"account_id": "a1", "owner": "Ada"})"
               : R"({"account_id": "a1", "amount": 1})");
  }
  return Json(page + "]");
}

struct Run {
  uint64_t init = 0, fold = 0, decide = 0;
  std::string decision;
};

// One call from the clean image: its value and instructions.
Value CallClean(ModuleInstance& instance, std::string_view name,
                std::initializer_list<const Value*> inputs, uint64_t* instructions) {
  Check(instance.Reset(), "reset");
  Value value = Check(instance.CallForValue(name, inputs, reef::apps::kModuleCallBudget), name);
  *instructions = instance.last_call_instructions();
  return value;
}

Run Execute(ModuleInstance& instance, const Value& input, const Value& page) {
  Run run;
  Value init = CallClean(instance, "reef_command_init", {&input}, &run.init);
  if (!init.is_record() || init.as_record().count("state") == 0) {
    Die("init gave no state: {}", Text(init));
  }
  const Value* state = &init.as_record().at("state");
  Value folded = CallClean(instance, "reef_command_fold", {state, &input, &page}, &run.fold);
  Value decision = CallClean(instance, "reef_command_decide", {&folded, &input}, &run.decide);
  run.decision = Text(decision);
  return run;
}

}  // namespace

int main(int argc, char** argv) {
  int events = 100;
  int repeats = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--events") == 0) events = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--repeats") == 0) repeats = std::atoi(argv[i + 1]);
  }
  if (events < 1 || repeats < 1) Die("--events and --repeats take whole numbers from 1");
  const Value input = Json(R"({"account_id": "a1", "amount": 5})");
  const Value page = Page(events);
  std::string expected;
  for (auto [language, suffix] : {std::pair{"c", ""}, {"assemblyscript", "_as"}, {"rust", "_rs"}}) {
    std::string path = fmt::format("{}/bank_deposit{}.wasm", REEF_GUEST_DIR, suffix);
    auto module = Check(reef::wasm::Module::FromFile(path), path);
    auto instance = Check(ModuleInstance::Create(ModuleKind::kCommand, module, "deposit"), path);
    Run run = Execute(*instance, input, page);
    if (expected.empty()) expected = run.decision;
    if (run.decision != expected) {
      Die("{} decided {}, C decided {}", language, run.decision, expected);
    }
    std::vector<double> micros;
    for (int r = 0; r < repeats; ++r) {
      auto start = std::chrono::steady_clock::now();
      Execute(*instance, input, page);
      micros.push_back(
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
              .count());
    }
    std::sort(micros.begin(), micros.end());
    fmt::print("bench language={} bytes={} init={} fold={} decide={} total={} us={:.0f}\n",
               language, module->bytes().size(), run.init, run.fold, run.decide,
               run.init + run.fold + run.decide, micros[micros.size() / 2]);
  }
  return 0;
}
