#include "wasm/tier.h"

#include <array>

namespace reef::wasm {

namespace {

struct TierRow {
  Tier tier;
  std::string_view name;
  std::string_view summary;
};

constexpr std::array kTiers = {
#define REEF_X(name, text, summary) TierRow{Tier::name, text, summary},
    REEF_ENGINE_TIERS(REEF_X)
#undef REEF_X
};

struct ChoiceRow {
  TierChoice choice;
  std::string_view name;
  std::string_view summary;
};

constexpr std::array kChoices = {
#define REEF_X(name, text, summary) ChoiceRow{TierChoice::name, text, summary},
    REEF_TIER_CHOICES(REEF_X)
#undef REEF_X
};

}  // namespace

std::string_view TierName(Tier tier) {
  return kTiers[static_cast<size_t>(tier)].name;
}

std::string_view TierSummary(Tier tier) {
  return kTiers[static_cast<size_t>(tier)].summary;
}

std::optional<Tier> ParseTier(std::string_view name) {
  for (const TierRow& row : kTiers) {
    if (row.name == name) return row.tier;
  }
  return std::nullopt;
}

std::string_view TierChoiceName(TierChoice choice) {
  return kChoices[static_cast<size_t>(choice)].name;
}

std::string_view TierChoiceSummary(TierChoice choice) {
  return kChoices[static_cast<size_t>(choice)].summary;
}

std::optional<TierChoice> ParseTierChoice(std::string_view name) {
  for (const ChoiceRow& row : kChoices) {
    if (row.name == name) return row.choice;
  }
  return std::nullopt;
}

}  // namespace reef::wasm
