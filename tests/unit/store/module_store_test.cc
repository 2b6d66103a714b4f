// The module store: uploads, versions, activation, environment, crypto keys, integrity and
// the artifact cache, on both backends: real SQLite files in a temporary directory and a real
// PostgreSQL database (spec 000, "Module lifecycle", "Module store schema").
#include "store/module_store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "code/source_store.h"
#include "core/ids.h"
#include "module_store_test_support.h"
#include "support/pg_test_database.h"

namespace reef::store {
namespace {

namespace fs = std::filesystem;
using testing::Bytes;
using testing::kAbcSha256;
using testing::kCmd;
using testing::ModuleStoreFixture;
using testing::ReadFile;

// The embedded store's own behaviour (its file, SQLite's pages).
class ModuleStoreTest : public ModuleStoreFixture<::testing::Test> {
 protected:
  bool postgres() const override { return false; }
};

// What both backends must do.
class AnyModuleStoreTest : public ModuleStoreFixture<::testing::TestWithParam<bool>> {
 protected:
  bool postgres() const override { return GetParam(); }
};

INSTANTIATE_TEST_SUITE_P(Backends, AnyModuleStoreTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& param) {
                           return param.param ? "postgresql" : "embedded";
                         });

// --- names -----------------------------------------------------------------------------------

TEST(ModuleStoreNamesTest, KindsHaveANameAndAUrlPlural) {
  EXPECT_EQ(ModuleKindName(ModuleKind::kCommand), "command");
  EXPECT_EQ(ModuleKindName(ModuleKind::kProjector), "projector");
  EXPECT_EQ(ModuleKindName(ModuleKind::kEffect), "effect");
  for (ModuleKind kind : {ModuleKind::kCommand, ModuleKind::kProjector, ModuleKind::kEffect}) {
    auto parsed = ParseModuleKindPlural(ModuleKindPlural(kind));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, kind);
  }
  auto bad = ParseModuleKindPlural("command");
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("commands, projectors, effects"), std::string::npos);
  EXPECT_EQ(ModuleKindName(static_cast<ModuleKind>(7)), "unknown");
}

TEST(ModuleStoreNamesTest, ModuleNamesFollowTheRule) {
  for (std::string_view ok : {"a", "0", "foo", "register-webhooks", "create_project", "a1-_"}) {
    EXPECT_TRUE(ValidateModuleName(ok).ok()) << ok;
  }
  EXPECT_TRUE(ValidateModuleName(std::string(64, 'a')).ok());
  for (std::string_view bad : {"", "-a", "_a", "Foo", "a b", "a.b", "a/b", "é", "a\n"}) {
    Status status = ValidateModuleName(bad);
    EXPECT_EQ(status.code(), Code::kInvalidArgument) << bad;
    EXPECT_NE(status.message().find("^[a-z0-9][a-z0-9_-]{0,63}$"), std::string::npos);
  }
  EXPECT_EQ(ValidateModuleName(std::string(65, 'a')).code(), Code::kInvalidArgument);
}

TEST(ModuleStoreNamesTest, EnvKeysFollowTheRule) {
  for (std::string_view ok : {"A", "_", "DATABASE_URL", "a1", "_9"}) {
    EXPECT_TRUE(ValidateEnvKey(ok).ok()) << ok;
  }
  EXPECT_TRUE(ValidateEnvKey(std::string(128, 'K')).ok());
  for (std::string_view bad : {"", "1A", "A-B", "A.B", "A B", "Ä"}) {
    EXPECT_EQ(ValidateEnvKey(bad).code(), Code::kInvalidArgument) << bad;
  }
  EXPECT_EQ(ValidateEnvKey(std::string(129, 'K')).code(), Code::kInvalidArgument);
}

TEST(ModuleStoreNamesTest, KeyScopesArePrintableUtf8Of1To256Bytes) {
  for (std::string_view ok : {"u", "user:42", "tenant/ü/ñ", "日本", "a b"}) {
    EXPECT_TRUE(ValidateKeyScope(ok).ok()) << ok;
  }
  EXPECT_TRUE(ValidateKeyScope(std::string(256, 's')).ok());
  for (std::string_view bad :
       {std::string_view(""), std::string_view("a\tb"), std::string_view("a\x7f"),
        std::string_view("\xc2\x85"), std::string_view("\xff"), std::string_view("a\0b", 3)}) {
    EXPECT_EQ(ValidateKeyScope(bad).code(), Code::kInvalidArgument);
  }
  EXPECT_EQ(ValidateKeyScope(std::string(257, 's')).code(), Code::kInvalidArgument);
}

