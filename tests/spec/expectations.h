// Expectations: what a suite run must match to pass — the checked-in count of refused
// commands per file and reason (expected_refusals.txt) and the known engine failures
// (expected_failures.txt, each with its reason).
//
// A run passes when every failure is a known one, every known one still fails, and every
// file's refusals per reason equal the table. So a tier that starts refusing something new,
// or fixes a known failure, changes the test's result until the files are updated.
//
// File formats (`#` starts a comment line):
//   expected_refusals.txt   <file> <reason> <count>       linking.wast non_function_import 40
//   expected_failures.txt   <file>:<line> <why, free text>
//
// Thread ownership: plain values; any thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "spec/outcome.h"

namespace reef::spec {

// One script's outcomes.
struct ScriptResult {
  std::string file;  // "i32.wast"
  std::vector<Outcome> outcomes;
};

struct Expectations {
  std::map<std::pair<std::string, Refusal>, uint64_t> refusals;  // (file, reason) -> count
  std::map<std::string, std::string> failures;                   // "file:line" -> why

  // Reads either file; an empty path reads nothing. Errors: NotFound for an unreadable file;
  // InvalidArgument naming the line that is not of the format, or an unknown reason.
  static Result<Expectations> Load(const std::filesystem::path& refusals_path,
                                   const std::filesystem::path& failures_path);

  // True when the failure at `file`:`line` is a known one.
  bool IsKnownFailure(const std::string& file, uint32_t line) const;

  // Every difference between `results` and these expectations, one line each ("i32.wast:12:
  // unexpected failure ...", "linking.wast: non_function_import refused 41, expected 40");
  // empty when the run matches. Files absent from `results` are not checked.
  std::vector<std::string> Compare(const std::vector<ScriptResult>& results) const;
};

// `results`' refusals in expected_refusals.txt's format, for regenerating the table.
std::string FormatRefusalTable(const std::vector<ScriptResult>& results);

}  // namespace reef::spec
