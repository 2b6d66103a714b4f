// The program runtime's series of GET /metrics (docs/http-api.md "Unit metrics"), rendered as
// /metrics renders them: one series per unit and per reactor.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "apps/program/program_runtime.h"
#include "core/base64.h"
#include "core/json.h"

namespace reef::apps::program {
namespace {

std::string RenderedProgramMetrics(ProgramRuntime& runtime) {
  MetricFamilies families;
  runtime.CollectMetrics(families);
  Result<std::string> text = RenderPrometheusText(families);
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  return text.ok() ? *text : std::string();
}

TEST(ProgramMetricsTest, EachUnitAndEachReactorHasOneSeriesPerMetric) {
  // Given a runtime of two reactors without a program.
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("reef-program-metrics-test-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  ProgramRuntimeOptions options;
  options.data_dir = dir;
  options.reactors = 2;
  auto runtime = ProgramRuntime::Open(options);
  ASSERT_TRUE(runtime.ok()) << runtime.status().ToString();
  std::string text = RenderedProgramMetrics(**runtime);
  EXPECT_NE(text.find("\nreef_program_generation 0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE reef_unit_invocations_total counter\n# HELP"), std::string::npos)
      << text;  // declared, no unit yet

  // When a program with one unit is deployed and the unit invoked once.
  std::ifstream in(std::string(REEF_GUEST_DIR) + "/probe.wasm", std::ios::binary);
  std::stringstream probe;
  probe << in.rdbuf();
  nlohmann::json body = {
      {"manifest",
       {{"program", "metrics"},
        {"modules", {{"probe", "probe.wasm"}}},
        {"units",
         {{"counter", {{"module", "probe"}, {"placement", "singleton"}, {"initial_state", 0}}}}}}},
      {"modules", {{"probe", Base64Encode(probe.str())}}}};
  ASSERT_TRUE((*runtime)->Deploy(body).ok());
  InvokeRequest request;
  request.unit = "counter";
  request.message = *ValueFromJson(R"({"op":"add","value":1})", {});
  request.timeout = std::chrono::seconds(10);
  ASSERT_EQ((*runtime)->Invoke(std::move(request)).failure, InvokeFailure::kNone);

  // Then the unit and both reactors have their series.
  text = RenderedProgramMetrics(**runtime);
  for (const char* line :
       {"\nreef_program_generation 1\n", "\nreef_unit_instances{unit=\"counter\"} 1\n",
        "\nreef_unit_invocations_total{unit=\"counter\"} 1\n",
        "\nreef_unit_rejected_total{unit=\"counter\"} 0\n",
        "\nreef_unit_poisoned{unit=\"counter\"} 0\n",
        "\nreef_unit_evicted_total{unit=\"counter\"} 0\n", "\nreef_reactor_up{reactor=\"0\"} 1\n",
        "\nreef_reactor_up{reactor=\"1\"} 1\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << " in\n" << text;
  }
  runtime->reset();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace reef::apps::program