// --- upload ----------------------------------------------------------------------------------

TEST_P(AnyModuleStoreTest, UploadStoresBytesWithTheirSha256) {
  // When a module version is uploaded
  auto result = store_->Upload(kCmd, "foo", "1.0.0", Bytes("abc"));
  // then it is created with the SHA-256 and size of its bytes, not active
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_TRUE(result->created);
  EXPECT_EQ(result->version.sha256, kAbcSha256);
  EXPECT_EQ(result->version.size_bytes, 3u);
  EXPECT_EQ(result->version.name, "foo");
  EXPECT_EQ(result->version.version, "1.0.0");
  EXPECT_GT(result->version.created_at_ms, 1'600'000'000'000);
  EXPECT_EQ(*store_->LoadBytes(kCmd, "foo", "1.0.0"), Bytes("abc"));
  EXPECT_FALSE(store_->Active(kCmd, "foo")->has_value());
}

TEST_P(AnyModuleStoreTest, UploadingTheSameBytesAgainIsIdempotent) {
  ModuleVersion first = Upload(kCmd, "foo", "1.0.0", "abc");
  auto again = store_->Upload(kCmd, "foo", "1.0.0", Bytes("abc"));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_FALSE(again->created);
  EXPECT_EQ(again->version.sha256, first.sha256);
  EXPECT_EQ(again->version.created_at_ms, first.created_at_ms);
  EXPECT_EQ(Versions(kCmd, "foo"), std::vector<std::string>{"1.0.0"});
}

TEST_P(AnyModuleStoreTest, UploadingOtherBytesUnderAnExistingVersionIsAlreadyExists) {
  Upload(kCmd, "foo", "1.0.0", "abc");
  auto other = store_->Upload(kCmd, "foo", "1.0.0", Bytes("abd"));
  EXPECT_EQ(other.status().code(), Code::kAlreadyExists);
  EXPECT_NE(other.status().message().find(
                "commands/foo version 1.0.0 already exists with other bytes (sha256 ba7816bf8f01"),
            std::string::npos)
      << other.status().message();
  // and the stored bytes are untouched
  EXPECT_EQ(*store_->LoadBytes(kCmd, "foo", "1.0.0"), Bytes("abc"));
}

