// Metrics: the registry every subsystem adds its series to, and the Prometheus text that
// GET /metrics answers with (docs/http-api.md "GET /metrics").
//
// A subsystem declares each metric once, as a constexpr MetricDesc beside the code that counts
// it, and registers a collector: a function that adds the metric's current samples to a
// MetricFamilies. A scrape (MetricsRegistry::Collect) calls every registered collector;
// families of the same name merge into one, whichever collectors add to them.
// RenderPrometheusText writes text exposition format 0.0.4
// (https://prometheus.io/docs/instrumenting/exposition_formats/).
//
// Thread ownership: MetricsRegistry and MetricsRegistration are any thread (register,
// unregister and collect concurrently). A collector runs on the collecting thread, on several
// threads at once when scrapes overlap, so it synchronizes its own reads. MetricDesc,
// MetricFamilies and the sample types are plain values; the caller synchronizes.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/status.h"

namespace reef {

// The metric types Reef exposes, one row each: enumerator, name in `# TYPE` lines.
#define REEF_METRIC_TYPES(X) \
  X(kCounter, "counter")     \
  X(kGauge, "gauge")         \
  X(kHistogram, "histogram")

enum class MetricType : uint8_t {
#define REEF_X(name, text) name,
  REEF_METRIC_TYPES(REEF_X)
#undef REEF_X
};

// "counter", "gauge", "histogram".
std::string_view MetricTypeName(MetricType type);

// One metric's declaration. `name` matches [a-zA-Z_:][a-zA-Z0-9_:]* and starts with "reef_"
// (DESIGN.md); counters end in "_total". `help` is one line of plain text (a backslash or a
// newline in it is escaped when rendered).
struct MetricDesc {
  std::string_view name;
  MetricType type;
  std::string_view help;
};

// A label of a sample. `name` matches [a-zA-Z_][a-zA-Z0-9_]* and does not start with "__";
// `value` is any UTF-8 text (escaped when rendered).
struct MetricLabel {
  std::string name;
  std::string value;
};
using MetricLabels = std::vector<MetricLabel>;

// One sample: its labels in the order they are rendered, and its value (counters and most
// gauges are whole numbers; a double renders in its shortest exact form, NaN and ±Inf as
// Prometheus spells them).
struct MetricSample {
  MetricLabels labels;
  std::variant<uint64_t, double> value;
  // Appended to the family's name when rendered: a histogram's "_bucket", "_sum", "_count";
  // points at a string literal (AddHistogram's), never at a collector's own buffer.
  std::string_view suffix;
};

// A metric with every sample one scrape collected for it.
struct MetricFamily {
  std::string name;
  MetricType type = MetricType::kGauge;
  std::string help;
  std::vector<MetricSample> samples;  // in the order collectors added them
};

// What one scrape collects: families by name. Collectors only add.
class MetricFamilies {
 public:
  // Declares `desc`'s family: its HELP and TYPE lines are rendered even with no samples.
  // Declaring a name again with the same type and help is a no-op; with another type or help
  // it is a conflict that RenderPrometheusText reports (a metric is declared once).
  void Declare(const MetricDesc& desc);
  // Declares `desc`'s family and adds one sample to it.
  void Add(const MetricDesc& desc, MetricLabels labels, uint64_t value);
  void Add(const MetricDesc& desc, MetricLabels labels, double value);
  // Declares `desc`'s family (a kHistogram) and adds one histogram to it: a `_bucket` sample
  // per bound (label le, counting observations <= the bound) and le="+Inf", then `_sum` and
  // `_count`. `counts[i]` observations fell in bucket i alone (bounds[i-1], bounds[i]], the
  // last one past every bound. REQUIRES: counts.size() == bounds.size() + 1, bounds ascending.
  void AddHistogram(const MetricDesc& desc, const MetricLabels& labels,
                    std::span<const double> bounds, std::span<const uint64_t> counts, double sum);

  // The families, ordered by name.
  const std::map<std::string, MetricFamily, std::less<>>& families() const { return families_; }
  // The first conflicting declaration, or OK.
  const Status& conflict() const { return conflict_; }

 private:
  MetricFamily& Family(const MetricDesc& desc);

  std::map<std::string, MetricFamily, std::less<>> families_;
  Status conflict_;
};

// The Prometheus text (format 0.0.4; Content-Type "text/plain; version=0.0.4;
// charset=utf-8") of `families`: for each family in name order one HELP and one TYPE line,
// then its samples; label values escape backslash, double quote and newline, HELP text
// backslash and newline. Errors: Internal when a metric was declared twice differently, a
// metric or label name is not valid, a sample repeats a label name, or two samples of one
// family have the same label set (the message names the metric).
Result<std::string> RenderPrometheusText(const MetricFamilies& families);

// Adds a subsystem's current samples to the scrape. Called on the collecting thread; must not
// call the registry it is registered with.
using MetricsCollector = std::function<void(MetricFamilies&)>;

namespace detail {
struct MetricsCollectorEntry;
struct MetricsRegistryState;
}  // namespace detail

// Keeps a collector registered while it lives (MetricsRegistry::Register). Move-only.
class [[nodiscard]] MetricsRegistration {
 public:
  MetricsRegistration() = default;  // registers nothing
  // Made by MetricsRegistry::Register.
  MetricsRegistration(std::weak_ptr<detail::MetricsRegistryState> registry,
                      std::shared_ptr<detail::MetricsCollectorEntry> entry);
  MetricsRegistration(MetricsRegistration&& other) noexcept;
  MetricsRegistration& operator=(MetricsRegistration&& other) noexcept;
  MetricsRegistration(const MetricsRegistration&) = delete;
  MetricsRegistration& operator=(const MetricsRegistration&) = delete;
  ~MetricsRegistration() { Reset(); }

  // Unregisters the collector (idempotent): waits for the scrapes that are running it, and no
  // scrape calls it again. Safe after the registry is gone. REQUIRES: not called from within
  // the collector, nor while holding a lock the collector takes.
  void Reset();

 private:
  std::weak_ptr<detail::MetricsRegistryState> registry_;
  std::shared_ptr<detail::MetricsCollectorEntry> entry_;
};

class MetricsRegistry {
 public:
  MetricsRegistry();
  ~MetricsRegistry();
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;

  // Registers `collector` under `name`, unique in the registry (scrapes call collectors in
  // name order), until the returned registration is reset or destroyed. Errors: AlreadyExists
  // when `name` is registered, InvalidArgument for an empty `collector`.
  Result<MetricsRegistration> Register(std::string name, MetricsCollector collector);

  // Calls every registered collector once, in name order, and returns what they added.
  MetricFamilies Collect() const;

 private:
  std::shared_ptr<detail::MetricsRegistryState> state_;  // constant after construction
};

}  // namespace reef
