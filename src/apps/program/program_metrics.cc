// The series of the program, its units and the reactors in GET /metrics (docs/http-api.md
// "Unit metrics"). Part of ProgramRuntime (program_runtime.h); reads only its public views.
#include <string>
#include <utility>
#include <vector>

#include "apps/program/program_runtime.h"

namespace reef::apps::program {

void ProgramRuntime::CollectMetrics(MetricFamilies& out) {
  static constexpr MetricDesc kGeneration{
      "reef_program_generation", MetricType::kGauge,
      "Generation of the deployed program (0 before the first deploy)."};
  // Labelled unit.
  static constexpr struct {
    MetricDesc desc;
    uint64_t UnitInfo::*field;
  } kUnitSeries[] = {
      {{"reef_unit_instances", MetricType::kGauge, "Live instances of the unit."},
       &UnitInfo::instances},
      {{"reef_unit_invocations_total", MetricType::kCounter,
        "Invocations accepted into an inbox since the unit's code was deployed."},
       &UnitInfo::invocations},
      {{"reef_unit_rejected_total", MetricType::kCounter,
        "Invocations refused for lack of inbox room (429 or 503) since the unit's code was "
        "deployed."},
       &UnitInfo::rejected},
      {{"reef_unit_poisoned", MetricType::kGauge,
        "Poisonings (failed or killed invocations) of the live instances."},
       &UnitInfo::poisoned},
      {{"reef_unit_evicted_total", MetricType::kCounter,
        "Instances removed for idleness since the unit's code was deployed."},
       &UnitInfo::evicted},
  };
  // Labelled reactor.
  static constexpr MetricDesc kReactorUp{"reef_reactor_up", MetricType::kGauge,
                                         "1 while the reactor takes new unit instances, else 0."};
  static constexpr MetricDesc kReactorInstances{"reef_reactor_instances", MetricType::kGauge,
                                                "Unit instances hosted by the reactor."};
  static constexpr MetricDesc kReactorTasksWaiting{
      "reef_reactor_tasks_waiting", MetricType::kGauge,
      "Host tasks (command steps, projector and effect guest calls, their timers) waiting to "
      "run on the reactor."};
  static constexpr MetricDesc kReactorTasksRun{"reef_reactor_tasks_run_total", MetricType::kCounter,
                                               "Host tasks run on the reactor since the start."};
  auto current = Current();
  out.Add(kGeneration, {}, current ? current->generation : uint64_t{0});
  std::vector<UnitInfo> units = Units();
  for (const auto& series : kUnitSeries) {
    out.Declare(series.desc);
    for (const UnitInfo& unit : units) {
      out.Add(series.desc, {{"unit", unit.spec.name}}, unit.*series.field);
    }
  }
  out.Declare(kReactorUp);
  out.Declare(kReactorInstances);
  out.Declare(kReactorTasksWaiting);
  out.Declare(kReactorTasksRun);
  for (const actor::ReactorInfo& r : Reactors()) {
    MetricLabels labels{{"reactor", std::to_string(r.id)}};
    out.Add(kReactorUp, labels, uint64_t{r.liveness == actor::ReactorLiveness::kUp ? 1u : 0u});
    out.Add(kReactorInstances, labels, r.actors);
    out.Add(kReactorTasksWaiting, labels, r.tasks_waiting);
    out.Add(kReactorTasksRun, std::move(labels), r.tasks_run);
  }
}

}  // namespace reef::apps::program
