// The metrics registry and its Prometheus text (core/metrics.h): text format 0.0.4 as
// https://prometheus.io/docs/instrumenting/exposition_formats/ defines it, and the lifetime
// of registered collectors.
#include "core/metrics.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace reef {
namespace {

constexpr MetricDesc kRequests{"reef_test_requests_total", MetricType::kCounter,
                               "Requests served."};
constexpr MetricDesc kQueue{"reef_test_queue", MetricType::kGauge, "Items waiting."};

std::string Render(const MetricFamilies& families) {
  Result<std::string> text = RenderPrometheusText(families);
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  return text.ok() ? *text : std::string();
}

// The message of the error RenderPrometheusText returns ("" when it succeeds).
std::string RenderError(const MetricFamilies& families) {
  Result<std::string> text = RenderPrometheusText(families);
  if (text.ok()) return "";
  EXPECT_EQ(text.status().code(), Code::kInternal);
  return text.status().message();
}

size_t CountOccurrences(std::string_view text, std::string_view part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string_view::npos; at = text.find(part, at + 1)) {
    ++n;
  }
  return n;
}

// ---- Rendering -------------------------------------------------------------------------------

TEST(MetricsTextTest, FamiliesRenderInNameOrderWithHelpTypeThenSamples) {
  // Given samples of two families, added with the later name first.
  MetricFamilies families;
  families.Add(kRequests, {{"route", "/a"}, {"code", "200"}}, uint64_t{7});
  families.Add(kQueue, {}, uint64_t{3});
  families.Add(kRequests, {{"route", "/b"}, {"code", "500"}}, uint64_t{1});

  // Then each family renders once, by name, its samples in the order added, labels as given.
  EXPECT_EQ(Render(families),
            "# HELP reef_test_queue Items waiting.\n"
            "# TYPE reef_test_queue gauge\n"
            "reef_test_queue 3\n"
            "# HELP reef_test_requests_total Requests served.\n"
            "# TYPE reef_test_requests_total counter\n"
            "reef_test_requests_total{route=\"/a\",code=\"200\"} 7\n"
            "reef_test_requests_total{route=\"/b\",code=\"500\"} 1\n");
}

TEST(MetricsTextTest, ADeclaredFamilyWithoutSamplesHasItsHelpAndType) {
  MetricFamilies families;
  families.Declare(kQueue);
  EXPECT_EQ(Render(families),
            "# HELP reef_test_queue Items waiting.\n# TYPE reef_test_queue gauge\n");
}

TEST(MetricsTextTest, LabelValuesEscapeBackslashDoubleQuoteAndNewline) {
  MetricFamilies families;
  families.Add(kQueue, {{"name", "a\\b\"c\nd"}}, uint64_t{1});
  EXPECT_NE(Render(families).find("reef_test_queue{name=\"a\\\\b\\\"c\\nd\"} 1\n"),
            std::string::npos)
      << Render(families);
}

TEST(MetricsTextTest, HelpEscapesBackslashAndNewlineButNotDoubleQuote) {
  constexpr MetricDesc kOdd{"reef_test_odd", MetricType::kGauge, "a \"b\" c\\d\ne"};
  MetricFamilies families;
  families.Declare(kOdd);
  EXPECT_EQ(Render(families),
            "# HELP reef_test_odd a \"b\" c\\\\d\\ne\n# TYPE reef_test_odd gauge\n");
}

