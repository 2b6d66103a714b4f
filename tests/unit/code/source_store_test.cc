// The persisted source store: writes with expected identity, commits, history, rollback.
#include "code/source_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace reef::code {
namespace {

namespace fs = std::filesystem;

class SourceStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "reef-store-test-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    store_ = OpenStore();
  }
  void TearDown() override {
    store_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::unique_ptr<SourceStore> OpenStore() {
    auto store = SourceStore::Open(dir_);
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return store.ok() ? std::move(*store) : nullptr;
  }
  std::string Create(std::string_view path, std::string_view text) {
    auto id = store_->Write(path, SourceKind::kWat, text, std::nullopt);
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    return id.ok() ? *id : "";
  }

  fs::path dir_;
  std::unique_ptr<SourceStore> store_;
};

TEST_F(SourceStoreTest, CreateWithNullExpected) {
  // Given an empty store, when a path is written with a null expected id
  auto id = store_->Write("actors/counter", SourceKind::kC, "int x;\n", std::nullopt);
  // then it is created with the SourceId of its kind and bytes
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ(*id, SourceId(SourceKind::kC, "int x;\n"));
  auto file = store_->Read("actors/counter");
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(file->text, "int x;\n");
  EXPECT_EQ(file->kind, SourceKind::kC);
  EXPECT_EQ(file->id, *id);
  // and creating it again fails without touching it
  auto again = store_->Write("actors/counter", SourceKind::kC, "int y;\n", std::nullopt);
  EXPECT_EQ(again.status().code(), Code::kAlreadyExists);
  EXPECT_EQ(store_->Read("actors/counter")->text, "int x;\n");
}

TEST_F(SourceStoreTest, WriteConflictNeverOverwrites) {
  // Given two clients that both read the same working source
  std::string base = Create("actors/counter", "(module)");
  // when the first saves against it and the second saves against the same (now stale) id
  auto first = store_->Write("actors/counter", SourceKind::kWat, "(module) ;; one", base);
  auto second = store_->Write("actors/counter", SourceKind::kWat, "(module) ;; two", base);
  // then the second gets Conflict and the first client's text stays
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(second.status().code(), Code::kConflict);
  EXPECT_NE(second.status().message().find(*first), std::string::npos);
  auto file = store_->Read("actors/counter");
  EXPECT_EQ(file->text, "(module) ;; one");
  EXPECT_EQ(file->id, *first);
}

TEST_F(SourceStoreTest, WriteWithExpectedToMissingPathIsNotFound) {
  auto id = store_->Write("nothing", SourceKind::kWat, "(module)",
                          SourceId(SourceKind::kWat, "(module)"));
  EXPECT_EQ(id.status().code(), Code::kNotFound);
  EXPECT_EQ(store_->Read("nothing").status().code(), Code::kNotFound);
}

