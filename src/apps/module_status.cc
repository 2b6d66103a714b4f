// Module statuses and their series of GET /metrics (docs/http-api.md "GET /metrics").
// Part of ModuleRuntime (apps/detail/module_runtime_impl.h).
#include <spdlog/spdlog.h>
#include <sqlite3.h>

#include "apps/detail/module_runtime_impl.h"

namespace reef::apps {

using store::ModuleKind;

namespace {

// The series of GET /metrics that the modules and the event store add (docs/http-api.md
// "GET /metrics"). Module series are labelled kind, name, version.
constexpr MetricDesc kModuleUp{
    "reef_module_up", MetricType::kGauge,
    "1 when the module is active and its runner is alive (an effect retrying a failed event is "
    "up: see reef_module_backoff_seconds), 0 when it failed or stopped."};
constexpr MetricDesc kModulePosition{
    "reef_module_position", MetricType::kGauge,
    "Last event position the module has fully handled (projectors: committed; effects: the "
    "watermark)."};
constexpr MetricDesc kModuleQueryHead{
    "reef_module_query_head", MetricType::kGauge,
    "Position of the last stored event matching the module's query."};
constexpr MetricDesc kModuleLag{
    "reef_module_lag_positions", MetricType::kGauge,
    "Positions between the module's position and the last event matching its query."};
constexpr MetricDesc kModuleFailures{
    "reef_module_failures_total", MetricType::kCounter,
    "Handler failures (projector stops, effect attempts that failed, command executions that "
    "failed) since the process started."};
constexpr MetricDesc kModuleRestarts{
    "reef_module_restarts_total", MetricType::kCounter,
    "Module starts after the first (activations, replays, env changes) since the process "
    "started."};
constexpr MetricDesc kModuleBackoff{
    "reef_module_backoff_seconds", MetricType::kGauge,
    "Current retry delay of a failing effect event, 0 when none is failing."};
// Labelled name and outcome (appended, rejected, failed).
constexpr MetricDesc kCommandExecutions{"reef_command_executions_total", MetricType::kCounter,
                                        "Command executions by outcome since the process started."};
// Labelled name.
constexpr MetricDesc kCommandConflicts{
    "reef_command_conflicts_total", MetricType::kCounter,
    "Command attempts retried because the append condition failed."};
constexpr MetricDesc kEventStoreHead{"reef_event_store_head", MetricType::kGauge,
                                     "Position of the last event in the event store."};
// The PostgreSQL store's (declared only when the store is PostgreSQL).
constexpr MetricDesc kStoreConnections{"reef_event_store_connections", MetricType::kGauge,
                                       "PostgreSQL connections the event store holds open."};
constexpr MetricDesc kStoreConnectFailures{
    "reef_event_store_connect_failures_total", MetricType::kCounter,
    "Failed attempts to connect to PostgreSQL since the process started."};
// Labelled waited (yes, no).
constexpr MetricDesc kStoreBarrierRounds{
    "reef_event_store_barrier_rounds_total", MetricType::kCounter,
    "Safe-head rounds of the read barrier; waited=yes: rounds that gave up on an append "
    "holding its position for more than 50 ms."};
// Labelled kind and name: 1 while another node holds the module's lease and runs it.
constexpr MetricDesc kModuleStandby{
    "reef_module_standby", MetricType::kGauge,
    "1 while the effect waits in standby because another node runs it, else 0."};
// Labelled result (hit, miss).
constexpr MetricDesc kFoldCacheLookups{
    "reef_command_fold_cache_lookups_total", MetricType::kCounter,
    "Command executions that found a kept decision state (hit) or folded from the start (miss)."};
constexpr MetricDesc kFoldCacheBytes{"reef_command_fold_cache_bytes", MetricType::kGauge,
                                     "Bytes of decision states kept by the fold cache."};

// Declared on every scrape: their HELP and TYPE show before any module or command has a series.
constexpr MetricDesc kModuleMetrics[] = {
    kModuleUp,         kModulePosition, kModuleQueryHead,   kModuleLag,        kModuleFailures,
    kModuleRestarts,   kModuleBackoff,  kCommandExecutions, kCommandConflicts, kEventStoreHead,
    kFoldCacheLookups, kFoldCacheBytes, kModuleStandby};

}  // namespace

std::vector<ModuleStatus> ModuleRuntime::Statuses(std::optional<ModuleKind> kind) {
  std::vector<ModuleStatus> out;
  std::map<ModuleKey, ModuleStatus> by_key;
  {
    MutexLock lock(impl_->mu);
    for (const auto& [key, runner] : impl_->runners) {
      if (kind && key.first != *kind) continue;
      ModuleStatus s = runner->Snapshot();
      s.failures += impl_->carried_failures[key];
      by_key[key] = std::move(s);
    }
    for (const auto& [key, s] : impl_->switching) {
      if (kind && key.first != *kind) continue;
      by_key.try_emplace(key, s);
    }
  }
  auto active = impl_->store->ListActive();
  if (active.ok()) {
    for (const auto& m : *active) {
      if (kind && m.kind != *kind) continue;
      ModuleKey key{m.kind, m.name};
      if (by_key.count(key)) continue;
      ModuleStatus s;
      s.kind = m.kind;
      s.name = m.name;
      s.version = m.version;
      if (m.kind == ModuleKind::kCommand) {
        s.state = "active";
        s.up = true;
        MutexLock lock(impl_->mu);
        if (auto it = impl_->command_counters.find(m.name); it != impl_->command_counters.end()) {
          s.failures = it->second.failed;
          s.error = it->second.last_error;
          s.tier = it->second.tier;
        }
      } else {
        // Not running (it could not start, or was stopped): its counters still never go back.
        s.state = "stopped";
        MutexLock lock(impl_->mu);
        if (auto it = impl_->carried_failures.find(key); it != impl_->carried_failures.end()) {
          s.failures = it->second;
        }
        if (auto it = impl_->restarts.find(key); it != impl_->restarts.end()) {
          s.restarts = it->second;
        }
      }
      by_key[key] = std::move(s);
    }
  }
  for (auto& [key, s] : by_key) out.push_back(std::move(s));
  return out;
}

std::optional<ModuleStatus> ModuleRuntime::StatusOf(ModuleKind kind, std::string_view name) {
  for (ModuleStatus& s : Statuses(kind)) {
    if (s.name == name) return std::move(s);
  }
  return std::nullopt;
}

void ModuleRuntime::CollectMetrics(MetricFamilies& out) {
  std::vector<ModuleStatus> statuses = Statuses();
  for (const MetricDesc& desc : kModuleMetrics) out.Declare(desc);
  auto labels = [](const ModuleStatus& s) {
    return MetricLabels{{"kind", std::string(store::ModuleKindName(s.kind))},
                        {"name", s.name},
                        {"version", s.version}};
  };
  for (const ModuleStatus& s : statuses) {
    out.Add(kModuleUp, labels(s), uint64_t{s.up ? 1u : 0u});
    if (s.kind != ModuleKind::kCommand) out.Add(kModulePosition, labels(s), s.position);
    if (s.query) {
      // Lag against the module's own query: the last position matching its query, minus the
      // module's position (0 when caught up).
      uint64_t head = 0;
      auto last = impl_->events.Read(*s.query, {.backwards = true, .limit = 1});
      if (last.ok() && !last->events.empty()) head = last->events.front().position;
      out.Add(kModuleQueryHead, labels(s), head);
      out.Add(kModuleLag, labels(s), head > s.position ? head - s.position : 0);
    }
    out.Add(kModuleFailures, labels(s), s.failures);
    out.Add(kModuleRestarts, labels(s), s.restarts);
    if (s.kind == ModuleKind::kEffect) {
      out.Add(kModuleBackoff, labels(s), s.backoff_seconds);
      out.Add(kModuleStandby, labels(s), uint64_t{s.state == "standby"});
    }
  }
  {
    MutexLock lock(impl_->mu);
    for (const auto& [name, c] : impl_->command_counters) {
      for (auto [outcome, n] : {std::pair<const char*, uint64_t>{"appended", c.appended},
                                {"rejected", c.rejected},
                                {"failed", c.failed}}) {
        out.Add(kCommandExecutions, {{"name", name}, {"outcome", outcome}}, n);
      }
      out.Add(kCommandConflicts, {{"name", name}}, c.conflicts);
    }
  }
  out.Add(kEventStoreHead, {}, impl_->events.Head());
  if (events::EventStoreStats stats = impl_->events.Stats(); stats.backend == "postgresql") {
    out.Add(kStoreConnections, {}, stats.connections);
    out.Add(kStoreConnectFailures, {}, stats.connect_failures);
    out.Add(kStoreBarrierRounds, {{"waited", "yes"}}, stats.barrier_waits);
    out.Add(kStoreBarrierRounds, {{"waited", "no"}}, stats.barrier_rounds - stats.barrier_waits);
  }
  FoldCacheStats fold = FoldCache();
  out.Add(kFoldCacheLookups, {{"result", "hit"}}, fold.hits);
  out.Add(kFoldCacheLookups, {{"result", "miss"}}, fold.misses);
  out.Add(kFoldCacheBytes, {}, fold.bytes);
}

FoldCacheStats ModuleRuntime::FoldCache() {
  auto stats = impl_->fold_cache.stats();
  return {stats.hits, stats.misses, stats.entries, stats.bytes};
}

}  // namespace reef::apps
