// SemVer: module version numbers, parsed and ordered exactly as Semantic Versioning 2.0.0
// (semver.org) says. Module versions in the module store (spec 000, "Module lifecycle": "version
// (from Cargo.toml)") are SemVer texts; a module's versions are listed in precedence order.
//
// Thread ownership: plain values and pure functions; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace reef::store {

// One parsed version "MAJOR.MINOR.PATCH[-PRE_RELEASE][+BUILD]".
struct SemVer {
  uint64_t major = 0;
  uint64_t minor = 0;
  uint64_t patch = 0;
  std::string pre_release;  // dot-separated identifiers without the '-'; empty = a release
  std::string build;        // dot-separated identifiers without the '+'; empty = none

  // The canonical text; for every ParseSemVer(t) that succeeds, ToString() == t.
  std::string ToString() const;
};

// Parses `text` under the SemVer 2.0.0 grammar (semver.org, "Backus-Naur Form Grammar"):
// three numeric identifiers without leading zeros (each at most 2^64 - 1), an optional
// pre-release of non-empty [0-9A-Za-z-] identifiers whose numeric ones have no leading zeros,
// an optional build of non-empty [0-9A-Za-z-] identifiers. No leading 'v', no whitespace.
// Errors: InvalidArgument naming the rule `text` breaks.
Result<SemVer> ParseSemVer(std::string_view text);

// Precedence of `a` against `b` (semver.org §11): negative when a < b, 0 when equal, positive
// when a > b. MAJOR, MINOR, PATCH compare numerically; a pre-release ranks below its release;
// pre-release identifiers compare left to right (numeric ones numerically and below
// alphanumeric ones, alphanumeric ones in ASCII order; more identifiers rank higher when all
// before are equal). Build metadata is ignored, so "1.0.0+a" and "1.0.0+b" compare equal.
int CompareSemVer(const SemVer& a, const SemVer& b);

}  // namespace reef::store
