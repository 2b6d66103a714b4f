// Source paths and source identities (src/code/source.h).
#include "code/source.h"

#include <gtest/gtest.h>

#include <string>

namespace reef::code {
namespace {

void ExpectRejected(std::string_view path, std::string_view rule) {
  Status status = ValidateSourcePath(path);
  EXPECT_EQ(status.code(), Code::kInvalidArgument) << path;
  EXPECT_NE(status.message().find(rule), std::string::npos) << status.message();
}

TEST(SourcePathTest, CanonicalRelativePathsAreAccepted) {
  EXPECT_TRUE(ValidateSourcePath("counter").ok());
  EXPECT_TRUE(ValidateSourcePath("actors/counter").ok());
  EXPECT_TRUE(ValidateSourcePath("A/b_c/d-9").ok());
}

TEST(SourcePathTest, EmptyPathIsRejected) {
  ExpectRejected("", "must not be empty");
}

TEST(SourcePathTest, LeadingSlashIsRejected) {
  ExpectRejected("/actors/counter", "leading '/'");
}

TEST(SourcePathTest, TrailingSlashIsRejected) {
  ExpectRejected("actors/", "must not end with");
}

TEST(SourcePathTest, EmptyComponentIsRejected) {
  ExpectRejected("actors//counter", "empty component");
}

TEST(SourcePathTest, TraversalIsRejected) {
  ExpectRejected("actors/../secret", "no traversal");
  ExpectRejected("./counter", "no traversal");
}

TEST(SourcePathTest, ExtensionIsRejected) {
  ExpectRejected("actors/counter.c", "no extension");
}

TEST(SourcePathTest, BytesOutsideTheAlphabetAreRejected) {
  ExpectRejected("actors/my counter", "A-Z a-z 0-9 _ -");
  ExpectRejected("actors\\counter", "A-Z a-z 0-9 _ -");
  ExpectRejected("z\xc3\xa4hler", "A-Z a-z 0-9 _ -");
}

TEST(SourcePathTest, ComponentStartingWithDashIsRejected) {
  ExpectRejected("actors/-rf", "starts with '-'");
}

TEST(SourcePathTest, PathLongerThanTheLimitIsRejected) {
  EXPECT_TRUE(ValidateSourcePath(std::string(kMaxSourcePathBytes, 'a')).ok());
  Status status = ValidateSourcePath(std::string(kMaxSourcePathBytes + 1, 'a'));
  EXPECT_EQ(status.code(), Code::kLimitExceeded);
  EXPECT_NE(status.message().find("256"), std::string::npos) << status.message();
}

TEST(SourcePathTest, PathsAreCaseSensitive) {
  EXPECT_TRUE(ValidateSourcePath("Counter").ok());
  EXPECT_NE(SourceId(SourceKind::kC, "Counter"), SourceId(SourceKind::kC, "counter"));
}

TEST(SourceIdTest, HashesTheVersionedDomainTheKindAndTheExactBytes) {
  // Given the documented input "reef-source:v1\n" + kind + "\n" + bytes
  // (printf 'reef-source:v1\nwat\n(module)' | sha256sum)
  std::string id = SourceId(SourceKind::kWat, "(module)");
  EXPECT_EQ(id, "731b81b235a320b52a506136eff452d0c0a1ee2ed8185a6849d35e2a949ceedf");
  EXPECT_TRUE(IsValidSourceId(id));
  EXPECT_NE(id, SourceId(SourceKind::kWat, "(module) "));
  EXPECT_NE(id, SourceId(SourceKind::kC, "(module)"));
  EXPECT_EQ(id, SourceId(SourceKind::kWat, "(module)"));
}

TEST(SourceIdTest, SourceLargerThanOneMebibyteIsRejected) {
  EXPECT_TRUE(ValidateSourceSize(std::string(kMaxSourceBytes, 'x')).ok());
  EXPECT_EQ(ValidateSourceSize(std::string(kMaxSourceBytes + 1, 'x')).code(), Code::kLimitExceeded);
}

TEST(SourceKindTest, ParsesExactlyCWatAndWasm) {
  EXPECT_EQ(*ParseSourceKind("c"), SourceKind::kC);
  EXPECT_EQ(*ParseSourceKind("wat"), SourceKind::kWat);
  EXPECT_EQ(*ParseSourceKind("wasm"), SourceKind::kWasm);
  EXPECT_EQ(SourceKindName(SourceKind::kWasm), "wasm");
  EXPECT_EQ(ParseSourceKind("C").status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace reef::code
