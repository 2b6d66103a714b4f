#include "spec/expectations.h"

#include <fmt/format.h>

#include <charconv>
#include <fstream>
#include <set>
#include <sstream>

namespace reef::spec {

namespace {

using RefusalCounts = std::map<std::pair<std::string, Refusal>, uint64_t>;

// Calls `on_line(text, line_number)` for each line that is neither empty nor a comment.
template <typename OnLine>
Status ForEachLine(const std::filesystem::path& path, OnLine on_line) {
  if (path.empty()) return Status::Ok();
  std::ifstream in(path);
  if (!in) return Status::NotFound(fmt::format("cannot read {}", path.string()));
  std::string text;
  for (uint32_t number = 1; std::getline(in, text); ++number) {
    if (text.empty() || text.front() == '#') continue;
    Status status = on_line(text, number);
    if (!status.ok()) return status.WithContext(fmt::format("{}:{}", path.string(), number));
  }
  return Status::Ok();
}

Status ParseRefusalLine(const std::string& text, RefusalCounts& out) {
  std::istringstream fields(text);
  std::string file, reason, count_text;
  fields >> file >> reason >> count_text;
  std::optional<Refusal> refusal = RefusalFromName(reason);
  if (!refusal) return Status::InvalidArgument(fmt::format("unknown refusal reason `{}`", reason));
  uint64_t count = 0;
  auto [ptr, ec] = std::from_chars(count_text.data(), count_text.data() + count_text.size(), count);
  if (file.empty() || ec != std::errc() || ptr != count_text.data() + count_text.size()) {
    return Status::InvalidArgument("expected `<file> <reason> <count>`");
  }
  out[{file, *refusal}] = count;
  return Status::Ok();
}

RefusalCounts CountRefusals(const std::vector<ScriptResult>& results) {
  RefusalCounts counts;
  for (const ScriptResult& r : results) {
    for (const Outcome& o : r.outcomes) {
      if (o.refusal) ++counts[{r.file, *o.refusal}];
    }
  }
  return counts;
}

}  // namespace

Result<Expectations> Expectations::Load(const std::filesystem::path& refusals_path,
                                        const std::filesystem::path& failures_path) {
  Expectations e;
  REEF_RETURN_IF_ERROR(ForEachLine(refusals_path, [&](const std::string& text, uint32_t) {
    return ParseRefusalLine(text, e.refusals);
  }));
  REEF_RETURN_IF_ERROR(ForEachLine(failures_path, [&](const std::string& text, uint32_t) {
    size_t space = text.find(' ');
    if (space == std::string::npos || text.find(':') > space) {
      return Status::InvalidArgument("expected `<file>:<line> <why>`");
    }
    e.failures[text.substr(0, space)] = text.substr(space + 1);
    return Status::Ok();
  }));
  return e;
}

bool Expectations::IsKnownFailure(const std::string& file, uint32_t line) const {
  return failures.contains(fmt::format("{}:{}", file, line));
}

std::vector<std::string> Expectations::Compare(const std::vector<ScriptResult>& results) const {
  std::vector<std::string> problems;
  std::set<std::string> files, failed;
  for (const ScriptResult& r : results) {
    files.insert(r.file);
    for (const Outcome& o : r.outcomes) {
      if (o.verdict != Verdict::kFailed) continue;
      failed.insert(fmt::format("{}:{}", r.file, o.line));
      if (!IsKnownFailure(r.file, o.line)) {
        problems.push_back(fmt::format("{}:{}: unexpected failure of {}: {}", r.file, o.line,
                                       CommandKindName(o.kind), o.detail));
      }
    }
  }
  for (const auto& [where, why] : failures) {
    const std::string file = where.substr(0, where.find(':'));
    if (files.contains(file) && !failed.contains(where)) {
      problems.push_back(
          fmt::format("{}: listed in expected_failures.txt ({}) but did not fail; remove the line",
                      where, why));
    }
  }
  RefusalCounts actual = CountRefusals(results);
  std::set<std::pair<std::string, Refusal>> keys;
  for (const auto& [key, count] : actual) keys.insert(key);
  for (const auto& [key, count] : refusals) keys.insert(key);
  for (const auto& key : keys) {
    if (!files.contains(key.first)) continue;
    const uint64_t got = actual.contains(key) ? actual.at(key) : 0;
    const uint64_t want = refusals.contains(key) ? refusals.at(key) : 0;
    if (got != want) {
      problems.push_back(fmt::format("{}: {} refused {}, expected {}", key.first,
                                     RefusalName(key.second), got, want));
    }
  }
  return problems;
}

std::string FormatRefusalTable(const std::vector<ScriptResult>& results) {
  std::string out;
  for (const auto& [key, count] : CountRefusals(results)) {
    out += fmt::format("{} {} {}\n", key.first, RefusalName(key.second), count);
  }
  return out;
}

}  // namespace reef::spec