TEST_P(AnyModuleStoreTest, UploadRejectsInvalidKindNameVersionAndEmptyBytes) {
  EXPECT_EQ(store_->Upload(static_cast<ModuleKind>(9), "foo", "1.0.0", Bytes("a")).status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(store_->Upload(kCmd, "Foo", "1.0.0", Bytes("a")).status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(store_->Upload(kCmd, "foo", "v1.0.0", Bytes("a")).status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(store_->Upload(kCmd, "foo", "1.0", Bytes("a")).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(store_->Upload(kCmd, "foo", "1.0.0", {}).status().code(), Code::kInvalidArgument);
  std::string long_version = "1.0.0-" + std::string(kMaxVersionBytes, 'a');
  EXPECT_EQ(store_->Upload(kCmd, "foo", long_version, Bytes("a")).status().code(),
            Code::kLimitExceeded);
  EXPECT_EQ(store_->List(kCmd)->size(), 0u);
}

TEST_P(AnyModuleStoreTest, UploadEnforcesMaxModuleBytes) {
  Reopen(ModuleStoreOptions{.max_module_bytes = 16});
  EXPECT_TRUE(store_->Upload(kCmd, "foo", "1.0.0", std::vector<uint8_t>(16, 1)).ok());
  auto big = store_->Upload(kCmd, "foo", "2.0.0", std::vector<uint8_t>(17, 1));
  EXPECT_EQ(big.status().code(), Code::kLimitExceeded);
  EXPECT_NE(big.status().message().find("max_module_bytes"), std::string::npos);
  EXPECT_EQ(Versions(kCmd, "foo"), std::vector<std::string>{"1.0.0"});
}

TEST_P(AnyModuleStoreTest, ConcurrentUploadsFromManyThreadsAllLand) {
  // Given four threads uploading ten versions each, plus a repeat of every upload
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        std::string version = "1." + std::to_string(t) + "." + std::to_string(i);
        for (int repeat = 0; repeat < 2; ++repeat) {
          EXPECT_TRUE(store_->Upload(kCmd, "foo", version, Bytes(version)).ok());
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  // then every version is stored once, in precedence order
  std::vector<std::string> versions = Versions(kCmd, "foo");
  ASSERT_EQ(versions.size(), 40u);
  EXPECT_EQ(versions.front(), "1.0.0");
  EXPECT_EQ(versions[10], "1.1.0");
  EXPECT_EQ(versions.back(), "1.3.9");
}

// --- list and get ----------------------------------------------------------------------------

TEST_P(AnyModuleStoreTest, ListIsByNameWithVersionsInPrecedenceOrder) {
  // Given versions uploaded out of order, under two names and two kinds
  Upload(kCmd, "zeta", "1.10.0", "z110");
  Upload(kCmd, "zeta", "1.2.0", "z12");
  Upload(kCmd, "zeta", "1.2.0-rc.1", "z12rc1");
  Upload(kCmd, "zeta", "1.2.0-alpha", "z12a");
  Upload(kCmd, "alpha", "0.1.0", "a01");
  Upload(ModuleKind::kEffect, "mailer", "1.0.0", "m");
  // when the commands are listed
  auto list = store_->List(kCmd);
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  // then they come by name, each with its versions in SemVer precedence order
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].name, "alpha");
  EXPECT_EQ((*list)[1].name, "zeta");
  std::vector<std::string> versions;
  for (const ModuleVersion& v : (*list)[1].versions) versions.push_back(v.version);
  EXPECT_EQ(versions, (std::vector<std::string>{"1.2.0-alpha", "1.2.0-rc.1", "1.2.0", "1.10.0"}));
  EXPECT_EQ((*list)[1].versions[0].size_bytes, 4u);
  EXPECT_EQ((*list)[1].versions[0].kind, kCmd);
  // and the effect is listed only under effects
  ASSERT_EQ(store_->List(ModuleKind::kEffect)->size(), 1u);
  EXPECT_TRUE(store_->List(ModuleKind::kProjector)->empty());
}

TEST_P(AnyModuleStoreTest, GetUnknownModuleIsNotFound) {
  Upload(ModuleKind::kProjector, "foo", "1.0.0", "p");
  auto missing = store_->Get(kCmd, "foo");
  EXPECT_EQ(missing.status().code(), Code::kNotFound);
  EXPECT_EQ(missing.status().message(), "no commands module named 'foo'");
  EXPECT_EQ(store_->Get(kCmd, "BAD").status().code(), Code::kInvalidArgument);
  auto projector = store_->Get(ModuleKind::kProjector, "foo");
  ASSERT_TRUE(projector.ok());
  EXPECT_EQ(projector->kind, ModuleKind::kProjector);
  EXPECT_FALSE(projector->active_version.has_value());
  EXPECT_TRUE(projector->env.empty());
}

TEST_P(AnyModuleStoreTest, LoadBytesOfAnUnknownVersionIsNotFound) {
  Upload(kCmd, "foo", "1.0.0", "abc");
  EXPECT_EQ(store_->LoadBytes(kCmd, "foo", "2.0.0").status().code(), Code::kNotFound);
  EXPECT_EQ(store_->LoadBytes(kCmd, "bar", "1.0.0").status().code(), Code::kNotFound);
  EXPECT_EQ(store_->LoadBytes(kCmd, "foo", "1.0").status().code(), Code::kInvalidArgument);
}

// --- activation and deletion -----------------------------------------------------------------

TEST_P(AnyModuleStoreTest, ActivateSwapsThePointerAndDeactivateClearsIt) {
  ModuleVersion v1 = Upload(kCmd, "foo", "1.0.0", "one");
  ModuleVersion v2 = Upload(kCmd, "foo", "2.0.0", "two");
  // When 1.0.0 is activated
  ASSERT_TRUE(store_->SetActive(kCmd, "foo", "1.0.0").ok());
  auto active = store_->Active(kCmd, "foo");
  ASSERT_TRUE(active.ok() && active->has_value());
  EXPECT_EQ((*active)->version, "1.0.0");
  EXPECT_EQ((*active)->sha256, v1.sha256);
  // and then 2.0.0 (a rolling upgrade swaps the pointer)
  ASSERT_TRUE(store_->SetActive(kCmd, "foo", "2.0.0").ok());
  EXPECT_EQ((*store_->Active(kCmd, "foo"))->sha256, v2.sha256);
  EXPECT_EQ(store_->Get(kCmd, "foo")->active_version, "2.0.0");
  // activating the active version again is fine
  EXPECT_TRUE(store_->SetActive(kCmd, "foo", "2.0.0").ok());
  // When deactivated, nothing is active and deactivating again is NotFound
  ASSERT_TRUE(store_->ClearActive(kCmd, "foo").ok());
  EXPECT_FALSE(store_->Active(kCmd, "foo")->has_value());
  EXPECT_EQ(store_->ClearActive(kCmd, "foo").code(), Code::kNotFound);
  EXPECT_FALSE(store_->Get(kCmd, "foo")->active_version.has_value());
  EXPECT_EQ(Versions(kCmd, "foo"), (std::vector<std::string>{"1.0.0", "2.0.0"}));
}

TEST_P(AnyModuleStoreTest, ActivatingAVersionThatWasNotUploadedIsNotFound) {
  Upload(kCmd, "foo", "1.0.0", "one");
  EXPECT_EQ(store_->SetActive(kCmd, "foo", "1.0.1").code(), Code::kNotFound);
  EXPECT_EQ(store_->SetActive(kCmd, "bar", "1.0.0").code(), Code::kNotFound);
  EXPECT_EQ(store_->SetActive(ModuleKind::kEffect, "foo", "1.0.0").code(), Code::kNotFound);
  EXPECT_FALSE(store_->Active(kCmd, "foo")->has_value());
}

TEST_P(AnyModuleStoreTest, ListActiveCoversEveryKindInKindThenNameOrder) {
  Upload(ModuleKind::kEffect, "mailer", "1.0.0", "e");
  Upload(ModuleKind::kProjector, "users", "1.0.0", "p1");
  Upload(ModuleKind::kProjector, "projects", "0.9.0", "p2");
  Upload(kCmd, "create", "3.0.0", "c");
  Upload(kCmd, "idle", "1.0.0", "i");
  ASSERT_TRUE(store_->SetActive(ModuleKind::kEffect, "mailer", "1.0.0").ok());
  ASSERT_TRUE(store_->SetActive(ModuleKind::kProjector, "users", "1.0.0").ok());
  ASSERT_TRUE(store_->SetActive(ModuleKind::kProjector, "projects", "0.9.0").ok());
  ASSERT_TRUE(store_->SetActive(kCmd, "create", "3.0.0").ok());
  auto active = store_->ListActive();
  ASSERT_TRUE(active.ok()) << active.status().ToString();
  std::vector<std::string> seen;
  for (const ActiveModule& m : *active) {
    seen.push_back(std::string(ModuleKindPlural(m.kind)) + "/" + m.name + "@" + m.version);
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"commands/create@3.0.0", "projectors/projects@0.9.0",
                                            "projectors/users@1.0.0", "effects/mailer@1.0.0"}));
}

TEST_P(AnyModuleStoreTest, DeleteNeverRemovesTheActiveVersion) {
  Upload(kCmd, "foo", "1.0.0", "one");
  Upload(kCmd, "foo", "2.0.0", "two");
  ASSERT_TRUE(store_->SetActive(kCmd, "foo", "1.0.0").ok());
  // The active version and its module cannot be deleted
  Status version = store_->DeleteVersion(kCmd, "foo", "1.0.0");
  EXPECT_EQ(version.code(), Code::kFailedPrecondition);
  EXPECT_NE(version.message().find("active"), std::string::npos);
  EXPECT_EQ(store_->DeleteModule(kCmd, "foo").code(), Code::kFailedPrecondition);
  // but another version can
  EXPECT_TRUE(store_->DeleteVersion(kCmd, "foo", "2.0.0").ok());
  EXPECT_EQ(Versions(kCmd, "foo"), std::vector<std::string>{"1.0.0"});
  EXPECT_EQ((*store_->Active(kCmd, "foo"))->version, "1.0.0");
  // and after deactivation the last version goes, and the module with it
  ASSERT_TRUE(store_->ClearActive(kCmd, "foo").ok());
  EXPECT_TRUE(store_->DeleteVersion(kCmd, "foo", "1.0.0").ok());
  EXPECT_EQ(store_->Get(kCmd, "foo").status().code(), Code::kNotFound);
}

TEST_P(AnyModuleStoreTest, DeletingUnknownVersionsAndModulesIsNotFound) {
  Upload(kCmd, "foo", "1.0.0", "one");
  EXPECT_EQ(store_->DeleteVersion(kCmd, "foo", "9.9.9").code(), Code::kNotFound);
  EXPECT_EQ(store_->DeleteVersion(kCmd, "bar", "1.0.0").code(), Code::kNotFound);
  EXPECT_EQ(store_->DeleteModule(kCmd, "bar").code(), Code::kNotFound);
  EXPECT_EQ(store_->DeleteModule(ModuleKind::kEffect, "foo").code(), Code::kNotFound);
  EXPECT_EQ(Versions(kCmd, "foo"), std::vector<std::string>{"1.0.0"});
}

TEST_P(AnyModuleStoreTest, DeleteModuleRemovesEveryVersionAndTheEnvironment) {
  Upload(kCmd, "foo", "1.0.0", "one");
  Upload(kCmd, "foo", "2.0.0", "two");
  Upload(kCmd, "other", "1.0.0", "x");
  ASSERT_TRUE(store_->SetEnv(kCmd, "foo", "TOKEN", "secret").ok());
  ASSERT_TRUE(store_->SetEnv(kCmd, "other", "TOKEN", "kept").ok());
  ASSERT_TRUE(store_->DeleteModule(kCmd, "foo").ok());
  EXPECT_EQ(store_->Get(kCmd, "foo").status().code(), Code::kNotFound);
  EXPECT_EQ(store_->LoadBytes(kCmd, "foo", "1.0.0").status().code(), Code::kNotFound);
  // A new upload under the same name starts with an empty environment
  Upload(kCmd, "foo", "1.0.0", "one");
  EXPECT_TRUE(store_->Env(kCmd, "foo")->empty());
  EXPECT_EQ(store_->Env(kCmd, "other")->at("TOKEN"), "kept");
}

TEST_P(AnyModuleStoreTest, DeletingTheLastVersionDeletesTheEnvironment) {
  Upload(kCmd, "foo", "1.0.0", "one");
  ASSERT_TRUE(store_->SetEnv(kCmd, "foo", "TOKEN", "secret").ok());
  ASSERT_TRUE(store_->DeleteVersion(kCmd, "foo", "1.0.0").ok());
  EXPECT_EQ(store_->Env(kCmd, "foo").status().code(), Code::kNotFound);
  Upload(kCmd, "foo", "1.0.0", "one");
  EXPECT_TRUE(store_->Env(kCmd, "foo")->empty());
}

// --- environment -----------------------------------------------------------------------------

TEST_P(AnyModuleStoreTest, EnvVarsAreSetReplacedAndDeleted) {
  Upload(kCmd, "foo", "1.0.0", "one");
  ASSERT_TRUE(store_->SetEnv(kCmd, "foo", "B_KEY", "b").ok());
  ASSERT_TRUE(store_->SetEnv(kCmd, "foo", "A_KEY", "a").ok());
  ASSERT_TRUE(store_->SetEnv(kCmd, "foo", "B_KEY", "b2 ünïcode").ok());
  ASSERT_TRUE(store_->SetEnv(kCmd, "foo", "EMPTY", "").ok());
  std::map<std::string, std::string> expected{
      {"A_KEY", "a"}, {"B_KEY", "b2 ünïcode"}, {"EMPTY", ""}};
  EXPECT_EQ(*store_->Env(kCmd, "foo"), expected);
  EXPECT_EQ(store_->Get(kCmd, "foo")->env, expected);
  ASSERT_TRUE(store_->DeleteEnv(kCmd, "foo", "A_KEY").ok());
  EXPECT_EQ(store_->DeleteEnv(kCmd, "foo", "A_KEY").code(), Code::kNotFound);
  EXPECT_EQ(store_->Env(kCmd, "foo")->count("A_KEY"), 0u);
}

TEST_P(AnyModuleStoreTest, EnvVarsNeedAnExistingModuleAndValidInput) {
  EXPECT_EQ(store_->SetEnv(kCmd, "ghost", "KEY", "v").code(), Code::kNotFound);
  EXPECT_EQ(store_->DeleteEnv(kCmd, "ghost", "KEY").code(), Code::kNotFound);
  EXPECT_EQ(store_->Env(kCmd, "ghost").status().code(), Code::kNotFound);
  Upload(kCmd, "foo", "1.0.0", "one");
  EXPECT_EQ(store_->SetEnv(kCmd, "foo", "1KEY", "v").code(), Code::kInvalidArgument);
  EXPECT_EQ(store_->SetEnv(kCmd, "foo", "KEY", "\xff").code(), Code::kInvalidArgument);
  EXPECT_EQ(store_->SetEnv(ModuleKind::kEffect, "foo", "KEY", "v").code(), Code::kNotFound);
  EXPECT_TRUE(store_->Env(kCmd, "foo")->empty());
}

TEST_P(AnyModuleStoreTest, EnvVarsRespectTheValueAndCountLimits) {
  Reopen(ModuleStoreOptions{.max_env_value_bytes = 8, .max_env_vars = 2});
  Upload(kCmd, "foo", "1.0.0", "one");
  EXPECT_TRUE(store_->SetEnv(kCmd, "foo", "A", "12345678").ok());
  Status big = store_->SetEnv(kCmd, "foo", "A", "123456789");
  EXPECT_EQ(big.code(), Code::kLimitExceeded);
  EXPECT_NE(big.message().find("max_env_value_bytes"), std::string::npos);
  EXPECT_TRUE(store_->SetEnv(kCmd, "foo", "B", "b").ok());
  Status many = store_->SetEnv(kCmd, "foo", "C", "c");
  EXPECT_EQ(many.code(), Code::kLimitExceeded);
  EXPECT_NE(many.message().find("max_env_vars"), std::string::npos);
  // replacing an existing key at the limit is fine
  EXPECT_TRUE(store_->SetEnv(kCmd, "foo", "B", "b2").ok());
  EXPECT_EQ(store_->Env(kCmd, "foo")->size(), 2u);
}

// --- crypto keys -----------------------------------------------------------------------------

TEST_P(AnyModuleStoreTest, GetOrCreateKeyReturnsTheScopesOneLiveKey) {
  auto first = store_->GetOrCreateKey("user:42");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->id.size(), kKeyIdLength);
  EXPECT_EQ(first->id.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(first->scope, "user:42");
  EXPECT_NE(first->key, (std::array<uint8_t, 32>{}));
  auto again = store_->GetOrCreateKey("user:42");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->id, first->id);
  EXPECT_EQ(again->key, first->key);
  auto other = store_->GetOrCreateKey("user:43");
  ASSERT_TRUE(other.ok());
  EXPECT_NE(other->id, first->id);
  EXPECT_NE(other->key, first->key);
  auto found = store_->FindKey(first->id);
  ASSERT_TRUE(found.ok() && found->has_value());
  EXPECT_EQ((*found)->key, first->key);
  EXPECT_EQ((*found)->scope, "user:42");
}

