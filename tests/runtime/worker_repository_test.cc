// The worker table's write path against a real PostgreSQL: every report
// goes through Worker::accepts_reported_state under a row lock.
#include <gtest/gtest.h>

#include <pqxx/pqxx>
#include <thread>

#include "runtime/worker_repository.h"
#include "store/database.h"
#include "support/test_database.h"

namespace sluice::runtime {
namespace {

class WorkerRepositoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = std::make_unique<store::Database>(test_db_.url(), 8);
    connector_ = common::Uuid::V4();
    auto env = common::Uuid::V4().ToString(), team = common::Uuid::V4().ToString();
    db_->Transact([&](pqxx::work& tx) {
      tx.exec_params("INSERT INTO env (id, retention_configuration) VALUES ($1, '{}')", env);
      tx.exec_params("INSERT INTO team (id, name, env_id) VALUES ($1, 't', $2)", team, env);
      tx.exec_params(
          "INSERT INTO connector (id, name, connector_type, json_configuration, way, "
          "team_id, env_id) VALUES ($1, 'c', 'postgresql', '{}', 'source', $2, $3)",
          connector_.ToString(), team, env);
    });
  }
  Worker StartShard0() {
    return db_->Transact([&](pqxx::work& tx) {
      auto w = WorkerRepository::EnsureShards(tx, connector_, 1)[0];
      w.Start(common::Clock::now(), "h");
      WorkerRepository::Update(tx, w);
      return w;
    });
  }
  testing::TestDatabase test_db_;
  std::unique_ptr<store::Database> db_;
  common::Uuid connector_;
};

TEST_F(WorkerRepositoryTest, ShardsAreDenseFromZeroAndEnsureIsIdempotent) {
  auto first = db_->Transact(
      [&](pqxx::work& tx) { return WorkerRepository::EnsureShards(tx, connector_, 3); });
  auto again = db_->Transact(
      [&](pqxx::work& tx) { return WorkerRepository::EnsureShards(tx, connector_, 3); });
  ASSERT_EQ(first.size(), 3u);
  ASSERT_EQ(again.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(first[static_cast<std::size_t>(i)].shard_index, i);
    EXPECT_EQ(first[static_cast<std::size_t>(i)].id, again[static_cast<std::size_t>(i)].id);
  }
}

TEST_F(WorkerRepositoryTest, ConcurrentShardPlansNeverDoubleLaunchAShard) {
  std::vector<std::thread> planners;
  for (int i = 0; i < 4; ++i)
    planners.emplace_back([&] {
      db_->Transact([&](pqxx::work& tx) { WorkerRepository::EnsureShards(tx, connector_, 2); });
    });
  for (auto& t : planners) t.join();
  auto rows =
      db_->Transact([&](pqxx::work& tx) { return WorkerRepository::ForConnector(tx, connector_); });
  EXPECT_EQ(rows.size(), 2u);
}

TEST_F(WorkerRepositoryTest, StaleGenerationReportIsRejectedAndChangesNothing) {
  auto w = StartShard0();
  auto old_generation = w.launch_generation;
  db_->Transact([&](pqxx::work& tx) {
    auto current = *WorkerRepository::FindForUpdate(tx, w.id);
    current.Start(common::Clock::now(), "h2");  // replaced pod
    WorkerRepository::Update(tx, current);
  });
  auto result = db_->Transact([&](pqxx::work& tx) {
    return WorkerRepository::ApplyReport(tx, w.id, {old_generation, WorkerState::kError, "late"},
                                         common::Clock::now());
  });
  EXPECT_EQ(result.status().code(), common::Code::kConflict);
  auto after = db_->Transact([&](pqxx::work& tx) { return *WorkerRepository::Find(tx, w.id); });
  EXPECT_EQ(after.state, WorkerState::kStarting);
  EXPECT_FALSE(after.reason);
}

TEST_F(WorkerRepositoryTest, TimestampsRoundTripAsNaiveUtc) {
  auto w = StartShard0();
  auto stored = db_->Transact([&](pqxx::work& tx) { return *WorkerRepository::Find(tx, w.id); });
  ASSERT_TRUE(stored.launched_at);
  auto diff = *stored.launched_at - *w.launched_at;
  EXPECT_LT(std::chrono::abs(diff), std::chrono::microseconds(2));
  auto naive_matches_utc = db_->Transact([&](pqxx::work& tx) {
    return tx
        .exec_params1(
            "SELECT abs(extract(epoch FROM (now() AT TIME ZONE 'UTC') - launched_at)) < 60 "
            "FROM worker WHERE id = $1",
            w.id.ToString())[0]
        .as<bool>();
  });
  EXPECT_TRUE(naive_matches_utc);
}

// A stop request racing a LIVE report: under the row lock the outcome is
// always STOPPING (either the report lands first and the stop follows, or the
// stop lands first and the report is refused); never LIVE with a stop lost.
TEST_F(WorkerRepositoryTest, ConcurrentReportAndStopSerialise) {
  for (int round = 0; round < 25; ++round) {
    auto w = StartShard0();
    std::thread reporter([&] {
      db_->Transact([&](pqxx::work& tx) {
        (void)WorkerRepository::ApplyReport(tx, w.id, {w.launch_generation, WorkerState::kLive, {}},
                                            common::Clock::now());
      });
    });
    std::thread stopper([&] {
      db_->Transact([&](pqxx::work& tx) {
        auto current = *WorkerRepository::FindForUpdate(tx, w.id);
        current.RequestStop(common::Clock::now());
        WorkerRepository::Update(tx, current);
      });
    });
    reporter.join();
    stopper.join();
    auto after = db_->Transact([&](pqxx::work& tx) { return *WorkerRepository::Find(tx, w.id); });
    ASSERT_EQ(after.state, WorkerState::kStopping) << "round " << round;
    ASSERT_TRUE(after.stop_requested_at);
  }
}

TEST_F(WorkerRepositoryTest, HundredWorkersHeartbeatAtOnceWithoutDeadlock) {
  auto workers = db_->Transact([&](pqxx::work& tx) {
    auto ws = WorkerRepository::EnsureShards(tx, connector_, 100);
    for (auto& w : ws) {
      w.Start(common::Clock::now(), "h");
      WorkerRepository::Update(tx, w);
    }
    return ws;
  });
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 5; ++round)
        for (std::size_t i = static_cast<std::size_t>(t); i < workers.size(); i += 8) {
          db_->Transact([&](pqxx::work& tx) {
            if (WorkerRepository::Heartbeat(tx, workers[i].id, workers[i].launch_generation,
                                            std::nullopt, common::Clock::now())
                    .ok())
              ++ok;
          });
        }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 500);
}

}  // namespace
}  // namespace sluice::runtime
