// What the module store tests share: a fresh store per test on either backend, and short ways
// to write modules (module_store_test.cc, pg_module_store_test.cc).
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "store/module_store.h"
#include "support/pg_test_database.h"

namespace reef::store::testing {

namespace fs = std::filesystem;

inline std::vector<uint8_t> Bytes(std::string_view text) {
  return std::vector<uint8_t>(text.begin(), text.end());
}

inline std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A fresh module store per test: the embedded one in a temporary directory, or the PostgreSQL
// one in a fresh database of the test cluster (tests/support/pg_test_database.h).
template <typename Base>
class ModuleStoreFixture : public Base {
 protected:
  virtual bool postgres() const = 0;

  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "reef-module-store-test-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    if (postgres()) db_ = std::make_unique<reef::testing::PgTestDatabase>();
    Reopen();
  }
  void TearDown() override {
    store_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  void Reopen(ModuleStoreOptions options = {}) {
    store_.reset();
    auto store = postgres() ? ModuleStore::OpenPostgres(db_->conninfo(), dir_, options)
                            : ModuleStore::Open(dir_, options);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(*store);
  }
  ModuleVersion Upload(ModuleKind kind, std::string_view name, std::string_view version,
                       std::string_view bytes) {
    auto result = store_->Upload(kind, name, version, Bytes(bytes));
    EXPECT_TRUE(result.ok()) << result.status().ToString();
    return result.ok() ? result->version : ModuleVersion{};
  }
  std::vector<std::string> Versions(ModuleKind kind, std::string_view name) {
    std::vector<std::string> versions;
    auto info = store_->Get(kind, name);
    EXPECT_TRUE(info.ok()) << info.status().ToString();
    if (info.ok()) {
      for (const ModuleVersion& v : info->versions) versions.push_back(v.version);
    }
    return versions;
  }

  fs::path dir_;
  std::unique_ptr<reef::testing::PgTestDatabase> db_;
  std::unique_ptr<ModuleStore> store_;
};

inline constexpr ModuleKind kCmd = ModuleKind::kCommand;
// SHA-256("abc"), FIPS 180-2 appendix B.1.
inline constexpr std::string_view kAbcSha256 =
    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

}  // namespace reef::store::testing
