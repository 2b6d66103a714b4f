#include "core/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <set>
#include <tuple>
#include <utility>

#include "core/mutex.h"

namespace reef {

namespace detail {

// One registered collector. Scrapes copy the shared_ptr out of the registry's map, so an
// entry outlives its unregistration until the scrapes holding it finish.
struct MetricsCollectorEntry {
  // Constant after construction.
  std::string name;
  MetricsCollector collect;

  Mutex mu;
  CondVar idle;                           // signalled when `running` drops to 0
  bool registered GUARDED_BY(mu) = true;  // false: no scrape starts `collect` again
  int running GUARDED_BY(mu) = 0;         // scrapes inside `collect` now
};

struct MetricsRegistryState {
  Mutex mu;
  std::map<std::string, std::shared_ptr<MetricsCollectorEntry>, std::less<>> collectors
      GUARDED_BY(mu);
};

}  // namespace detail

namespace {

bool IsMetricName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

// Label names may not hold ':', and names starting with "__" are Prometheus's own.
bool IsLabelName(std::string_view name) {
  return IsMetricName(name) && name.find(':') == std::string_view::npos && !name.starts_with("__");
}

// `text` with backslash and newline escaped, and double quote too when `quote` (label values).
void AppendEscaped(std::string& out, std::string_view text, bool quote) {
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && quote) {
      out += "\\\"";
    } else {
      out.push_back(c);
    }
  }
}

void AppendValue(std::string& out, const std::variant<uint64_t, double>& value) {
  if (const uint64_t* whole = std::get_if<uint64_t>(&value)) {
    fmt::format_to(std::back_inserter(out), "{}", *whole);
    return;
  }
  const double d = std::get<double>(value);
  if (std::isnan(d)) {
    out += "NaN";
  } else if (std::isinf(d)) {
    out += d > 0 ? "+Inf" : "-Inf";
  } else {
    fmt::format_to(std::back_inserter(out), "{}", d);
  }
}

bool LabelsLess(const MetricLabels& a, const MetricLabels& b) {
  return std::lexicographical_compare(
      a.begin(), a.end(), b.begin(), b.end(), [](const MetricLabel& x, const MetricLabel& y) {
        return std::tie(x.name, x.value) < std::tie(y.name, y.value);
      });
}

using LabelSets = std::set<MetricLabels, decltype(&LabelsLess)>;

// Checks one sample's labels; `seen` holds the canonical label sets of the family's earlier
// samples (label order does not make a series different).
Status CheckSample(const MetricFamily& family, const MetricSample& sample, LabelSets& seen) {
  MetricLabels sorted = sample.labels;
  std::sort(sorted.begin(), sorted.end(),
            [](const MetricLabel& a, const MetricLabel& b) { return a.name < b.name; });
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (!IsLabelName(sorted[i].name)) {
      return Status::Internal(fmt::format(
          "metric {}: \"{}\" is not a valid label name ([a-zA-Z_][a-zA-Z0-9_]*, not \"__...\")",
          family.name, sorted[i].name));
    }
    if (i > 0 && sorted[i].name == sorted[i - 1].name) {
      return Status::Internal(
          fmt::format("metric {}: a sample has label {} twice", family.name, sorted[i].name));
    }
  }
  // A histogram's _bucket, _sum and _count share labels: the suffix tells them apart (as a
  // label with an empty name, which no real label has).
  sorted.insert(sorted.begin(), MetricLabel{"", std::string(sample.suffix)});
  if (!seen.insert(std::move(sorted)).second) {
    return Status::Internal(
        fmt::format("metric {}: two samples have the same labels", family.name));
  }
  return Status::Ok();
}

}  // namespace

std::string_view MetricTypeName(MetricType type) {
  switch (type) {
#define REEF_X(name, text) \
  case MetricType::name:   \
    return text;
    REEF_METRIC_TYPES(REEF_X)
#undef REEF_X
  }
  return "untyped";
}

// ---------------------------------------------------------------------------------------------
// MetricFamilies and the text format

MetricFamily& MetricFamilies::Family(const MetricDesc& desc) {
  auto it = families_.find(desc.name);
  if (it == families_.end()) {
    MetricFamily family;
    family.name = std::string(desc.name);
    family.type = desc.type;
    family.help = std::string(desc.help);
    return families_.emplace(family.name, std::move(family)).first->second;
  }
  MetricFamily& family = it->second;
  if ((family.type != desc.type || family.help != desc.help) && conflict_.ok()) {
    conflict_ = Status::Internal(fmt::format(
        "metric {} is declared twice: as a {} (\"{}\") and as a {} (\"{}\")", family.name,
        MetricTypeName(family.type), family.help, MetricTypeName(desc.type), desc.help));
  }
  return family;
}

void MetricFamilies::Declare(const MetricDesc& desc) {
  Family(desc);
}

