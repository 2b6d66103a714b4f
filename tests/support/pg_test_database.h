// A real PostgreSQL for tests: one throwaway cluster per build directory (scripts/pg_cluster.sh,
// started by the CTest fixture `pg_cluster_start`, or on demand when a test binary runs alone),
// and a fresh database per test, dropped when the test ends. Databases keep tests apart: the
// stores' advisory locks and the read barrier are per database.
//
// Thread ownership: construct and destroy on the test's thread; conninfo() from any thread.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <string>
#include <string_view>

#include "pg/pg.h"

namespace reef::testing {

// The cluster's connection string (dbname=postgres), starting the cluster when it is not
// running. Fails the test when PostgreSQL cannot be started.
inline std::string PgTestCluster() {
  static const std::string conninfo = [] {
    std::string command = std::string("bash '") + REEF_PG_CLUSTER_SCRIPT + "' start '" +
                          REEF_PG_TEST_STATE_DIR + "' tuned 2>&1";
    std::string out;
    if (FILE* pipe = popen(command.c_str(), "r")) {
      std::array<char, 512> buffer;
      while (fgets(buffer.data(), buffer.size(), pipe) != nullptr) out += buffer.data();
      if (pclose(pipe) != 0) out = "FAILED: " + out;
    }
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
  }();
  EXPECT_FALSE(conninfo.starts_with("FAILED")) << "cannot start PostgreSQL: " << conninfo;
  return conninfo;
}

// A fresh, empty database in the test cluster.
class PgTestDatabase {
 public:
  PgTestDatabase() {
    static std::atomic<int> counter{0};
    name_ = "reef_test_" + std::to_string(getpid()) + "_" + std::to_string(counter++);
    cluster_ = PgTestCluster();
    Admin("DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
    Admin("CREATE DATABASE " + name_);
  }
  ~PgTestDatabase() { Admin("DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)"); }
  PgTestDatabase(const PgTestDatabase&) = delete;
  PgTestDatabase& operator=(const PgTestDatabase&) = delete;

  // A libpq connection string for this database.
  std::string conninfo() const { return cluster_ + " dbname=" + name_; }
  // The same as a postgresql:// URI (what `reef serve --store` takes).
  std::string uri() const {
    auto field = [this](std::string_view key) {
      size_t at = cluster_.find(std::string(key) + "=");
      if (at == std::string::npos) return std::string();
      at += key.size() + 1;
      return cluster_.substr(at, cluster_.find(' ', at) - at);
    };
    return "postgresql://" + field("user") + "@/" + name_ + "?host=" + field("host") +
           "&port=" + field("port");
  }
  const std::string& name() const { return name_; }

  // Runs `sql` in this database (for tests that look at or disturb the tables directly).
  void Exec(const std::string& sql) const {
    auto conn = pg::Connection::Open({conninfo()});
    ASSERT_TRUE(conn.ok()) << conn.status().ToString();
    Status done = (*conn)->ExecScript(sql, "test statement");
    ASSERT_TRUE(done.ok()) << done.ToString();
  }

 private:
  void Admin(const std::string& sql) const {
    auto conn = pg::Connection::Open({cluster_});
    ASSERT_TRUE(conn.ok()) << conn.status().ToString();
    Status done = (*conn)->ExecScript(sql, "test database");
    ASSERT_TRUE(done.ok()) << done.ToString();
  }

  std::string name_;
  std::string cluster_;
};

}  // namespace reef::testing
