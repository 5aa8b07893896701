// A source and a target PostgreSQL database, a data-plane database with a
// source and a target connector, and helpers to make (table -> destination)
// pairs, trigger runs and compare tables.
#pragma once

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/types.h>
#include <chrono>
#include <filesystem>
#include <memory>
#include <pqxx/pqxx>
#include <string>
#include <thread>
#include <vector>

#include "backfill/launcher.h"
#include "backfill/trigger.h"
#include "store/database.h"
#include "support/test_database.h"

namespace sluice::backfill::testing {

class BackfillHarness {
 public:
  BackfillHarness();
  ~BackfillHarness();

  store::Database& db() { return *db_; }
  const std::string& plane_url() const { return plane_.url(); }
  const std::string& source_url() const { return source_.url(); }
  const std::string& target_url() const { return target_.url(); }
  const common::Uuid& source_id() const { return source_id_; }
  const common::Uuid& target_id() const { return target_id_; }
  const common::Uuid& team_id() const { return team_id_; }
  const std::filesystem::path& dir() const { return dir_; }

  // `rows` rows of (id bigint PK, label text, amount numeric(12,2), at timestamptz).
  void CreateSourceTable(const std::string& table, int rows);
  // A datamodel on source table `table` and a subscription into `target_table`.
  common::Uuid AddPair(const std::string& table, const std::string& target_table);
  // One run per source for these subscriptions (origin bulk).
  std::vector<CreatedRun> Trigger(const std::vector<common::Uuid>& subscriptions,
                                  bool truncate_history = false);

  void Source(const std::string& sql);
  void Target(const std::string& sql);
  // md5 over the table's rows in key order ("missing" when it does not exist).
  std::string Digest(const std::string& url, const std::string& table);
  std::int64_t Scalar(const std::string& url, const std::string& sql);
  // Occurrences of resource events with `code`.
  std::int64_t Events(const std::string& code) {
    return Scalar(plane_url(), "SELECT count(*) FROM resource_event WHERE code = '" + code + "'");
  }
  // SIGKILLs `item_id`'s loader once it has reported rows, and waits for a
  // new attempt to complete the item (`*done`): the first wait takes up to
  // `progress_limit`, the completion up to `completion_limit`.
  void KillTheLoaderMidItemThenAwaitANewAttempt(Launcher& launcher, const common::Uuid& item_id,
                                                std::chrono::seconds progress_limit,
                                                std::chrono::seconds completion_limit,
                                                BackfillItem* done) {
    ASSERT_TRUE(TickUntil(
        launcher, [&] { return Item(item_id).rows_written.value_or(0) > 0; }, progress_limit))
        << LoaderLogs();
    auto first = Item(item_id);
    ASSERT_EQ(first.status, ItemStatus::kRunning) << "still loading when killed";
    auto pid = launcher.LoaderPid(item_id);
    ASSERT_TRUE(pid);
    kill(*pid, SIGKILL);
    ASSERT_TRUE(TickUntil(
        launcher, [&] { return Events("backfill.attempt_lost") > 0; }, progress_limit));
    ASSERT_TRUE(TickUntil(
        launcher, [&] { return Item(item_id).status == ItemStatus::kCompleted; }, completion_limit))
        << LoaderLogs();
    *done = Item(item_id);
    EXPECT_NE(done->started_at, first.started_at) << "a new attempt";
  }
  // Ticks `launcher` until `pred` holds (true) or `limit` passes (false).
  template <typename Pred>
  static bool TickUntil(Launcher& launcher, Pred pred,
                        std::chrono::seconds limit = std::chrono::seconds(90)) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      auto st = launcher.Tick();
      EXPECT_TRUE(st.ok()) << st.message();
      if (pred()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }
  BackfillItem Item(const common::Uuid& id);
  BackfillRun RunRow(const common::Uuid& id);
  std::string LoaderLogs();

  // `sluice serve` on this harness's data plane (dir()/data, log dir()/serve.log),
  // with `args` after the common ones; StopServe sends SIGTERM and returns
  // whether it exited 0.
  pid_t StartServe(const std::vector<std::string>& args);
  bool StopServe(pid_t pid);
  // Polls until the run is done or `limit` passed; the last status read.
  RunStatus WaitForRun(const common::Uuid& run_id, std::chrono::seconds limit);

 private:
  sluice::testing::TestDatabase plane_, source_, target_;
  std::unique_ptr<store::Database> db_;
  common::Uuid source_id_, target_id_, team_id_, env_id_;
  std::filesystem::path dir_;
};

}  // namespace sluice::backfill::testing