void MetricFamilies::Add(const MetricDesc& desc, MetricLabels labels, uint64_t value) {
  Family(desc).samples.push_back({std::move(labels), value, {}});
}

void MetricFamilies::Add(const MetricDesc& desc, MetricLabels labels, double value) {
  Family(desc).samples.push_back({std::move(labels), value, {}});
}

void MetricFamilies::AddHistogram(const MetricDesc& desc, const MetricLabels& labels,
                                  std::span<const double> bounds, std::span<const uint64_t> counts,
                                  double sum) {
  MetricFamily& family = Family(desc);
  uint64_t cumulative = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    cumulative += counts[i];
    MetricLabels bucket = labels;
    bucket.push_back({"le", i < bounds.size() ? fmt::format("{}", bounds[i]) : "+Inf"});
    family.samples.push_back({std::move(bucket), cumulative, "_bucket"});
  }
  family.samples.push_back({labels, sum, "_sum"});
  family.samples.push_back({labels, cumulative, "_count"});
}

Result<std::string> RenderPrometheusText(const MetricFamilies& families) {
  REEF_RETURN_IF_ERROR(families.conflict());
  std::string out;
  for (const auto& [name, family] : families.families()) {
    if (!IsMetricName(name)) {
      return Status::Internal(
          fmt::format("\"{}\" is not a valid metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)", name));
    }
    out += "# HELP ";
    out += name;
    out += ' ';
    AppendEscaped(out, family.help, /*quote=*/false);
    fmt::format_to(std::back_inserter(out), "\n# TYPE {} {}\n", name, MetricTypeName(family.type));
    LabelSets seen(&LabelsLess);
    for (const MetricSample& sample : family.samples) {
      REEF_RETURN_IF_ERROR(CheckSample(family, sample, seen));
      out += name;
      out += sample.suffix;
      if (!sample.labels.empty()) {
        out += '{';
        for (size_t i = 0; i < sample.labels.size(); ++i) {
          if (i > 0) out += ',';
          out += sample.labels[i].name;
          out += "=\"";
          AppendEscaped(out, sample.labels[i].value, /*quote=*/true);
          out += '"';
        }
        out += '}';
      }
      out += ' ';
      AppendValue(out, sample.value);
      out += '\n';
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// MetricsRegistration

MetricsRegistration::MetricsRegistration(std::weak_ptr<detail::MetricsRegistryState> registry,
                                         std::shared_ptr<detail::MetricsCollectorEntry> entry)
    : registry_(std::move(registry)), entry_(std::move(entry)) {}

MetricsRegistration::MetricsRegistration(MetricsRegistration&& other) noexcept
    : registry_(std::move(other.registry_)), entry_(std::move(other.entry_)) {}

MetricsRegistration& MetricsRegistration::operator=(MetricsRegistration&& other) noexcept {
  if (this != &other) {
    Reset();
    registry_ = std::move(other.registry_);
    entry_ = std::move(other.entry_);
  }
  return *this;
}

void MetricsRegistration::Reset() {
  if (!entry_) return;
  if (auto registry = registry_.lock()) {
    MutexLock lock(registry->mu);
    auto it = registry->collectors.find(entry_->name);
    if (it != registry->collectors.end() && it->second == entry_) registry->collectors.erase(it);
  }
  {
    MutexLock lock(entry_->mu);
    entry_->registered = false;
    while (entry_->running != 0) entry_->idle.Wait(entry_->mu);
  }
  entry_.reset();
  registry_.reset();
}

// ---------------------------------------------------------------------------------------------
// MetricsRegistry

MetricsRegistry::MetricsRegistry() : state_(std::make_shared<detail::MetricsRegistryState>()) {}

MetricsRegistry::~MetricsRegistry() = default;

Result<MetricsRegistration> MetricsRegistry::Register(std::string name,
                                                      MetricsCollector collector) {
  if (!collector) return Status::InvalidArgument("metrics collector " + name + " is empty");
  auto entry = std::make_shared<detail::MetricsCollectorEntry>();
  entry->name = name;
  entry->collect = std::move(collector);
  MutexLock lock(state_->mu);
  if (!state_->collectors.emplace(std::move(name), entry).second) {
    return Status::AlreadyExists(
        fmt::format("a metrics collector named {} is registered already", entry->name));
  }
  return MetricsRegistration(state_, std::move(entry));
}

MetricFamilies MetricsRegistry::Collect() const {
  std::vector<std::shared_ptr<detail::MetricsCollectorEntry>> entries;
  {
    MutexLock lock(state_->mu);
    for (const auto& [name, entry] : state_->collectors) entries.push_back(entry);
  }
  MetricFamilies out;
  for (const auto& entry : entries) {
    {
      MutexLock lock(entry->mu);
      if (!entry->registered) continue;
      ++entry->running;
    }
    entry->collect(out);
    MutexLock lock(entry->mu);
    if (--entry->running == 0) entry->idle.NotifyAll();
  }
  return out;
}

}  // namespace reef