TEST_P(AnyModuleStoreTest, ShreddingAScopeForgetsItsKeyAndANewKeyDiffers) {
  CryptoKey old_key = *store_->GetOrCreateKey("user:42");
  CryptoKey kept = *store_->GetOrCreateKey("user:43");
  // When the scope is shredded
  ASSERT_TRUE(store_->ShredScope("user:42").ok());
  // then its key is gone (OK, nullopt), other scopes keep theirs
  auto shredded = store_->FindKey(old_key.id);
  ASSERT_TRUE(shredded.ok()) << shredded.status().ToString();
  EXPECT_FALSE(shredded->has_value());
  EXPECT_TRUE(store_->FindKey(kept.id)->has_value());
  // shredding again finds no live key
  EXPECT_EQ(store_->ShredScope("user:42").code(), Code::kNotFound);
  // and the next key of the scope is a new one
  auto fresh = store_->GetOrCreateKey("user:42");
  ASSERT_TRUE(fresh.ok());
  EXPECT_NE(fresh->id, old_key.id);
  EXPECT_NE(fresh->key, old_key.key);
  EXPECT_FALSE(store_->FindKey(old_key.id)->has_value());
}

TEST_F(ModuleStoreTest, ShreddedKeyBytesAreGoneFromTheDatabaseFiles) {
  // Given a key stored between others on the same database page
  ASSERT_TRUE(store_->GetOrCreateKey("user:41").ok());
  CryptoKey key = *store_->GetOrCreateKey("user:42");
  ASSERT_TRUE(store_->GetOrCreateKey("user:43").ok());
  // when its scope is shredded, its bytes are in neither the database nor the WAL
  ASSERT_TRUE(store_->ShredScope("user:42").ok());
  std::string needle(key.key.begin(), key.key.end());
  for (const char* file : {"reef.sqlite", "reef.sqlite-wal"}) {
    EXPECT_EQ(ReadFile(dir_ / file).find(needle), std::string::npos) << file;
  }
}

