#include "metrics/retention.h"

#include <atomic>
#include <thread>

#include "metrics_fixture.h"

namespace sluice::metrics {
namespace {

using namespace std::chrono_literals;

class RetentionTest : public MetricsDbTest {
 protected:
  // n rows per raw table with created_at = `at` (bulk, straight SQL).
  void Bulk(int n, common::TimePoint at) {
    db_.Transact([&](pqxx::work& tx) {
      tx.exec_params(
          "INSERT INTO production_metric (id, from_ts, to_ts, topic, events, created_at)"
          " SELECT gen_random_uuid(), 0, 1, 't', '{\"total\":0,\"r\":0,\"c\":0,\"u\":0,\"d\":0}',"
          " " SLUICE_SQL_TS("$2") " FROM generate_series(1, $1)",
          n, ToEpochMicros(at));
      tx.exec_params(
          "INSERT INTO consumption_metric (id, subscription_id, topic, from_ts, to_ts,"
          " consumed_count, delivered_count, skipped_count, error_count, created_at)"
          " SELECT gen_random_uuid(), gen_random_uuid(), 't', 0, 1, 0, 0, 0, 0,"
          " " SLUICE_SQL_TS("$2") " FROM generate_series(1, $1)",
          n, ToEpochMicros(at));
    });
  }

  RetentionState State(const std::string& table) {
    return db_.Transact([&](pqxx::work& tx) {
      for (auto& s : RawRetention::ReadStates(tx)) {
        if (s.table == table) return s;
      }
      ADD_FAILURE() << "no state row for " << table;
      return RetentionState{};
    });
  }

  bool IndexValid(const std::string& index) {
    return db_.Transact([&](pqxx::work& tx) {
      auto r = tx.exec_params("SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass($1)",
                              index);
      return !r.empty() && r[0][0].as<bool>();
    });
  }

