// reef_spec_runner: runs the WebAssembly core spec suite (wast2json output) through Reef's
// engine API on one engine tier and prints, per file, the commands passed, failed and refused.
//
//   reef_spec_runner [--engine interp] [--verbose] [--outcomes] [--print-refusals]
//                    [--expected-refusals FILE] [--expected-failures FILE] JSON-or-DIR...
//
// Exit status: 0 when the run matches the expectations (without expectation files: when
// nothing failed), 1 when it does not, 2 for bad usage or unreadable input.
// tests/spec/README.md describes the suite; docs/engine.md "Conformance" the results.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "spec/expectations.h"
#include "spec/script_runner.h"
#include "spec/tier.h"

namespace reef::spec {
namespace {

struct Options {
  std::string engine = "interp";
  bool verbose = false;
  bool outcomes = false;
  bool print_refusals = false;
  std::filesystem::path expected_refusals;
  std::filesystem::path expected_failures;
  std::vector<std::filesystem::path> inputs;
};

// The command line, one row per option: name, whether it takes a value, help, and setter.
struct Flag {
  std::string_view name;
  bool takes_value;
  std::string_view help;
  void (*set)(Options&, std::string_view value);
};

constexpr std::array<Flag, 6> kFlags = {{
    {"--engine", true, "engine tier to run on (default interp)",
     [](Options& o, std::string_view v) { o.engine = v; }},
    {"--verbose", false, "print each failure and refusal with its line and reason",
     [](Options& o, std::string_view) { o.verbose = true; }},
    {"--outcomes", false,
     "print every command's outcome as one canonical line (diff two tiers' lines)",
     [](Options& o, std::string_view) { o.outcomes = true; }},
    {"--print-refusals", false, "print the refusal counts in expected_refusals.txt's format",
     [](Options& o, std::string_view) { o.print_refusals = true; }},
    {"--expected-refusals", true, "refusal counts per file and reason the run must match",
     [](Options& o, std::string_view v) { o.expected_refusals = v; }},
    {"--expected-failures", true, "known failures (file:line why) the run must match",
     [](Options& o, std::string_view v) { o.expected_failures = v; }},
}};

void PrintUsage() {
  std::fputs("usage: reef_spec_runner [options] JSON-or-DIR...\n", stderr);
  for (const Flag& f : kFlags) {
    std::fputs(
        fmt::format("  {:<22} {}\n", fmt::format("{}{}", f.name, f.takes_value ? " X" : ""), f.help)
            .c_str(),
        stderr);
  }
  std::string tiers;
  for (const Tier& t : Tiers()) tiers += fmt::format("\n  {:<22} {}", t.name, t.summary);
  std::fputs(fmt::format("engine tiers:{}\n", tiers).c_str(), stderr);
}

Result<Options> ParseArgs(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (!arg.starts_with("--")) {
      options.inputs.emplace_back(arg);
      continue;
    }
    auto flag =
        std::find_if(kFlags.begin(), kFlags.end(), [&](const Flag& f) { return f.name == arg; });
    if (flag == kFlags.end()) return Status::InvalidArgument(fmt::format("unknown option {}", arg));
    if (flag->takes_value && i + 1 == argc) {
      return Status::InvalidArgument(fmt::format("{} needs a value", arg));
    }
    flag->set(options, flag->takes_value ? std::string_view(argv[++i]) : std::string_view());
  }
  if (options.inputs.empty()) return Status::InvalidArgument("no JSON file or directory given");
  return options;
}

// The JSON files named by `inputs`: files as given, directories searched recursively, each
// directory's files sorted by path.
Result<std::vector<std::filesystem::path>> JsonFiles(
    const std::vector<std::filesystem::path>& inputs) {
  std::vector<std::filesystem::path> files;
  for (const auto& input : inputs) {
    std::error_code ec;
    if (!std::filesystem::is_directory(input, ec)) {
      files.push_back(input);
      continue;
    }
    std::vector<std::filesystem::path> found;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(input, ec)) {
      if (entry.path().extension() == ".json") found.push_back(entry.path());
    }
    if (ec)
      return Status::NotFound(fmt::format("cannot list {}: {}", input.string(), ec.message()));
    std::sort(found.begin(), found.end());
    files.insert(files.end(), found.begin(), found.end());
  }
  return files;
}