TEST_P(AnyModuleStoreTest, FindKeyDistinguishesUnknownAndMalformedIds) {
  EXPECT_EQ(store_->FindKey(std::string(32, 'a')).status().code(), Code::kNotFound);
  EXPECT_EQ(store_->FindKey("nope").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(store_->FindKey(std::string(32, 'A')).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(store_->ShredScope("never").code(), Code::kNotFound);
  EXPECT_EQ(store_->GetOrCreateKey("").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(store_->ShredScope("a\nb").code(), Code::kInvalidArgument);
}

// --- persistence and integrity ---------------------------------------------------------------

TEST_P(AnyModuleStoreTest, EverythingSurvivesAReopen) {
  ModuleVersion v = Upload(ModuleKind::kProjector, "users", "1.0.0", "projector bytes");
  ASSERT_TRUE(store_->SetActive(ModuleKind::kProjector, "users", "1.0.0").ok());
  ASSERT_TRUE(store_->SetEnv(ModuleKind::kProjector, "users", "KEY", "value").ok());
  CryptoKey key = *store_->GetOrCreateKey("tenant");
  CryptoKey shredded = *store_->GetOrCreateKey("gone");
  ASSERT_TRUE(store_->ShredScope("gone").ok());
  Reopen();
  auto info = store_->Get(ModuleKind::kProjector, "users");
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  ASSERT_EQ(info->versions.size(), 1u);
  EXPECT_EQ(info->versions[0].sha256, v.sha256);
  EXPECT_EQ(info->versions[0].created_at_ms, v.created_at_ms);
  EXPECT_EQ(info->active_version, "1.0.0");
  EXPECT_EQ(info->env.at("KEY"), "value");
  EXPECT_EQ(*store_->LoadBytes(ModuleKind::kProjector, "users", "1.0.0"), Bytes("projector bytes"));
  EXPECT_EQ(store_->ListActive()->size(), 1u);
  EXPECT_EQ(store_->GetOrCreateKey("tenant")->key, key.key);
  EXPECT_FALSE(store_->FindKey(shredded.id)->has_value());
}

TEST_F(ModuleStoreTest, CoexistsWithTheSourceStoreInOneFile) {
  auto sources = code::SourceStore::Open(dir_);
  ASSERT_TRUE(sources.ok()) << sources.status().ToString();
  ASSERT_TRUE((*sources)->Write("actors/a", code::SourceKind::kWat, "(module)", std::nullopt).ok());
  Upload(kCmd, "foo", "1.0.0", "one");
  EXPECT_TRUE((*sources)->Read("actors/a").ok());
  EXPECT_EQ(Versions(kCmd, "foo"), std::vector<std::string>{"1.0.0"});
}

TEST_F(ModuleStoreTest, LoadBytesDetectsCorruptedBytes) {
  Upload(kCmd, "foo", "1.0.0", "abc");
  // Given bytes changed behind the store's back
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ / "reef.sqlite").string().c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "UPDATE modules SET wasm_bytes = x'616263ff' WHERE name = 'foo'",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  // then loading them is DataLoss naming both hashes
  auto loaded = store_->LoadBytes(kCmd, "foo", "1.0.0");
  EXPECT_EQ(loaded.status().code(), Code::kDataLoss);
  EXPECT_NE(loaded.status().message().find(kAbcSha256), std::string::npos);
}

TEST_F(ModuleStoreTest, OpeningAFileThatIsNotADatabaseIsDataLoss) {
  store_.reset();
  fs::path other = dir_ / "broken";
  fs::create_directories(other);
  std::ofstream(other / "reef.sqlite") << std::string(4096, 'x');
  auto store = ModuleStore::Open(other);
  EXPECT_EQ(store.status().code(), Code::kDataLoss);
}

// --- artifact cache --------------------------------------------------------------------------

TEST_F(ModuleStoreTest, ArtifactsRoundTripAndReplaceAtomically) {
  std::string sha(kAbcSha256);
  auto missing = store_->GetArtifact(sha, "cwasm");
  ASSERT_TRUE(missing.ok()) << missing.status().ToString();
  EXPECT_FALSE(missing->has_value());
  std::vector<uint8_t> big(300 * 1024);
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<uint8_t>(i * 31);
  ASSERT_TRUE(store_->PutArtifact(sha, "cwasm", big).ok());
  EXPECT_EQ(**store_->GetArtifact(sha, "cwasm"), big);
  EXPECT_TRUE(fs::exists(dir_ / "cache" / (sha + ".cwasm")));
  // replacing it leaves only the new bytes and no temporary file
  ASSERT_TRUE(store_->PutArtifact(sha, "cwasm", Bytes("new")).ok());
  EXPECT_EQ(**store_->GetArtifact(sha, "cwasm"), Bytes("new"));
  ASSERT_TRUE(store_->PutArtifact(sha, "empty", {}).ok());
  EXPECT_TRUE((*store_->GetArtifact(sha, "empty"))->empty());
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_ / "cache"), fs::directory_iterator()), 2);
  // a different suffix is a different artifact
  EXPECT_FALSE(store_->GetArtifact(sha, "other")->has_value());
}

