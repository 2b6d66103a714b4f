// The PostgreSQL module store with several processes on one database (the tests both backends
// pass are AnyModuleStoreTest, module_store_test.cc): another process's changes watched, leases,
// shared watermarks and their epochs, concurrent key creation, integrity.
#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "module_store_test_support.h"
#include "store/module_store.h"

namespace reef::store {
namespace {

using testing::kAbcSha256;
using testing::kCmd;
using testing::ModuleStoreFixture;

// --- PostgreSQL: several processes on one database -------------------------------------------

class PgModuleStoreTest : public ModuleStoreFixture<::testing::Test> {
 protected:
  bool postgres() const override { return true; }
  std::unique_ptr<ModuleStore> Second() {
    auto other = ModuleStore::OpenPostgres(db_->conninfo(), dir_ / "second");
    EXPECT_TRUE(other.ok()) << other.status().ToString();
    return other.ok() ? std::move(*other) : nullptr;
  }
};

TEST_F(PgModuleStoreTest, LoadBytesDetectsCorruptedBytes) {
  Upload(kCmd, "foo", "1.0.0", "abc");
  db_->Exec("UPDATE reef_modules SET wasm_bytes = '\\x616263ff' WHERE name = 'foo'");
  auto loaded = store_->LoadBytes(kCmd, "foo", "1.0.0");
  EXPECT_EQ(loaded.status().code(), Code::kDataLoss);
  EXPECT_NE(loaded.status().message().find(kAbcSha256), std::string::npos);
}

TEST_F(PgModuleStoreTest, AnotherProcesssChangesAreWatchedAndItsOwnAreNot) {
  auto other = Second();
  ASSERT_NE(other, nullptr);
  std::mutex mu;
  std::vector<std::string> seen_here, seen_there;
  auto recorder = [&mu](std::vector<std::string>& into) {
    return [&mu, &into](const StoreChange& change) {
      std::lock_guard lock(mu);
      switch (change.what) {
        case StoreChange::What::kModule:
          into.push_back(std::string(ModuleKindName(change.kind)) + "/" + change.name);
          break;
        case StoreChange::What::kKeyScope:
          into.push_back("key " + change.name);
          break;
        case StoreChange::What::kEverything:
          into.push_back("everything");
          break;
      }
    };
  };
  store_->Watch(recorder(seen_here));
  other->Watch(recorder(seen_there));
  auto wait_for = [&](const std::vector<std::string>& list, size_t n) {
    for (int i = 0; i < 200; ++i) {
      {
        std::lock_guard lock(mu);
        if (list.size() >= n) return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  };
  wait_for(seen_there, 1);  // each watcher starts with "everything"
  Upload(ModuleKind::kEffect, "mailer", "1.0.0", "bytes");
  ASSERT_TRUE(store_->SetActive(ModuleKind::kEffect, "mailer", "1.0.0").ok());
  ASSERT_TRUE(store_->GetOrCreateKey("user:1").ok());
  ASSERT_TRUE(store_->ShredScope("user:1").ok());
  wait_for(seen_there, 4);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::lock_guard lock(mu);
  EXPECT_EQ(seen_there, (std::vector<std::string>{"everything", "effect/mailer", "effect/mailer",
                                                  "key user:1"}));
  EXPECT_EQ(seen_here, (std::vector<std::string>{"everything"}));
}

TEST_F(PgModuleStoreTest, OneProcessHoldsALeaseUntilItLetsGoOrItsConnectionDies) {
  auto other = Second();
  ASSERT_NE(other, nullptr);
  auto mine = store_->TryLease(ModuleKind::kEffect, "mailer");
  ASSERT_TRUE(mine.ok() && *mine != nullptr) << mine.status().ToString();
  EXPECT_TRUE((*mine)->held());
  auto theirs = other->TryLease(ModuleKind::kEffect, "mailer");
  ASSERT_TRUE(theirs.ok());
  EXPECT_EQ(*theirs, nullptr);
  auto unrelated = other->TryLease(ModuleKind::kEffect, "billing");
  ASSERT_TRUE(unrelated.ok() && *unrelated != nullptr);
  mine->reset();  // let go
  theirs = other->TryLease(ModuleKind::kEffect, "mailer");
  ASSERT_TRUE(theirs.ok() && *theirs != nullptr);
  // The holder's connection dies (its server process ended): the lease is lost and free.
  db_->Exec(
      "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND "
      "objsubid = 1 AND classid = x'5245454c'::bigint::oid");
  bool lost = false;
  for (int i = 0; i < 100 && !lost; ++i) {
    lost = !(*theirs)->held();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(lost);
  // (The server process lets go of its locks as it exits, a moment after the socket closes:
  // a standby tries every second.)
  Result<std::unique_ptr<ModuleLease>> again = Status::Internal("unset");
  for (int i = 0; i < 100; ++i) {
    again = store_->TryLease(ModuleKind::kEffect, "mailer");
    if (again.ok() && *again != nullptr) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(again.ok() && *again != nullptr);
}

TEST_F(PgModuleStoreTest, EffectWatermarksAreSharedAndAResetFencesOffOlderRunners) {
  auto other = Second();
  EXPECT_EQ(store_->LoadWatermark("mailer")->watermark, 0u);
  const int64_t epoch = store_->LoadWatermark("mailer")->epoch;
  EXPECT_TRUE(*store_->SaveWatermark("mailer", 42, "1.0.0", epoch));
  EXPECT_TRUE(*store_->SaveWatermark("mailer", 57, "1.1.0", epoch));
  EXPECT_EQ(other->LoadWatermark("mailer")->watermark, 57u);
  // A replay on another process resets it in a new epoch ...
  ASSERT_TRUE(other->ResetWatermark("mailer").ok());
  auto reset = store_->LoadWatermark("mailer");
  EXPECT_EQ(reset->watermark, 0u);
  EXPECT_GT(reset->epoch, epoch);
  // ... and a runner still on the old epoch cannot move it.
  EXPECT_FALSE(*store_->SaveWatermark("mailer", 99, "1.1.0", epoch));
  EXPECT_EQ(other->LoadWatermark("mailer")->watermark, 0u);
  EXPECT_TRUE(*store_->SaveWatermark("mailer", 3, "1.1.0", reset->epoch));
  EXPECT_EQ(other->LoadWatermark("mailer")->watermark, 3u);
}

TEST_F(PgModuleStoreTest, TwoProcessesCreatingOneScopesKeyGetTheSameKey) {
  auto other = Second();
  std::vector<CryptoKey> keys(8);
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      auto key = (i % 2 ? other : store_)->GetOrCreateKey("tenant:7");
      ASSERT_TRUE(key.ok()) << key.status().ToString();
      keys[i] = *key;
    });
  }
  for (auto& t : threads) t.join();
  for (const CryptoKey& key : keys) EXPECT_EQ(key.id, keys[0].id);
}

}  // namespace
}  // namespace reef::store
