// Test support for the program runtime tests: a ProgramRuntime of two reactors in a temporary
// directory, deploy bodies with the probe guest (tests/actors/probe.c), and waits with
// deadlines. Test-only; each fixture is used by one test thread.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "apps/program/program_runtime.h"
#include "core/base64.h"
#include "core/json.h"

namespace reef::apps::program::test_support {

using json = nlohmann::json;
using std::chrono::milliseconds;

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

inline const std::string& ProbeBase64() {
  static const std::string encoded =
      Base64Encode(ReadFile(std::string(REEF_GUEST_DIR) + "/probe.wasm"));
  return encoded;
}

// A deploy body with one module "probe" and the given units.
inline json Body(json units) {
  return {
      {"manifest", {{"program", "test"}, {"modules", {{"probe", "probe.wasm"}}}, {"units", units}}},
      {"modules", {{"probe", ProbeBase64()}}}};
}

inline Value Op(const std::string& text) {
  auto value = ValueFromJson(text, {});
  EXPECT_TRUE(value.ok()) << text;
  return *value;
}

class ProgramRuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("reef-program-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    Open();
  }
  void TearDown() override {
    runtime_.reset();
    std::filesystem::remove_all(dir_);
  }
  // (Re)opens the runtime on dir_, as a restart would; `durable`: ProgramRuntimeOptions'.
  void Open(bool durable = true) {
    runtime_.reset();
    ProgramRuntimeOptions options;
    options.data_dir = dir_;
    options.durable = durable;
    options.reactors = 2;
    options.eviction_interval = milliseconds(20);
    auto runtime = ProgramRuntime::Open(options);
    ASSERT_TRUE(runtime.ok()) << runtime.status().ToString();
    runtime_ = std::move(*runtime);
  }

  DeployReport Deploy(const json& units) {
    auto report = runtime_->Deploy(Body(units));
    EXPECT_TRUE(report.ok()) << report.status().ToString();
    return report.ok() ? *report : DeployReport{};
  }

  InvokeOutcome Invoke(const std::string& unit, const std::string& message,
                       InvokeMode mode = InvokeMode::kWait,
                       std::optional<uint32_t> instance = std::nullopt,
                       milliseconds timeout = milliseconds(10'000)) {
    InvokeRequest request;
    request.unit = unit;
    request.message = Op(message);
    request.mode = mode;
    request.instance = instance;
    request.timeout = timeout;
    return runtime_->Invoke(std::move(request));
  }

  std::vector<InstanceInfo> Instances(const std::string& unit) {
    auto list = runtime_->Instances(unit);
    EXPECT_TRUE(list.ok()) << list.status().ToString();
    return list.ok() ? *list : std::vector<InstanceInfo>{};
  }

  // Kills instance `id` of `unit` once its invocation runs (a kill of an idle instance is
  // refused: it has nothing to kill).
  Status KillRunning(const std::string& unit, uint32_t id) {
    Status killed = Status::Ok();
    for (int i = 0; i < 500; ++i) {
      killed = runtime_->Kill(unit, id);
      if (killed.code() != Code::kFailedPrecondition) return killed;
      std::this_thread::sleep_for(milliseconds(10));
    }
    return killed;
  }

  // Waits until `unit` has `count` instances.
  bool WaitForInstances(const std::string& unit, size_t count, milliseconds within) {
    auto until = std::chrono::steady_clock::now() + within;
    while (std::chrono::steady_clock::now() < until) {
      if (Instances(unit).size() == count) return true;
      std::this_thread::sleep_for(milliseconds(10));
    }
    return false;
  }

  // True once instance `index` (0-based) of `unit` exists and satisfies `pred`.
  template <typename Pred>
  bool WaitForInstance(const std::string& unit, size_t index, Pred pred, milliseconds within) {
    auto until = std::chrono::steady_clock::now() + within;
    while (std::chrono::steady_clock::now() < until) {
      auto instances = Instances(unit);
      if (instances.size() > index && pred(instances[index])) return true;
      std::this_thread::sleep_for(milliseconds(10));
    }
    return false;
  }

  // True once instance `index` (0-based) of `unit` has status `status`.
  bool WaitForStatus(const std::string& unit, size_t index, actor::ActorStatus status,
                     milliseconds within) {
    return WaitForInstance(
        unit, index, [status](const InstanceInfo& info) { return info.status == status; }, within);
  }

  std::filesystem::path dir_;
  std::unique_ptr<ProgramRuntime> runtime_;
};

inline const json kSingleton = {
    {"module", "probe"}, {"placement", "singleton"}, {"initial_state", 0}};

inline json Replicated(int limit, int inbox = 256, int idle_ms = 60'000, int initial = 0) {
  return {{"module", "probe"},       {"placement", "replicated"},   {"instance_limit", limit},
          {"inbox_capacity", inbox}, {"idle_eviction_ms", idle_ms}, {"initial_state", initial}};
}

}  // namespace reef::apps::program::test_support