TEST(MetricsTextTest, DoublesRenderShortestAndSpecialValuesAsPrometheusSpellsThem) {
  MetricFamilies families;
  families.Add(kQueue, {{"v", "quarter"}}, 0.25);
  families.Add(kQueue, {{"v", "two"}}, 2.0);
  families.Add(kQueue, {{"v", "nan"}}, std::numeric_limits<double>::quiet_NaN());
  families.Add(kQueue, {{"v", "inf"}}, std::numeric_limits<double>::infinity());
  families.Add(kQueue, {{"v", "-inf"}}, -std::numeric_limits<double>::infinity());
  families.Add(kQueue, {{"v", "max"}}, std::numeric_limits<uint64_t>::max());
  const std::string text = Render(families);
  for (const char* line :
       {"{v=\"quarter\"} 0.25\n", "{v=\"two\"} 2\n", "{v=\"nan\"} NaN\n", "{v=\"inf\"} +Inf\n",
        "{v=\"-inf\"} -Inf\n", "{v=\"max\"} 18446744073709551615\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << " in\n" << text;
  }
}

TEST(MetricsTextTest, InvalidMetricNamesAreRefused) {
  for (const char* name : {"", "1reef", "reef-test", "reef test", "reef_té"}) {
    MetricFamilies families;
    families.Declare({name, MetricType::kGauge, "x"});
    EXPECT_NE(RenderError(families).find("not a valid metric name"), std::string::npos) << name;
  }
  MetricFamilies colons;
  colons.Declare({"reef:test_ratio", MetricType::kGauge, "recording rules use colons"});
  EXPECT_EQ(RenderError(colons), "");
}

TEST(MetricsTextTest, InvalidLabelNamesAreRefused) {
  for (const char* name : {"", "1a", "a-b", "a:b", "__reserved"}) {
    MetricFamilies families;
    families.Add(kQueue, {{name, "v"}}, uint64_t{1});
    EXPECT_NE(RenderError(families).find("not a valid label name"), std::string::npos) << name;
  }
}

TEST(MetricsTextTest, ASampleThatRepeatsALabelNameIsRefused) {
  MetricFamilies families;
  families.Add(kQueue, {{"unit", "a"}, {"unit", "b"}}, uint64_t{1});
  EXPECT_NE(RenderError(families).find("label unit twice"), std::string::npos);
}

TEST(MetricsTextTest, TwoSamplesWithTheSameLabelSetAreRefusedInAnyLabelOrder) {
  MetricFamilies families;
  families.Add(kQueue, {{"a", "1"}, {"b", "2"}}, uint64_t{1});
  families.Add(kQueue, {{"b", "2"}, {"a", "1"}}, uint64_t{2});
  EXPECT_NE(RenderError(families).find("reef_test_queue: two samples have the same labels"),
            std::string::npos);
}

TEST(MetricsTextTest, AMetricDeclaredTwiceDifferentlyIsRefused) {
  MetricFamilies families;
  families.Add(kQueue, {}, uint64_t{1});
  families.Declare({"reef_test_queue", MetricType::kCounter, "Items waiting."});
  EXPECT_NE(RenderError(families).find("reef_test_queue is declared twice: as a gauge"),
            std::string::npos);

  MetricFamilies other_help;
  other_help.Declare(kQueue);
  other_help.Declare({"reef_test_queue", MetricType::kGauge, "Something else."});
  EXPECT_NE(RenderError(other_help).find("declared twice"), std::string::npos);
}

// ---- The registry ----------------------------------------------------------------------------

TEST(MetricsRegistryTest, TwoCollectorsAddingToOneFamilyShareOneHelpAndTypeLine) {
  // Given two collectors, registered in reverse name order, adding to the same metric.
  MetricsRegistry registry;
  auto b = registry.Register("b", [](MetricFamilies& out) {
    out.Add(kRequests, {{"from", "b"}}, uint64_t{2});
  });
  auto a = registry.Register("a", [](MetricFamilies& out) {
    out.Add(kRequests, {{"from", "a"}}, uint64_t{1});
  });
  ASSERT_TRUE(a.ok() && b.ok());

  // When the registry is scraped, then the family has one HELP and one TYPE line, and the
  // samples follow the collectors' name order.
  const std::string text = Render(registry.Collect());
  EXPECT_EQ(CountOccurrences(text, "# HELP reef_test_requests_total"), 1u) << text;
  EXPECT_EQ(CountOccurrences(text, "# TYPE reef_test_requests_total"), 1u) << text;
  EXPECT_NE(text.find("{from=\"a\"} 1\nreef_test_requests_total{from=\"b\"} 2\n"),
            std::string::npos)
      << text;
}

TEST(MetricsRegistryTest, ANameIsRegisteredOnceAndFreeAgainAfterReset) {
  MetricsRegistry registry;
  auto first = registry.Register("modules", [](MetricFamilies&) {});
  ASSERT_TRUE(first.ok());
  auto second = registry.Register("modules", [](MetricFamilies&) {});
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), Code::kAlreadyExists);
  first->Reset();
  EXPECT_TRUE(registry.Register("modules", [](MetricFamilies&) {}).ok());
  EXPECT_EQ(registry.Register("empty", MetricsCollector()).status().code(), Code::kInvalidArgument);
}

