// Heartbeats written together (group commit) against a real PostgreSQL: a
// batch stamps every row whose generation matches in one statement, refuses
// a replaced generation alone, and callers arriving while a batch is being
// written share the next one.
#include "runtime/heartbeat_batcher.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <pqxx/pqxx>
#include <thread>

#include "runtime/worker_repository.h"
#include "support/test_database.h"

namespace sluice::runtime {
namespace {

using namespace std::chrono_literals;

class HeartbeatBatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = std::make_unique<store::Database>(test_db_.url(), 8);
    auto connector = common::Uuid::V4();
    auto env = common::Uuid::V4().ToString(), team = common::Uuid::V4().ToString();
    workers_ = db_->Transact([&](pqxx::work& tx) {
      tx.exec_params("INSERT INTO env (id, retention_configuration) VALUES ($1, '{}')", env);
      tx.exec_params("INSERT INTO team (id, name, env_id) VALUES ($1, 't', $2)", team, env);
      tx.exec_params(
          "INSERT INTO connector (id, name, connector_type, json_configuration, way, "
          "team_id, env_id) VALUES ($1, 'c', 'postgresql', '{}', 'source', $2, $3)",
          connector.ToString(), team, env);
      auto shards = WorkerRepository::EnsureShards(tx, connector, kWorkers);
      for (auto& w : shards) {
        w.Start(common::Clock::now(), "h");
        WorkerRepository::Update(tx, w);
      }
      return shards;
    });
  }
  std::string Stamp(const Worker& w) {
    pqxx::connection c(test_db_.url());
    auto r = pqxx::nontransaction(c).exec_params(
        "SELECT coalesce(last_heartbeat_at::text, '') FROM worker WHERE id = $1", w.id.ToString());
    return r[0][0].c_str();
  }
  static constexpr int kWorkers = 20;
  testing::TestDatabase test_db_;
  std::unique_ptr<store::Database> db_;
  std::vector<Worker> workers_;
};

TEST_F(HeartbeatBatcherTest, ALoneBeatStampsItsRow) {
  HeartbeatBatcher batcher(*db_);
  EXPECT_EQ(Stamp(workers_[0]), "");
  EXPECT_TRUE(batcher.Beat(workers_[0].id, workers_[0].launch_generation, std::nullopt,
                           common::Clock::now()));
  EXPECT_NE(Stamp(workers_[0]), "");
  EXPECT_EQ(Stamp(workers_[1]), "");
  EXPECT_FALSE(
      batcher.Beat(workers_[1].id, common::Uuid::V4(), std::nullopt, common::Clock::now()));
  EXPECT_EQ(Stamp(workers_[1]), "");
}

TEST_F(HeartbeatBatcherTest, ALiveBeatOnARowMarkedStaleTakesTheLockedPathThatRestoresLive) {
  HeartbeatBatcher batcher(*db_);
  const auto& w = workers_[0];
  db_->Transact([&](pqxx::work& tx) {
    auto row = *WorkerRepository::FindForUpdate(tx, w.id);
    row.MarkStale(common::Clock::now(), 90s);
    WorkerRepository::Update(tx, row);
  });
  // The batch stamps only what has nothing to restore: an ERROR beat does.
  EXPECT_TRUE(batcher.Beat(w.id, w.launch_generation, WorkerState::kError, common::Clock::now()));
  EXPECT_FALSE(batcher.Beat(w.id, w.launch_generation, WorkerState::kLive, common::Clock::now()));
  auto restored = db_->Transact([&](pqxx::work& tx) {
    EXPECT_TRUE(WorkerRepository::Heartbeat(tx, w.id, w.launch_generation, WorkerState::kLive,
                                            common::Clock::now())
                    .ok());
    return *WorkerRepository::Find(tx, w.id);
  });
  EXPECT_EQ(restored.state, WorkerState::kLive);
  EXPECT_FALSE(restored.reason.has_value());
  // Now LIVE, the next LIVE beat is the batch's again.
  EXPECT_TRUE(batcher.Beat(w.id, w.launch_generation, WorkerState::kLive, common::Clock::now()));
}

TEST_F(HeartbeatBatcherTest, BeatsArrivingDuringAWriteShareOneStatementAndAStaleOneIsRefusedAlone) {
  HeartbeatBatcher batcher(*db_);
  // Hold worker 0's row so the first batch waits in the database while the
  // others arrive: they must all gather into the one next batch.
  pqxx::connection blocker(test_db_.url());
  pqxx::work hold(blocker);
  hold.exec_params("SELECT 1 FROM worker WHERE id = $1 FOR UPDATE", workers_[0].id.ToString());
  std::thread first([&] {
    batcher.Beat(workers_[0].id, workers_[0].launch_generation, std::nullopt, common::Clock::now());
  });
  std::this_thread::sleep_for(300ms);
  std::vector<std::thread> rest;
  std::atomic<int> taken{0}, refused{0};
  for (int i = 1; i < kWorkers; ++i) {
    rest.emplace_back([&, i] {
      // Worker 5 beats with a generation that was replaced.
      auto generation = i == 5 ? common::Uuid::V4() : workers_[i].launch_generation;
      (batcher.Beat(workers_[i].id, generation, std::nullopt, common::Clock::now()) ? taken
                                                                                    : refused)++;
    });
  }
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(batcher.batches_written(), 0);
  hold.commit();
  first.join();
  for (auto& t : rest) t.join();
  EXPECT_EQ(batcher.batches_written(), 2);
  EXPECT_EQ(taken.load(), kWorkers - 2);
  EXPECT_EQ(refused.load(), 1);
  for (int i = 0; i < kWorkers; ++i) EXPECT_EQ(Stamp(workers_[i]).empty(), i == 5) << i;
}

TEST_F(HeartbeatBatcherTest, ManyConcurrentBeatsOnTheSameRowsNeverDeadlock) {
  // Two batchers stand for two back ends writing overlapping batches.
  HeartbeatBatcher a(*db_), b(*db_);
  std::vector<std::thread> threads;
  std::atomic<int> taken{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      auto& batcher = t % 2 ? a : b;
      for (int round = 0; round < 25; ++round)
        for (int i = 0; i < kWorkers; i += 1 + t % 3)
          if (batcher.Beat(workers_[i].id, workers_[i].launch_generation, std::nullopt,
                           common::Clock::now()))
            ++taken;
    });
  }
  for (auto& t : threads) t.join();
  int expected = 0;
  for (int t = 0; t < 8; ++t) expected += 25 * ((kWorkers + t % 3) / (1 + t % 3));
  EXPECT_EQ(taken.load(), expected);
}

}  // namespace
}  // namespace sluice::runtime
