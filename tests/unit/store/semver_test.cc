// SemVer 2.0.0 parsing and precedence (semver.org), as the module store orders versions.
#include "store/semver.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace reef::store {
namespace {

struct ValidCase {
  std::string text;
  uint64_t major, minor, patch;
  std::string pre_release, build;
};

TEST(SemVerTest, ParsesEveryFormOfTheGrammar) {
  const std::vector<ValidCase> cases = {
      {"0.0.0", 0, 0, 0, "", ""},
      {"1.2.3", 1, 2, 3, "", ""},
      {"10.20.30", 10, 20, 30, "", ""},
      {"1.0.0-alpha", 1, 0, 0, "alpha", ""},
      {"1.0.0-alpha.1", 1, 0, 0, "alpha.1", ""},
      {"1.0.0-0.3.7", 1, 0, 0, "0.3.7", ""},
      {"1.0.0-x.7.z.92", 1, 0, 0, "x.7.z.92", ""},
      {"1.0.0-x-y-z.--", 1, 0, 0, "x-y-z.--", ""},
      {"1.0.0--", 1, 0, 0, "-", ""},
      {"1.0.0-0a", 1, 0, 0, "0a", ""},
      {"1.0.0-alpha+001", 1, 0, 0, "alpha", "001"},
      {"1.0.0+20130313144700", 1, 0, 0, "", "20130313144700"},
      {"1.0.0-beta+exp.sha.5114f85", 1, 0, 0, "beta", "exp.sha.5114f85"},
      {"1.0.0+21AF26D3----117B344092BD", 1, 0, 0, "", "21AF26D3----117B344092BD"},
      {"1.1.2-prerelease+meta", 1, 1, 2, "prerelease", "meta"},
      {"18446744073709551615.0.0", 18446744073709551615ull, 0, 0, "", ""},
  };
  for (const ValidCase& c : cases) {
    auto parsed = ParseSemVer(c.text);
    ASSERT_TRUE(parsed.ok()) << c.text << ": " << parsed.status().ToString();
    EXPECT_EQ(parsed->major, c.major) << c.text;
    EXPECT_EQ(parsed->minor, c.minor) << c.text;
    EXPECT_EQ(parsed->patch, c.patch) << c.text;
    EXPECT_EQ(parsed->pre_release, c.pre_release) << c.text;
    EXPECT_EQ(parsed->build, c.build) << c.text;
    EXPECT_EQ(parsed->ToString(), c.text);
  }
}

TEST(SemVerTest, RejectsEverythingOutsideTheGrammar) {
  const std::vector<std::string> cases = {
      "",
      "1",
      "1.2",
      "1.2.3.4",
      "v1.2.3",
      "V1.2.3",
      "01.2.3",
      "1.02.3",
      "1.2.03",
      "00.0.0",
      "1.2.3-",
      "1.2.3+",
      "1.2.3-+",
      "1.2.3-01",
      "1.2.3-alpha.01",
      "1.2.3-a..b",
      "1.2.3-a.",
      "1.2.3-.a",
      "1.2.3+b..c",
      "1.2.3+b.",
      "1.2.3-a_b",
      "1.2.3+a_b",
      "1.2.3+a+b",
      " 1.2.3",
      "1.2.3 ",
      "1..3",
      "-1.2.3",
      "+1.2.3",
      "1.2.-3",
      "a.b.c",
      "1.2.3-ä",
      "1.2.3\n",
      "1.2.3-a b",
      "1.2.x",
      "18446744073709551616.0.0",  // 2^64
      "1.99999999999999999999.0",
  };
  for (const std::string& text : cases) {
    auto parsed = ParseSemVer(text);
    EXPECT_EQ(parsed.status().code(), Code::kInvalidArgument) << "'" << text << "'";
    if (!parsed.ok()) {
      EXPECT_NE(parsed.status().message().find("Semantic Versioning 2.0.0"), std::string::npos);
    }
  }
}

TEST(SemVerTest, BuildMetadataMayHaveLeadingZerosButPreReleaseNumbersMayNot) {
  EXPECT_TRUE(ParseSemVer("1.0.0+001").ok());
  EXPECT_TRUE(ParseSemVer("1.0.0-alpha+0.01").ok());
  auto pre = ParseSemVer("1.0.0-001");
  EXPECT_EQ(pre.status().code(), Code::kInvalidArgument);
  EXPECT_NE(pre.status().message().find("leading zero"), std::string::npos);
}

SemVer V(const std::string& text) {
  auto parsed = ParseSemVer(text);
  EXPECT_TRUE(parsed.ok()) << text << ": " << parsed.status().ToString();
  return parsed.ok() ? *parsed : SemVer{};
}

TEST(SemVerTest, PrecedenceFollowsTheSpecExamples) {
  // semver.org §11: each version is lower than the next.
  const std::vector<std::string> ascending = {
      "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta",
      "1.0.0-beta",  "1.0.0-beta.2",  "1.0.0-beta.11",
      "1.0.0-rc.1",  "1.0.0",         "1.0.1",
      "1.1.0",       "2.0.0",         "2.1.0",
      "2.1.1",       "10.0.0",
  };
  for (std::size_t i = 0; i < ascending.size(); ++i) {
    for (std::size_t j = 0; j < ascending.size(); ++j) {
      int c = CompareSemVer(V(ascending[i]), V(ascending[j]));
      int expected = i < j ? -1 : (i > j ? 1 : 0);
      EXPECT_EQ((c > 0) - (c < 0), expected) << ascending[i] << " vs " << ascending[j];
    }
  }
}

TEST(SemVerTest, BuildMetadataIsIgnoredForPrecedence) {
  EXPECT_EQ(CompareSemVer(V("1.0.0+a"), V("1.0.0+b")), 0);
  EXPECT_EQ(CompareSemVer(V("1.0.0-rc.1+x"), V("1.0.0-rc.1")), 0);
  EXPECT_LT(CompareSemVer(V("1.0.0-rc.1+zzz"), V("1.0.0+aaa")), 0);
}

TEST(SemVerTest, NumericIdentifiersCompareByValueAndBelowAlphanumerics) {
  EXPECT_LT(CompareSemVer(V("1.0.0-9"), V("1.0.0-10")), 0);
  // Numeric identifiers have no size bound: one past 2^64 still compares by value.
  EXPECT_GT(CompareSemVer(V("1.0.0-18446744073709551616"), V("1.0.0-18446744073709551615")), 0);
  EXPECT_LT(CompareSemVer(V("1.0.0-999"), V("1.0.0-a")), 0);
  EXPECT_LT(CompareSemVer(V("1.0.0-1a"), V("1.0.0-a")), 0);  // "1a" is alphanumeric, ASCII order
  EXPECT_LT(CompareSemVer(V("1.0.0-Z"), V("1.0.0-a")), 0);   // ASCII: uppercase first
  EXPECT_LT(CompareSemVer(V("18446744073709551614.0.0"), V("18446744073709551615.0.0")), 0);
}

}  // namespace
}  // namespace reef::store
