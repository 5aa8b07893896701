// Behaviour the schema itself enforces, proven by writing rows.
#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include "common/uuid.h"
#include "support/test_database.h"

namespace sluice::testing {
namespace {

std::string NewId() { return common::Uuid::V4().ToString(); }

class SchemaRules : public ::testing::Test {
 protected:
  void SetUp() override {
    conn_ = std::make_unique<pqxx::connection>(db_.url());
    env_ = NewId();
    team_ = NewId();
    connector_ = NewId();
    Exec("INSERT INTO env (id, name, retention_configuration) VALUES ('" + env_ + "', 'e', '{}')");
    Exec("INSERT INTO team (id, name, env_id) VALUES ('" + team_ + "', 't', '" + env_ + "')");
    Exec(
        "INSERT INTO connector (id, name, connector_type, json_configuration, way, team_id, "
        "env_id) VALUES ('" +
        connector_ + "', 'c', 'postgresql', '{}', 'target', '" + team_ + "', '" + env_ + "')");
    datamodel_ = NewId();
    Exec("INSERT INTO datamodel (id, name, config) VALUES ('" + datamodel_ + "', 'd', '{}')");
  }
  void Exec(const std::string& sql) { pqxx::nontransaction(*conn_).exec(sql); }
  std::string InsertSubscription(bool requires_unique) {
    auto id = NewId();
    Exec(
        "INSERT INTO subscription (id, name, config, transform_config, datamodel_id, "
        "target_connector_id, error_table_enabled, target_table_name, "
        "requires_unique_destination) VALUES ('" +
        id + "', 's', '{}', '{}', '" + datamodel_ + "', '" + connector_ + "', false, 'orders', " +
        (requires_unique ? "true" : "false") + ")");
    return id;
  }

  TestDatabase db_;
  std::unique_ptr<pqxx::connection> conn_;
  std::string env_, team_, connector_, datamodel_;
};

TEST_F(SchemaRules, UniqueDestinationAppliesOnlyWhenRequired) {
  InsertSubscription(false);
  InsertSubscription(false);  // a shared destination is legitimate
  InsertSubscription(true);
  EXPECT_THROW(InsertSubscription(true), pqxx::unique_violation);
}

TEST_F(SchemaRules, CompletedBackfillItemMustSayRowsWritten) {
  auto run = NewId();
  Exec(
      "INSERT INTO backfill_run (id, source_connector_id, status, origin, truncate_history) "
      "VALUES ('" +
      run + "', '" + connector_ + "', 'running', 'pipeline', false)");
  auto item = [&](const std::string& status, const std::string& rows) {
    Exec(
        "INSERT INTO backfill_item (id, backfill_run_id, subscription_id, target_connector_id, "
        "source_table_name, target_table_name, position, status, rows_written, sequential_read) "
        "VALUES ('" +
        NewId() + "', '" + run + "', '" + NewId() + "', '" + connector_ +
        "', 'public.a', 'a', 0, '" + status + "', " + rows + ", false)");
  };
  item("queued", "NULL");
  item("completed", "0");
  EXPECT_THROW(item("completed", "NULL"), pqxx::check_violation);
}

TEST_F(SchemaRules, OneActiveBackfillRunPerSourceConnector) {
  auto run = [&](const std::string& status) {
    Exec(
        "INSERT INTO backfill_run (id, source_connector_id, status, origin, truncate_history) "
        "VALUES ('" +
        NewId() + "', '" + connector_ + "', '" + status + "', 'pipeline', false)");
  };
  run("done");
  run("done");
  run("running");
  EXPECT_THROW(run("running"), pqxx::unique_violation);
}

TEST_F(SchemaRules, OnlyOpenEventRowsFoldByFingerprint) {
  auto event = [&](const std::string& closed_at) {
    Exec(
        "INSERT INTO resource_event (id, ts, first_ts, closed_at, level, type, code, message, "
        "details, count, fingerprint, env_id, team_id, connector_id, connector_name) VALUES ('" +
        NewId() + "', now(), now(), " + closed_at +
        ", 'error', 'connector', 'worker.crashed', "
        "'m', '{}', 1, 'fp1', '" +
        env_ + "', '" + team_ + "', '" + connector_ + "', 'c')");
  };
  event("now()");
  event("now()");  // closed rows may repeat the fingerprint
  event("NULL");
  EXPECT_THROW(event("NULL"), pqxx::unique_violation);
}

TEST_F(SchemaRules, DeletingAConnectorKeepsItsEvidence) {
  auto sub = InsertSubscription(true);
  Exec(
      "INSERT INTO consumption_metric (id, subscription_id, topic, from_ts, to_ts, "
      "consumed_count, delivered_count, skipped_count, error_count) VALUES ('" +
      NewId() + "', '" + sub + "', 't', 0, 1, 1, 1, 0, 0)");
  Exec("DELETE FROM subscription WHERE id = '" + sub + "'");
  Exec("DELETE FROM connector WHERE id = '" + connector_ + "'");
  auto left = pqxx::nontransaction(*conn_).exec1(
      "SELECT count(*) FROM consumption_metric WHERE subscription_id = '" + sub + "'");
  EXPECT_EQ(left[0].as<int>(), 1);
}

TEST_F(SchemaRules, OccurrenceSeqIsMonotonic) {
  auto ev = NewId();
  Exec(
      "INSERT INTO resource_event (id, ts, first_ts, level, type, code, message, details, count, "
      "fingerprint, env_id, team_id, connector_id, connector_name) VALUES ('" +
      ev + "', now(), now(), 'info', 'lifecycle', 'connector.paused', 'm', '{}', 1, 'fp2', '" +
      env_ + "', '" + team_ + "', '" + connector_ + "', 'c')");
  for (int i = 1; i <= 3; ++i)
    Exec("INSERT INTO resource_event_occurrence (id, event_id, ts, count) VALUES ('" + NewId() +
         "', '" + ev + "', now(), " + std::to_string(i) + ")");
  auto rows =
      pqxx::nontransaction(*conn_).exec("SELECT seq FROM resource_event_occurrence ORDER BY count");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_LT(rows[0][0].as<long long>(), rows[1][0].as<long long>());
  EXPECT_LT(rows[1][0].as<long long>(), rows[2][0].as<long long>());
  Exec("DELETE FROM resource_event WHERE id = '" + ev + "'");  // occurrences cascade
  EXPECT_EQ(pqxx::nontransaction(*conn_)
                .exec1("SELECT count(*) FROM resource_event_occurrence")[0]
                .as<int>(),
            0);
}

}  // namespace
}  // namespace sluice::testing
