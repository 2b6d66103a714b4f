#include "store/semver.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace reef::store {
namespace {

bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}

bool IsIdentifierChar(char c) {
  return IsDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-';
}

bool IsNumeric(std::string_view id) {
  return !id.empty() && std::all_of(id.begin(), id.end(), IsDigit);
}

std::vector<std::string_view> SplitDots(std::string_view text) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    std::size_t dot = text.find('.', start);
    parts.push_back(text.substr(start, dot == std::string_view::npos ? dot : dot - start));
    if (dot == std::string_view::npos) return parts;
    start = dot + 1;
  }
}

Status Invalid(std::string_view text, std::string_view rule) {
  return Status::InvalidArgument(
      fmt::format("version '{}' is not Semantic Versioning 2.0.0 (semver.org): {}", text, rule));
}

// One of MAJOR, MINOR, PATCH: "0" or digits without a leading zero, at most 2^64 - 1.
Result<uint64_t> ParseCoreNumber(std::string_view text, std::string_view part,
                                 std::string_view which) {
  if (!IsNumeric(part)) {
    return Invalid(text, fmt::format("{} '{}' must be a non-empty run of digits 0-9", which, part));
  }
  if (part.size() > 1 && part[0] == '0') {
    return Invalid(text, fmt::format("{} '{}' must not have a leading zero", which, part));
  }
  uint64_t value = 0;
  for (char c : part) {
    auto digit = static_cast<uint64_t>(c - '0');
    if (value > (UINT64_MAX - digit) / 10) {
      return Invalid(text, fmt::format("{} '{}' exceeds 2^64 - 1", which, part));
    }
    value = value * 10 + digit;
  }
  return value;
}

// Dot-separated identifiers of a pre-release (`numeric_rule`: no leading zeros in numeric
// identifiers) or of build metadata (leading zeros allowed).
Status CheckIdentifiers(std::string_view text, std::string_view ids, std::string_view which,
                        bool numeric_rule) {
  for (std::string_view id : SplitDots(ids)) {
    if (id.empty()) return Invalid(text, fmt::format("{} has an empty identifier", which));
    if (!std::all_of(id.begin(), id.end(), IsIdentifierChar)) {
      return Invalid(text, fmt::format("{} identifier '{}' may hold only [0-9A-Za-z-]", which, id));
    }
    if (numeric_rule && IsNumeric(id) && id.size() > 1 && id[0] == '0') {
      return Invalid(
          text, fmt::format("numeric {} identifier '{}' must not have a leading zero", which, id));
    }
  }
  return Status::Ok();
}

// Numeric identifiers by value (any length), others in ASCII order; numeric below others.
int CompareIdentifier(std::string_view a, std::string_view b) {
  bool a_numeric = IsNumeric(a);
  bool b_numeric = IsNumeric(b);
  if (a_numeric != b_numeric) return a_numeric ? -1 : 1;
  if (a_numeric) {
    a.remove_prefix(std::min(a.find_first_not_of('0'), a.size() - 1));
    b.remove_prefix(std::min(b.find_first_not_of('0'), b.size() - 1));
    if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  }
  int c = a.compare(b);
  return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

int CompareNumber(uint64_t a, uint64_t b) {
  return a < b ? -1 : (a > b ? 1 : 0);
}

}  // namespace

std::string SemVer::ToString() const {
  std::string text = fmt::format("{}.{}.{}", major, minor, patch);
  if (!pre_release.empty()) text += "-" + pre_release;
  if (!build.empty()) text += "+" + build;
  return text;
}

Result<SemVer> ParseSemVer(std::string_view text) {
  if (text.empty()) return Invalid(text, "it is empty");
  SemVer version;
  std::string_view rest = text;
  if (std::size_t plus = rest.find('+'); plus != std::string_view::npos) {
    std::string_view build = rest.substr(plus + 1);
    if (build.empty()) return Invalid(text, "build metadata after '+' is empty");
    REEF_RETURN_IF_ERROR(CheckIdentifiers(text, build, "build", false));
    version.build = std::string(build);
    rest = rest.substr(0, plus);
  }
  // The core has no '-', so the first '-' starts the pre-release (which may hold more '-').
  if (std::size_t dash = rest.find('-'); dash != std::string_view::npos) {
    std::string_view pre = rest.substr(dash + 1);
    if (pre.empty()) return Invalid(text, "pre-release after '-' is empty");
    REEF_RETURN_IF_ERROR(CheckIdentifiers(text, pre, "pre-release", true));
    version.pre_release = std::string(pre);
    rest = rest.substr(0, dash);
  }
  std::vector<std::string_view> core = SplitDots(rest);
  if (core.size() != 3) {
    return Invalid(text, "it must start with MAJOR.MINOR.PATCH (three numbers, no 'v' prefix)");
  }
  REEF_ASSIGN_OR_RETURN(version.major, ParseCoreNumber(text, core[0], "MAJOR"));
  REEF_ASSIGN_OR_RETURN(version.minor, ParseCoreNumber(text, core[1], "MINOR"));
  REEF_ASSIGN_OR_RETURN(version.patch, ParseCoreNumber(text, core[2], "PATCH"));
  return version;
}

int CompareSemVer(const SemVer& a, const SemVer& b) {
  if (int c = CompareNumber(a.major, b.major)) return c;
  if (int c = CompareNumber(a.minor, b.minor)) return c;
  if (int c = CompareNumber(a.patch, b.patch)) return c;
  if (a.pre_release.empty() || b.pre_release.empty()) {
    // A release ranks above any of its pre-releases (§11.3).
    return CompareNumber(a.pre_release.empty() ? 1 : 0, b.pre_release.empty() ? 1 : 0);
  }
  std::vector<std::string_view> left = SplitDots(a.pre_release);
  std::vector<std::string_view> right = SplitDots(b.pre_release);
  for (std::size_t i = 0; i < left.size() && i < right.size(); ++i) {
    if (int c = CompareIdentifier(left[i], right[i])) return c;
  }
  return CompareNumber(left.size(), right.size());
}

}  // namespace reef::store