  RetentionOptions Opts(std::chrono::seconds retention, int batch = 100, int max_batches = 100) {
    RetentionOptions o;
    o.retention = retention;
    o.batch_size = batch;
    o.max_batches = max_batches;
    return o;
  }
};

TEST_F(RetentionTest, RowsOlderThanTheRetentionArePrunedAndRecentOnesKept) {
  Bulk(250, now_ - 8 * 24h);
  Bulk(40, now_ - 6 * 24h);
  auto results = RawRetention(db_, Opts(7 * 24h)).RunOnce(now_);
  ASSERT_EQ(results.size(), 2u);
  for (const auto& r : results) {
    EXPECT_TRUE(r.status.ok()) << r.status.ToString();
    EXPECT_EQ(r.deleted, 250) << r.table;
    EXPECT_TRUE(r.caught_up);
  }
  EXPECT_EQ(Count("SELECT COUNT(*) FROM production_metric"), 40);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM consumption_metric"), 40);
  auto s = State("production_metric");
  EXPECT_EQ(s.tracked_since, now_);
  EXPECT_EQ(s.caught_up_at, now_);
  EXPECT_FALSE(s.failed_at.has_value());
}

TEST_F(RetentionTest, BoundedBatchesLeaveTheRestForTheNextCycleWithoutCatchingUp) {
  Bulk(250, now_ - 30 * 24h);
  RawRetention retention(db_, Opts(24h, 50, 2));
  auto first = retention.RunOnce(now_);
  EXPECT_EQ(first[0].deleted, 100);
  EXPECT_FALSE(first[0].caught_up);
  EXPECT_FALSE(State("production_metric").caught_up_at.has_value());
  EXPECT_EQ(Count("SELECT COUNT(*) FROM production_metric"), 150);
  auto later = now_ + 1min;
  retention.RunOnce(later);
  auto last = retention.RunOnce(later + 1min);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM production_metric"), 0);
  EXPECT_TRUE(last[0].caught_up);
  auto s = State("production_metric");
  EXPECT_EQ(s.tracked_since, now_);  // first sight, kept
  EXPECT_EQ(s.caught_up_at, later + 1min);
}

TEST_F(RetentionTest, PruningUnderIngestLoadKeepsEveryRecentRow) {
  Bulk(3000, now_ - 10 * 24h);
  std::atomic<bool> done = false;
  std::atomic<int> written = 0;
  std::thread writer([&] {
    store::Database own(tdb_.url(), 1);
    while (!done.load() || written.load() < 200) {
      ProductionSnapshot s;
      s.to_ts = Ms(now_);
      s.from_ts = s.to_ts - 1000;
      s.topic = "live";
      s.events = {1, 0, 1, 0, 0, std::nullopt};
      own.Transact([&](pqxx::work& tx) { ASSERT_TRUE(IngestProduction(tx, {s}, now_).ok()); });
      ++written;
    }
  });
  auto results = RawRetention(db_, Opts(24h, 100, 1000)).RunOnce(now_);
  done = true;
  writer.join();
  EXPECT_EQ(results[0].deleted, 3000);
  EXPECT_EQ(Count("SELECT COUNT(*) FROM production_metric WHERE topic = 'live'"), written.load());
  EXPECT_EQ(Count("SELECT COUNT(*) FROM production_metric WHERE topic = 't'"), 0);
}

TEST_F(RetentionTest, InvalidCreatedAtIndexIsRebuiltConcurrently) {
  db_.Transact([](pqxx::work& tx) {
    tx.exec(
        "UPDATE pg_index SET indisvalid = false"
        " WHERE indexrelid = 'ix_production_metric_created_at'::regclass");
  });
  ASSERT_FALSE(IndexValid("ix_production_metric_created_at"));
  auto results = RawRetention(db_, Opts(24h)).RunOnce(now_);
  EXPECT_TRUE(results[0].index_rebuilt);
  EXPECT_FALSE(results[1].index_rebuilt);
  EXPECT_TRUE(IndexValid("ix_production_metric_created_at"));
  auto s = State("production_metric");
  EXPECT_FALSE(s.index_invalid_since.has_value());
  EXPECT_FALSE(s.index_error.has_value());
}

TEST_F(RetentionTest, MissingCreatedAtIndexIsRecreated) {
  db_.Transact([](pqxx::work& tx) { tx.exec("DROP INDEX ix_consumption_metric_created_at"); });
  auto results = RawRetention(db_, Opts(24h)).RunOnce(now_);
  EXPECT_TRUE(results[1].index_rebuilt);
  EXPECT_TRUE(IndexValid("ix_consumption_metric_created_at"));
}

TEST_F(RetentionTest, FailedIndexBuildIsRecordedAsInvalidSince) {
  // A table squatting on the index's name makes CREATE INDEX fail for real.
  db_.Transact([](pqxx::work& tx) {
    tx.exec("DROP INDEX ix_production_metric_created_at");
    tx.exec("CREATE TABLE ix_production_metric_created_at (x int)");
  });
  RawRetention(db_, Opts(24h)).RunOnce(now_);
  auto s = State("production_metric");
  EXPECT_EQ(s.index_invalid_since, now_);
  ASSERT_TRUE(s.index_error.has_value());
  EXPECT_NE(s.index_error->find("ix_production_metric_created_at"), std::string::npos)
      << *s.index_error;
  // Still failing a minute later: invalid_since keeps the first sighting.
  RawRetention(db_, Opts(24h)).RunOnce(now_ + 1min);
  EXPECT_EQ(State("production_metric").index_invalid_since, now_);
  db_.Transact([](pqxx::work& tx) { tx.exec("DROP TABLE ix_production_metric_created_at"); });
  RawRetention(db_, Opts(24h)).RunOnce(now_ + 2min);
  s = State("production_metric");
  EXPECT_FALSE(s.index_invalid_since.has_value());
  EXPECT_FALSE(s.index_error.has_value());
}

TEST_F(RetentionTest, PruneFailureIsRecordedAndOnlyRetentionZeroClearsIt) {
  db_.Transact([](pqxx::work& tx) {
    tx.exec("ALTER TABLE consumption_metric RENAME TO consumption_metric_away");
  });
  auto results = RawRetention(db_, Opts(24h)).RunOnce(now_);
  EXPECT_TRUE(results[0].status.ok());
  EXPECT_FALSE(results[1].status.ok());
  auto s = State("consumption_metric");
  EXPECT_EQ(s.failed_at, now_);
  ASSERT_TRUE(s.error.has_value());
  EXPECT_NE(s.error->find("pqxx::"), std::string::npos) << *s.error;  // the exception type
  EXPECT_NE(s.error->find("does not exist"), std::string::npos) << *s.error;
  EXPECT_LE(s.error->size(), RawRetention::kMaxErrorChars);
  db_.Transact([](pqxx::work& tx) {
    tx.exec("ALTER TABLE consumption_metric_away RENAME TO consumption_metric");
  });
  // A later success does not clear the failure...
  RawRetention(db_, Opts(24h)).RunOnce(now_ + 1min);
  s = State("consumption_metric");
  EXPECT_EQ(s.failed_at, now_);
  EXPECT_EQ(s.caught_up_at, now_ + 1min);
  // ...retention 0 does, and deletes nothing.
  Bulk(5, now_ - 400 * 24h);
  auto off = RawRetention(db_, Opts(0s)).RunOnce(now_ + 2min);
  EXPECT_EQ(off[1].deleted, 0);
  EXPECT_FALSE(State("consumption_metric").failed_at.has_value());
  EXPECT_EQ(Count("SELECT COUNT(*) FROM consumption_metric"), 5);
}

TEST(RetentionError, ErrorIsTheTypeAndFirstLineCutTo500Characters) {
  std::runtime_error e("first line " + std::string(1000, 'x') + "\nsecond line");
  auto text = RawRetention::DescribeError(e);
  EXPECT_EQ(text.size(), 500u);
  EXPECT_EQ(text.rfind("std::runtime_error: first line ", 0), 0u) << text;
  EXPECT_EQ(RawRetention::DescribeError(std::runtime_error("a\nb")), "std::runtime_error: a");
}

}  // namespace
}  // namespace sluice::metrics
