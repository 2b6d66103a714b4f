// Module statuses and the Prometheus text of /metrics (docs/http-api.md "GET /metrics").
// Part of ModuleRuntime (apps/detail/module_runtime_impl.h).
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sqlite3.h>

#include "apps/detail/module_runtime_impl.h"

namespace reef::apps {

using store::ModuleKind;

namespace {

std::string EscapeLabel(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '\\' || c == '"') out.push_back('\\');
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out.push_back(c);
  }
  return out;
}

}  // namespace

std::vector<ModuleStatus> ModuleRuntime::Statuses(std::optional<ModuleKind> kind) {
  std::vector<ModuleStatus> out;
  std::map<ModuleKey, ModuleStatus> by_key;
  {
    std::lock_guard lock(impl_->mu);
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
        std::lock_guard lock(impl_->mu);
        if (auto it = impl_->command_counters.find(m.name); it != impl_->command_counters.end()) {
          s.failures = it->second.failed;
          s.error = it->second.last_error;
          s.tier = it->second.tier;
        }
      } else {
        // Not running (it could not start, or was stopped): its counters still never go back.
        s.state = "stopped";
        std::lock_guard lock(impl_->mu);
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

std::string ModuleRuntime::Metrics() {
  std::vector<ModuleStatus> statuses = Statuses();
  std::string out;
  auto family = [&out](std::string_view name, std::string_view type, std::string_view help) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  };
  auto labels = [](const ModuleStatus& s) {
    return fmt::format("kind=\"{}\",name=\"{}\",version=\"{}\"", store::ModuleKindName(s.kind),
                       EscapeLabel(s.name), EscapeLabel(s.version));
  };
  // Lag against the module's own query: the last position matching its query, minus the
  // module's position (0 when caught up).
  std::map<std::string, uint64_t> query_heads;
  for (const ModuleStatus& s : statuses) {
    if (!s.query) continue;
    uint64_t head = 0;
    auto last = impl_->events.Read(*s.query, {.backwards = true, .limit = 1});
    if (last.ok() && !last->events.empty()) head = last->events.front().position;
    query_heads[labels(s)] = head;
  }
  family("reef_module_up", "gauge",
         "1 when the module is active and its runner is alive (an effect retrying a failed event "
         "is up: see reef_module_backoff_seconds), 0 when it failed or stopped.");
  for (const ModuleStatus& s : statuses) {
    out += fmt::format("reef_module_up{{{}}} {}\n", labels(s), s.up ? 1 : 0);
  }
  family("reef_module_position", "gauge",
         "Last event position the module has fully handled (projectors: committed; effects: "
         "the watermark).");
  for (const ModuleStatus& s : statuses) {
    if (s.kind == ModuleKind::kCommand) continue;
    out += fmt::format("reef_module_position{{{}}} {}\n", labels(s), s.position);
  }
  family("reef_module_query_head", "gauge",
         "Position of the last stored event matching the module's query.");
  for (const auto& [l, head] : query_heads) {
    out += fmt::format("reef_module_query_head{{{}}} {}\n", l, head);
  }
  family("reef_module_lag_positions", "gauge",
         "Positions between the module's position and the last event matching its query.");
  for (const ModuleStatus& s : statuses) {
    if (!s.query) continue;
    uint64_t head = query_heads[labels(s)];
    out += fmt::format("reef_module_lag_positions{{{}}} {}\n", labels(s),
                       head > s.position ? head - s.position : 0);
  }
  family("reef_module_failures_total", "counter",
         "Handler failures (projector stops, effect attempts that failed, command executions "
         "that failed) since the process started.");
  for (const ModuleStatus& s : statuses) {
    out += fmt::format("reef_module_failures_total{{{}}} {}\n", labels(s), s.failures);
  }
  family("reef_module_restarts_total", "counter",
         "Module starts after the first (activations, replays, env changes) since the process "
         "started.");
  for (const ModuleStatus& s : statuses) {
    out += fmt::format("reef_module_restarts_total{{{}}} {}\n", labels(s), s.restarts);
  }
  family("reef_module_backoff_seconds", "gauge",
         "Current retry delay of a failing effect event, 0 when none is failing.");
  for (const ModuleStatus& s : statuses) {
    if (s.kind != ModuleKind::kEffect) continue;
    out += fmt::format("reef_module_backoff_seconds{{{}}} {}\n", labels(s), s.backoff_seconds);
  }
  family("reef_command_executions_total", "counter",
         "Command executions by outcome since the process started.");
  {
    std::lock_guard lock(impl_->mu);
    for (const auto& [name, c] : impl_->command_counters) {
      for (auto [outcome, n] : {std::pair<const char*, uint64_t>{"appended", c.appended},
                                {"rejected", c.rejected},
                                {"failed", c.failed}}) {
        out += fmt::format("reef_command_executions_total{{name=\"{}\",outcome=\"{}\"}} {}\n",
                           EscapeLabel(name), outcome, n);
      }
    }
  }
  family("reef_command_conflicts_total", "counter",
         "Command attempts retried because the append condition failed.");
  {
    std::lock_guard lock(impl_->mu);
    for (const auto& [name, c] : impl_->command_counters) {
      out += fmt::format("reef_command_conflicts_total{{name=\"{}\"}} {}\n", EscapeLabel(name),
                         c.conflicts);
    }
  }
  family("reef_event_store_head", "gauge", "Position of the last event in the event store.");
  out += fmt::format("reef_event_store_head {}\n", impl_->events.Head());
  return out;
}

}  // namespace reef::apps