TEST_F(SourceStoreTest, InvalidPathsAndSizesAreRejectedAtEveryCall) {
  EXPECT_EQ(store_->Write("a/../b", SourceKind::kWat, "", std::nullopt).status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(store_->Read("a.wat").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(store_->Commit("/a", std::nullopt).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(
      store_->Write("big", SourceKind::kC, std::string(kMaxSourceBytes + 1, ' '), std::nullopt)
          .status()
          .code(),
      Code::kLimitExceeded);
  EXPECT_EQ(store_->Write("a", SourceKind::kC, "", std::string("not-an-id")).status().code(),
            Code::kInvalidArgument);
}

TEST_F(SourceStoreTest, InvalidSourceIsStoredAndCommitted) {
  // Write and commit never compile: a syntax error is kept for diagnostics.
  Create("broken", "(module (func");
  auto revision = store_->Commit("broken", "work in progress");
  ASSERT_TRUE(revision.ok()) << revision.status().ToString();
  EXPECT_EQ(store_->ReadRevision("broken", *revision)->text, "(module (func");
}

TEST_F(SourceStoreTest, CommitHistoryRollbackRoundTripTextExactly) {
  // Given text with trailing whitespace, CRLF, a NUL byte and non-ASCII
  const std::string v1 = std::string("(module) ;; Zähler ✓ \t \r\n\n") + '\0' + "  ";
  const std::string v2 = "(module)";
  std::string id1 = Create("actors/counter", v1);
  auto r1 = store_->Commit("actors/counter", "first");
  ASSERT_TRUE(r1.ok()) << r1.status().ToString();
  auto id2 = store_->Write("actors/counter", SourceKind::kWat, v2, id1);
  ASSERT_TRUE(id2.ok());
  auto r2 = store_->Commit("actors/counter", std::nullopt);
  ASSERT_TRUE(r2.ok());
  // then revision ids are readable and distinct
  for (const std::string& r : {*r1, *r2}) {
    EXPECT_EQ(r.size(), kRevisionIdLength);
    EXPECT_EQ(r.find_first_not_of(kRevisionIdAlphabet), std::string::npos) << r;
  }
  EXPECT_NE(*r1, *r2);
  // and history lists them newest first
  auto history = store_->History("actors/counter");
  ASSERT_TRUE(history.ok());
  ASSERT_EQ(history->size(), 2u);
  EXPECT_EQ((*history)[0].revision, *r2);
  EXPECT_EQ((*history)[0].source_id, *id2);
  EXPECT_FALSE((*history)[0].message.has_value());
  EXPECT_EQ((*history)[1].revision, *r1);
  EXPECT_EQ((*history)[1].source_id, id1);
  EXPECT_EQ((*history)[1].message, "first");
  EXPECT_GT((*history)[1].time_ms, 0);
  // and the revision text comes back exactly
  auto text1 = store_->ReadRevision("actors/counter", *r1);
  ASSERT_TRUE(text1.ok());
  EXPECT_EQ(text1->text, v1);
  EXPECT_EQ(text1->id, id1);
  // when rolling back to the first revision
  auto restored = store_->Rollback("actors/counter", *r1);
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  // then the working source is that revision's, with its identity, and nothing was committed
  EXPECT_EQ(*restored, id1);
  EXPECT_EQ(store_->Read("actors/counter")->text, v1);
  EXPECT_EQ(store_->Read("actors/counter")->id, id1);
  EXPECT_EQ(store_->History("actors/counter")->size(), 2u);
  // and a revision of another path is not found
  Create("other", "(module)");
  EXPECT_EQ(store_->ReadRevision("other", *r1).status().code(), Code::kNotFound);
  EXPECT_EQ(store_->Rollback("other", *r1).status().code(), Code::kNotFound);
}

TEST_F(SourceStoreTest, ReopenSeesEverything) {
  // Given sources, a commit and a later write
  std::string id = Create("b", "(module) ;; b");
  Create("a", "(module) ;; a");
  auto revision = store_->Commit("b", "snapshot");
  ASSERT_TRUE(revision.ok());
  auto id2 = store_->Write("b", SourceKind::kWat, "(module) ;; b2", id);
  ASSERT_TRUE(id2.ok());
  // when the store is closed and reopened from the same directory
  store_.reset();
  store_ = OpenStore();
  ASSERT_NE(store_, nullptr);
  // then every path, identity, revision and text is there
  auto list = store_->List();
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].path, "a");
  EXPECT_EQ((*list)[1].path, "b");
  EXPECT_EQ((*list)[1].id, *id2);
  EXPECT_EQ(store_->Read("b")->text, "(module) ;; b2");
  auto history = store_->History("b");
  ASSERT_TRUE(history.ok());
  ASSERT_EQ(history->size(), 1u);
  EXPECT_EQ((*history)[0].revision, *revision);
  EXPECT_EQ((*history)[0].message, "snapshot");
  EXPECT_EQ(store_->ReadRevision("b", *revision)->text, "(module) ;; b");
  // and the conflict check still uses the persisted identity
  EXPECT_EQ(store_->Write("b", SourceKind::kWat, "x", id).status().code(), Code::kConflict);
}

}  // namespace
}  // namespace reef::code
