// The postgresql engine against the real test cluster.
#include <gtest/gtest.h>

#include <thread>

#include "support/test_database.h"
#include "warehouse/postgresql_engine.h"
#include "warehouse/warehouse_fixture.h"

namespace sluice::warehouse {
namespace {

using namespace std::chrono_literals;

class PostgresqlEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tdb_ = std::make_unique<testing::TestDatabase>();
    auto e = ConnectPostgresql(testing::ClusterWarehouseConfig(tdb_->name()));
    ASSERT_TRUE(e.ok()) << e.status().message();
    engine_ = std::move(e).value();
  }

  StatementState Wait(const std::string& handle) {
    for (int i = 0; i < 6000; ++i) {
      auto st = engine_->Poll(handle);
      EXPECT_TRUE(st.ok()) << st.status().message();
      if (!st.ok() || !st->running()) return st.ok() ? *st : StatementState{};
      std::this_thread::sleep_for(10ms);
    }
    ADD_FAILURE() << "statement never ended";
    return {};
  }

  std::unique_ptr<testing::TestDatabase> tdb_;
  std::unique_ptr<Engine> engine_;
};

TEST_F(PostgresqlEngineTest, TestAnswersWithTheServerVersion) {
  auto answer = engine_->Test();
  ASSERT_TRUE(answer.ok()) << answer.status().message();
  EXPECT_NE(answer->find("connected: PostgreSQL"), std::string::npos) << *answer;
  EXPECT_NE(answer->find(tdb_->name()), std::string::npos) << *answer;
}

TEST_F(PostgresqlEngineTest, WrongCredentialsAreRefusedWithTheServersWords) {
  auto config = testing::ClusterWarehouseConfig("no_such_database_here");
  auto e = ConnectPostgresql(config);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("no_such_database_here"), std::string::npos)
      << e.status().message();
}

TEST_F(PostgresqlEngineTest, SelectReturnsColumnsAndRowsAsText) {
  auto h = engine_->Submit("select 1 as a, 'x'::text as b, null::int as c");
  ASSERT_TRUE(h.ok());
  ASSERT_EQ(Wait(*h).phase, StatementPhase::kSucceeded);
  auto rs = engine_->FetchResult(*h, kMaxResultRows);
  ASSERT_TRUE(rs.ok());
  ASSERT_EQ(rs->columns.size(), 3u);
  EXPECT_EQ(rs->columns[0].name, "a");
  EXPECT_EQ(rs->columns[0].type, "integer");
  EXPECT_EQ(rs->columns[1].type, "text");
  ASSERT_EQ(rs->rows.size(), 1u);
  EXPECT_EQ(rs->rows[0][0], "1");
  EXPECT_EQ(rs->rows[0][1], "x");
  EXPECT_TRUE(rs->rows[0][2].is_null());
  EXPECT_FALSE(rs->truncated);
}

TEST_F(PostgresqlEngineTest, LargeResultIsBoundedAndMarkedTruncated) {
  auto h = engine_->Submit("select g from generate_series(1, 5000) g");
  ASSERT_TRUE(h.ok());
  ASSERT_EQ(Wait(*h).phase, StatementPhase::kSucceeded);
  auto rs = engine_->FetchResult(*h, 100);
  ASSERT_TRUE(rs.ok());
  EXPECT_EQ(rs->rows.size(), 100u);
  EXPECT_TRUE(rs->truncated);
  EXPECT_EQ(rs->rows[99][0], "100");
}

TEST_F(PostgresqlEngineTest, DmlReportsRowsAffectedAndSessionCarriesState) {
  for (std::string sql :
       {"create temporary table t (x int)", "insert into t select generate_series(1, 7)"}) {
    auto h = engine_->Submit(sql);
    ASSERT_TRUE(h.ok());
    ASSERT_EQ(Wait(*h).phase, StatementPhase::kSucceeded) << sql;
  }
  // The temporary table is still there: one session for the script.
  auto h = engine_->Submit("delete from t where x > 4");
  ASSERT_EQ(Wait(*h).phase, StatementPhase::kSucceeded);
  EXPECT_EQ(engine_->FetchResult(*h, 10)->rows_affected, 3);
}

TEST_F(PostgresqlEngineTest, FailureCarriesTheServersMessage) {
  auto h = engine_->Submit("select * from no_such_table");
  ASSERT_TRUE(h.ok());
  auto st = Wait(*h);
  EXPECT_EQ(st.phase, StatementPhase::kFailed);
  EXPECT_NE(st.error.find("no_such_table"), std::string::npos) << st.error;
  // The session stays usable after a failure.
  auto again = engine_->Submit("select 2");
  EXPECT_EQ(Wait(*again).phase, StatementPhase::kSucceeded);
}

TEST_F(PostgresqlEngineTest, CopyToStdoutEndsAndTheSessionStaysUsable) {
  auto out = engine_->Submit("copy (select generate_series(1, 100)) to stdout");
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(Wait(*out).phase, StatementPhase::kSucceeded);
  auto after = engine_->Submit("select 1");
  ASSERT_TRUE(after.ok()) << after.status().message();
  EXPECT_EQ(Wait(*after).phase, StatementPhase::kSucceeded);
}

TEST_F(PostgresqlEngineTest, CopyFromStdinFailsWithAReason) {
  auto h = engine_->Submit("create temporary table c (x int)");
  ASSERT_EQ(Wait(*h).phase, StatementPhase::kSucceeded);
  auto copy = engine_->Submit("copy c from stdin");
  ASSERT_TRUE(copy.ok());
  auto st = Wait(*copy);
  EXPECT_EQ(st.phase, StatementPhase::kFailed);
  EXPECT_NE(st.error.find("not supported"), std::string::npos) << st.error;
  auto after = engine_->Submit("select 1");
  EXPECT_EQ(Wait(*after).phase, StatementPhase::kSucceeded);
}

TEST_F(PostgresqlEngineTest, CancelStopsARunningStatement) {
  auto h = engine_->Submit("select pg_sleep(60)");
  ASSERT_TRUE(h.ok());
  std::this_thread::sleep_for(100ms);
  ASSERT_TRUE(engine_->Poll(*h)->running());
  ASSERT_TRUE(engine_->Cancel(*h).ok());
  auto st = Wait(*h);
  EXPECT_EQ(st.phase, StatementPhase::kCancelled) << st.error;
}

}  // namespace
}  // namespace sluice::warehouse
