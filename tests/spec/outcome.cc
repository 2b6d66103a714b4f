#include "spec/outcome.h"

#include <fmt/format.h>

#include <array>
#include <tuple>
#include <utility>

namespace reef::spec {

namespace {

constexpr std::array<std::tuple<Refusal, std::string_view, std::string_view>, 7> kRefusals = {{
#define REEF_X(name, text, why) {Refusal::name, text, why},
    REEF_SPEC_REFUSALS(REEF_X)
#undef REEF_X
}};

}  // namespace

std::string_view RefusalName(Refusal refusal) {
  return std::get<1>(kRefusals[static_cast<size_t>(refusal)]);
}

std::string_view RefusalSummary(Refusal refusal) {
  return std::get<2>(kRefusals[static_cast<size_t>(refusal)]);
}

std::optional<Refusal> RefusalFromName(std::string_view name) {
  for (const auto& [refusal, text, why] : kRefusals) {
    if (text == name) return refusal;
  }
  return std::nullopt;
}

std::string_view VerdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::kPassed:
      return "passed";
    case Verdict::kFailed:
      return "failed";
    case Verdict::kRefused:
      return "refused";
  }
  return "?";
}

std::string Outcome::ToLine(std::string_view file) const {
  return fmt::format("{}:{} {} {} {}", file, line, CommandKindName(kind), VerdictName(verdict),
                     observed);
}

Outcome Passed(std::string observed) {
  Outcome outcome;
  outcome.observed = std::move(observed);
  return outcome;
}

Outcome Failed(std::string observed, std::string detail) {
  Outcome outcome;
  outcome.verdict = Verdict::kFailed;
  outcome.observed = std::move(observed);
  outcome.detail = std::move(detail);
  return outcome;
}

Outcome Refused(Refusal refusal, std::string detail) {
  Outcome outcome;
  outcome.verdict = Verdict::kRefused;
  outcome.refusal = refusal;
  outcome.observed = std::string(RefusalName(refusal));
  outcome.detail = std::move(detail);
  return outcome;
}

}  // namespace reef::spec