TEST(MetricsRegistryTest, AnUnregisteredCollectorIsNeverCalledAgain) {
  // Given a registered collector that counts its calls.
  MetricsRegistry registry;
  int calls = 0;
  std::optional<MetricsRegistration> registration;
  {
    auto registered = registry.Register("counting", [&calls](MetricFamilies& out) {
      ++calls;
      out.Add(kQueue, {}, uint64_t{1});
    });
    ASSERT_TRUE(registered.ok());
    registration = std::move(*registered);
  }
  EXPECT_NE(Render(registry.Collect()).find("reef_test_queue 1"), std::string::npos);
  ASSERT_EQ(calls, 1);

  // When its registration is destroyed (as its subsystem goes), then scrapes skip it.
  registration.reset();
  EXPECT_EQ(Render(registry.Collect()), "");
  EXPECT_EQ(calls, 1);
}

TEST(MetricsRegistryTest, AMovedRegistrationKeepsTheCollectorUntilItGoes) {
  MetricsRegistry registry;
  auto registered = registry.Register("m", [](MetricFamilies& out) { out.Declare(kQueue); });
  ASSERT_TRUE(registered.ok());
  MetricsRegistration moved = std::move(*registered);
  registered->Reset();  // the moved-from registration owns nothing
  EXPECT_FALSE(Render(registry.Collect()).empty());
  moved = MetricsRegistration();
  EXPECT_EQ(Render(registry.Collect()), "");
}

TEST(MetricsRegistryTest, ResetWaitsForAScrapeThatIsRunningTheCollector) {
  // Given a collector that a scrape on another thread is inside of.
  MetricsRegistry registry;
  std::atomic<bool> entered{false}, release{false}, finished{false};
  auto registered = registry.Register("slow", [&](MetricFamilies&) {
    entered = true;
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    finished = true;
  });
  ASSERT_TRUE(registered.ok());
  std::thread scrape([&] { (void)registry.Collect(); });
  while (!entered) std::this_thread::sleep_for(std::chrono::milliseconds(1));

  // When the registration is reset meanwhile, then Reset returns only after the collector
  // returned.
  std::atomic<bool> reset_done{false};
  bool finished_when_reset = false;
  std::thread unregister([&] {
    registered->Reset();
    finished_when_reset = finished;
    reset_done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(reset_done);
  release = true;
  unregister.join();
  scrape.join();
  EXPECT_TRUE(finished_when_reset);
}

TEST(MetricsRegistryTest, ARegistrationThatOutlivesItsRegistryResetsSafely) {
  auto registry = std::make_unique<MetricsRegistry>();
  auto registered = registry->Register("late", [](MetricFamilies&) {});
  ASSERT_TRUE(registered.ok());
  registry.reset();
  registered->Reset();  // no crash, nothing to wait for
}

TEST(MetricsRegistryTest, ScrapesRegistrationsAndResetsRunConcurrently) {
  // Given scrapers on two threads and a thread that keeps registering and unregistering.
  MetricsRegistry registry;
  auto fixed = registry.Register("fixed", [](MetricFamilies& out) {
    out.Add(kQueue, {{"from", "fixed"}}, uint64_t{1});
  });
  ASSERT_TRUE(fixed.ok());
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::vector<std::thread> scrapers;
  for (int i = 0; i < 2; ++i) {
    scrapers.emplace_back([&] {
      while (!stop) {
        Result<std::string> text = RenderPrometheusText(registry.Collect());
        if (!text.ok() || text->find("{from=\"fixed\"} 1\n") == std::string::npos) ++bad;
      }
    });
  }
  for (int i = 0; i < 500; ++i) {
    auto churn = registry.Register("churn", [](MetricFamilies& out) {
      out.Add(kQueue, {{"from", "churn"}}, uint64_t{2});
    });
    ASSERT_TRUE(churn.ok());
  }
  stop = true;
  for (std::thread& t : scrapers) t.join();
  // Then every scrape rendered, with the fixed collector's sample.
  EXPECT_EQ(bad, 0);
}

}  // namespace
}  // namespace reef