struct Counts {
  uint64_t passed = 0, failed = 0, refused = 0;
  void Add(const Outcome& o) {
    ++(o.verdict == Verdict::kPassed ? passed : o.verdict == Verdict::kFailed ? failed : refused);
  }
};

void PrintScript(const ScriptResult& result, const Options& options, Counts& total) {
  Counts counts;
  for (const Outcome& o : result.outcomes) counts.Add(o);
  total.passed += counts.passed;
  total.failed += counts.failed;
  total.refused += counts.refused;
  fmt::print("{:<32} {:>7} {:>7} {:>7}\n", result.file, counts.passed, counts.failed,
             counts.refused);
  for (const Outcome& o : result.outcomes) {
    if (options.outcomes) fmt::print("  {}\n", o.ToLine(result.file));
    if (options.verbose && o.verdict != Verdict::kPassed) {
      fmt::print("  {}:{} {} {}{}: {}\n", result.file, o.line, CommandKindName(o.kind),
                 VerdictName(o.verdict),
                 o.refusal ? " " + std::string(RefusalName(*o.refusal)) : "", o.detail);
    }
  }
}

int Run(const Options& options) {
  const Tier* tier = FindTier(options.engine);
  if (tier == nullptr) {
    std::string known;
    for (const Tier& t : Tiers()) known += (known.empty() ? "" : ", ") + std::string(t.name);
    fmt::print(stderr, "unknown engine tier `{}`; known tiers: {}\n", options.engine, known);
    return 2;
  }
  Result<Expectations> expectations =
      Expectations::Load(options.expected_refusals, options.expected_failures);
  Result<std::vector<std::filesystem::path>> files = JsonFiles(options.inputs);
  if (!expectations.ok() || !files.ok()) {
    fmt::print(stderr, "{}\n",
               (expectations.ok() ? files.status() : expectations.status()).ToString());
    return 2;
  }
  std::vector<ScriptResult> results;
  Counts total;
  fmt::print("{:<32} {:>7} {:>7} {:>7}   (engine {})\n", "file", "passed", "failed", "refused",
             tier->name);
  for (const auto& path : *files) {
    Result<WastScript> script = WastScript::Load(path);
    Result<std::vector<Outcome>> outcomes =
        script.ok() ? RunScript(*script, *tier) : Result<std::vector<Outcome>>(script.status());
    if (!outcomes.ok()) {
      fmt::print(stderr, "{}: {}\n", path.string(), outcomes.status().ToString());
      return 2;
    }
    results.push_back({script->source_name, std::move(outcomes).value()});
    PrintScript(results.back(), options, total);
  }
  fmt::print("{:<32} {:>7} {:>7} {:>7}\n", "total", total.passed, total.failed, total.refused);
  if (options.print_refusals) fmt::print("{}", FormatRefusalTable(results));
  if (options.expected_refusals.empty() && options.expected_failures.empty()) {
    return total.failed == 0 ? 0 : 1;
  }
  std::vector<std::string> problems = expectations->Compare(results);
  for (const std::string& p : problems) fmt::print("MISMATCH {}\n", p);
  fmt::print("{} known failures; expectations {}\n", expectations->failures.size(),
             problems.empty() ? "met" : "NOT met");
  return problems.empty() ? 0 : 1;
}

}  // namespace
}  // namespace reef::spec

int main(int argc, char** argv) {
  reef::Result<reef::spec::Options> options = reef::spec::ParseArgs(argc, argv);
  if (!options.ok()) {
    fmt::print(stderr, "{}\n", options.status().message());
    reef::spec::PrintUsage();
    return 2;
  }
  return reef::spec::Run(*options);
}
