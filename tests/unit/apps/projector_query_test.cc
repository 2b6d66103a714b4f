// Bounds of projector queries and statements (docs/http-api.md "Projector queries"): values
// too large to build, SQLite heap budgets, and a query interrupted when the server stops. Real
// test_projector guests and a real event store (module_runtime_test_support.h).
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <optional>
#include <string>
#include <thread>

#include "apps/module_runtime.h"
#include "module_runtime_test_support.h"

namespace reef::apps {
namespace {

using namespace reef::apps::testing;

TEST_F(ModuleRuntimeTest, AProjectorQueryCannotBuildAHugeValue) {
  Upload(ModuleKind::kProjector, "ticks", "1.0.0", "test_projector_v1");
  AppendTicks(1);
  ASSERT_TRUE(WaitFor([&] { return Position(ModuleKind::kProjector, "ticks") == 1; }));
  // One function call asking for 900 MB or more (a single step, which no deadline check
  // interrupts) fails at once at the value size limit instead of allocating...
  for (const char* sql : {"SELECT length(zeroblob(1000000000)) AS n",
                          "SELECT replace(hex(zeroblob(8000000)), '0', 'xxxx') AS s"}) {
    auto rows = runtime_->QueryProjector("ticks", sql, json::array());
    ASSERT_FALSE(rows.ok()) << sql;
    EXPECT_EQ(rows.status().code(), Code::kLimitExceeded) << sql;
    EXPECT_NE(rows.status().message().find("16777216 bytes"), std::string::npos)
        << rows.status().message();
  }
  // and printf/format, which loop over a huge width without allocating, are refused.
  auto printf_rows = runtime_->QueryProjector("ticks", "SELECT printf('%.*c', 900000000, 'x') AS s",
                                              json::array());
  EXPECT_EQ(printf_rows.status().code(), Code::kInvalidArgument);
  EXPECT_NE(printf_rows.status().message().find("printf() and format() are not available"),
            std::string::npos);
  // A value under the limit is still answered.
  auto ok =
      runtime_->QueryProjector("ticks", "SELECT length(zeroblob(1000000)) AS n", json::array());
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ((*ok)[0]["n"], 1000000);
}

TEST_F(ModuleRuntimeTest, AProjectorQueryRunningWhenTheServerStopsEndsAtOnce) {
  Upload(ModuleKind::kProjector, "ticks", "1.0.0", "test_projector_v1");
  AppendTicks(1);
  ASSERT_TRUE(WaitFor([&] { return Position(ModuleKind::kProjector, "ticks") == 1; }));
  // Given a query that would run for its whole time bound (5 s)
  std::promise<Result<json>> answer;
  auto answered = answer.get_future();
  runtime_->QueryProjectorAsync(
      "ticks",
      "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM r) SELECT count(*) AS n FROM r",
      json::array(), [&answer](Result<json> rows) { answer.set_value(std::move(rows)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  // when the shutdown begins (Node::Stop: before the server's graceful stop)
  runtime_->BeginStop();
  // then the query is interrupted, unavailable, instead of running out its time bound
  ASSERT_EQ(answered.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  Result<json> rows = answered.get();
  EXPECT_EQ(rows.status().code(), Code::kUnavailable) << rows.status().ToString();
  EXPECT_NE(rows.status().message().find("stopping"), std::string::npos);
  // and a new query is refused at once
  std::optional<Status> refused;
  runtime_->QueryProjectorAsync("ticks", "SELECT 1", json::array(),
                                [&refused](Result<json> r) { refused = r.status(); });
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->code(), Code::kUnavailable);
}

// One statement that builds no large value but grows a 2 GB aggregate (the review's query).
constexpr const char* kHeavyAggregateSql =
    "SELECT length(json_group_array(hex(zeroblob(5000)))) AS n FROM (WITH RECURSIVE r(i) AS "
    "(SELECT 1 UNION ALL SELECT i+1 FROM r LIMIT 200000) SELECT i FROM r)";

TEST_F(ModuleRuntimeTest, AProjectorQueryPastItsHeapBudgetIsRefusedNamingTheLimit) {
  Upload(ModuleKind::kProjector, "ticks", "1.0.0", "test_projector_v1");
  AppendTicks(1);
  ASSERT_TRUE(WaitFor([&] { return Position(ModuleKind::kProjector, "ticks") == 1; }));
  auto rows = runtime_->QueryProjector("ticks", kHeavyAggregateSql, json::array());
  ASSERT_FALSE(rows.ok());
  EXPECT_EQ(rows.status().code(), Code::kLimitExceeded);
  EXPECT_NE(rows.status().message().find("more than 67108864 bytes of memory"), std::string::npos)
      << rows.status().message();
  // A smaller aggregate is answered.
  auto ok = runtime_->QueryProjector(
      "ticks",
      "SELECT length(json_group_array(hex(zeroblob(500)))) AS n FROM (WITH RECURSIVE r(i) AS "
      "(SELECT 1 UNION ALL SELECT i+1 FROM r LIMIT 2000) SELECT i FROM r)",
      json::array());
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ((*ok)[0]["n"], 2000 * 1003 + 1);
}

TEST_F(ModuleRuntimeTest, AProjectorStatementPastItsHeapBudgetFailsTheProjectorNamingTheLimit) {
  Upload(ModuleKind::kProjector, "ticks", "1.0.0", "test_projector_v1");
  AppendTicks(2);
  ASSERT_TRUE(events_
                  ->Append({MakeEvent("Meddle", {}, json{{"sql", kHeavyAggregateSql}}.dump())},
                           std::nullopt)
                  .ok());
  ASSERT_TRUE(WaitFor([&] {
    auto s = runtime_->StatusOf(ModuleKind::kProjector, "ticks");
    return s && s->state == "failed";
  }));
  auto status = runtime_->StatusOf(ModuleKind::kProjector, "ticks");
  EXPECT_EQ(status->position, 2u);
  EXPECT_NE(status->error.find("more than 67108864 bytes of memory"), std::string::npos)
      << status->error;
  EXPECT_EQ(Ticks().size(), 2u);
}

}  // namespace
}  // namespace reef::apps