// The `wasm` artifact is named by its own SHA-256: a file whose bytes do not match (here the
// 15-byte module whose DataCount declares 2^32-1 segments) is never returned to be parsed.
TEST_F(ModuleStoreTest, AWasmArtifactThatDoesNotHashToItsNameIsRemovedNotReturned) {
  const std::vector<uint8_t> module = {0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00};
  const std::string sha = Sha256Hex(module);
  ASSERT_TRUE(store_->PutArtifact(sha, "wasm", module).ok());
  EXPECT_EQ(**store_->GetArtifact(sha, "wasm"), module);
  const fs::path file = dir_ / "cache" / (sha + ".wasm");
  std::ofstream(file, std::ios::binary | std::ios::trunc)
      << std::string("\x00\x61\x73\x6d\x01\x00\x00\x00\x0c\x05\xff\xff\xff\xff\x0f", 15);
  ASSERT_EQ(fs::file_size(file), 15u);
  auto corrupted = store_->GetArtifact(sha, "wasm");
  ASSERT_TRUE(corrupted.ok()) << corrupted.status().ToString();
  EXPECT_FALSE(corrupted->has_value());
  EXPECT_FALSE(fs::exists(file));
}

TEST_F(ModuleStoreTest, ArtifactKeysAreValidated) {
  EXPECT_EQ(store_->PutArtifact("abc", "cwasm", Bytes("x")).code(), Code::kInvalidArgument);
  EXPECT_EQ(store_->PutArtifact(std::string(64, 'A'), "cwasm", Bytes("x")).code(),
            Code::kInvalidArgument);
  std::string sha(kAbcSha256);
  EXPECT_EQ(store_->PutArtifact(sha, "../x", Bytes("x")).code(), Code::kInvalidArgument);
  EXPECT_EQ(store_->PutArtifact(sha, "", Bytes("x")).code(), Code::kInvalidArgument);
  EXPECT_EQ(store_->GetArtifact(sha, "a.b").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(store_->data_dir(), dir_);
}

}  // namespace
}  // namespace reef::store
