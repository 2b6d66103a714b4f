// pg::Connection against a real cluster: its prepared statements (the connection pool and the
// stores built on it are tested with the PostgreSQL event and module stores).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "pg/pg.h"
#include "support/pg_test_database.h"

namespace reef::pg {
namespace {

using reef::testing::PgTestDatabase;

TEST(PgConnectionTest, PreparedStatementsAreParsedOnceAndFailuresStayStatementErrors) {
  PgTestDatabase db;
  auto opened = Connection::Open({db.conninfo()});
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  auto& conn = *opened;
  auto prepared = [&] {
    return *conn->Exec("SELECT count(*) FROM pg_prepared_statements")->Int(0, 0);
  };
  Params one;
  one.Int8(41);
  for (int i = 0; i < 3; ++i) {
    auto sum = conn->RunPrepared("SELECT $1::int8 + 1", one);
    ASSERT_TRUE(sum.ok() && sum->ok()) << sum.status().ToString();
    EXPECT_EQ(*sum->Int(0, 0), 42);
  }
  EXPECT_EQ(prepared(), 1);
  // One the server forgot is prepared again.
  ASSERT_TRUE(conn->ExecScript("DEALLOCATE ALL", "deallocate").ok());
  for (int i = 0; i < 2; ++i) {
    auto sum = conn->RunPrepared("SELECT $1::int8 + 1", one);
    ASSERT_TRUE(sum.ok() && sum->ok()) << (sum.ok() ? sum->ToStatus() : sum.status()).ToString();
    EXPECT_EQ(*sum->Int(0, 0), 42);
  }
  EXPECT_EQ(prepared(), 1);
  // A statement that does not prepare is a failed statement, kept out of the list.
  auto bad = conn->RunPrepared("SELECT no_such_function($1)", one);
  ASSERT_TRUE(bad.ok());
  EXPECT_FALSE(bad->ok());
  EXPECT_EQ(bad->sqlstate(), "42883");
  EXPECT_EQ(prepared(), 1);
  // Past kMaxPrepared statements, the rest still run (unprepared).
  for (size_t i = 0; i < Connection::kMaxPrepared + 2; ++i) {
    auto n = conn->RunPrepared(fmt::format("SELECT $1::int8 + {}", i), one);
    ASSERT_TRUE(n.ok() && n->ok());
    EXPECT_EQ(*n->Int(0, 0), 41 + static_cast<int64_t>(i));
  }
  EXPECT_EQ(prepared(), static_cast<int64_t>(Connection::kMaxPrepared));
}

}  // namespace
}  // namespace reef::pg
