// The backfill endpoints over real HTTP and PostgreSQL: trigger (one run per
// source, author denormalised, items in position order), 409 for a second
// active run, detail, progress, listing, cancel and the per-source kill
// switch, and who may see what.
#include <gtest/gtest.h>

#include "api/api_harness.h"

namespace sluice::testing {
namespace {

class BackfillsApi : public ::testing::Test {
 protected:
  void SetUp() override {
    env_ = h_.CreateEnv("e");
    team_ = h_.CreateTeam(env_, "t", h_.root());
    source_ = Connector("src", "source");
    target_ = Connector("dst", "target");
    other_source_ = Connector("src2", "source");
    pipeline_ = common::Uuid::V4();
    h_.db().Transact([&](pqxx::work& tx) {
      tx.exec_params(
          "INSERT INTO pipeline (id, name, json_configuration, version, team_id, env_id, "
          "source_connector_id, target_connector_id) VALUES ($1, 'p', '{}', 1, $2, $3, $4, $5)",
          pipeline_.ToString(), team_.ToString(), env_.ToString(), source_.ToString(),
          target_.ToString());
    });
    a_ = Pair(source_, "a", "a_copy", pipeline_);
    b_ = Pair(source_, "b", "b_copy", pipeline_);
    c_ = Pair(other_source_, "c", "c_copy", std::nullopt);
  }
  common::Uuid Connector(const std::string& name, const std::string& way) {
    auto id = common::Uuid::V4();
    h_.db().Transact([&](pqxx::work& tx) {
      tx.exec_params(
          "INSERT INTO connector (id, name, connector_type, json_configuration, way, team_id, "
          "env_id) VALUES ($1, $2, 'postgresql', '{}', $3, $4, $5)",
          id.ToString(), name, way, team_.ToString(), env_.ToString());
    });
    return id;
  }
  common::Uuid Pair(const common::Uuid& source, const std::string& table,
                    const std::string& target_table, std::optional<common::Uuid> pipeline) {
    auto sub = common::Uuid::V4();
    h_.db().Transact([&](pqxx::work& tx) {
      auto dm = common::Uuid::V4().ToString();
      tx.exec_params(
          "INSERT INTO datamodel (id, name, config, source_connector_id, source_schema, "
          "source_table) VALUES ($1, $2, '{}', $3, 'public', $2)",
          dm, table, source.ToString());
      tx.exec_params(
          "INSERT INTO subscription (id, name, config, transform_config, datamodel_id, "
          "target_connector_id, pipeline_id, error_table_enabled, target_table_name, "
          "requires_unique_destination) VALUES ($1, $2, '{}', '{}', $3, $4, $5, false, $6, "
          "true)",
          sub.ToString(), table, dm, target_.ToString(),
          pipeline ? std::optional<std::string>(pipeline->ToString()) : std::nullopt, target_table);
    });
    return sub;
  }
  HttpResult Post(const std::string& path, const Json& body, const std::string& token = "") {
    return h_.Call("POST", "/api/v1" + path, body, token.empty() ? h_.root().token : token);
  }
  HttpResult Get(const std::string& path, const std::string& token = "") {
    return h_.Call("GET", "/api/v1" + path, nullptr, token.empty() ? h_.root().token : token);
  }

  ApiHarness h_;
  common::Uuid env_, team_, source_, target_, other_source_, pipeline_, a_, b_, c_;
};

TEST_F(BackfillsApi, APipelineTriggerCreatesOneRunWithItemsInPositionOrder) {
  auto r = Post("/backfills", {{"origin", "pipeline"},
                               {"pipeline_id", pipeline_.ToString()},
                               {"truncate_history", true},
                               {"tables", {{b_.ToString(), {{"partition_column", "id"}}}}}});
  ASSERT_EQ(r.status, 201) << r.raw;
  ASSERT_EQ(r.body["runs"].size(), 1u);
  auto run = r.body["runs"][0];
  EXPECT_EQ(run["status"], "running");
  EXPECT_EQ(run["origin"], "pipeline");
  EXPECT_EQ(run["truncate_history"], true);
  EXPECT_EQ(run["triggered_by_email"], h_.root().email);
  EXPECT_EQ(run["stalled_since"], nullptr);
  ASSERT_EQ(run["items"].size(), 2u);
  EXPECT_EQ(run["items"][0]["position"], 0);
  EXPECT_EQ(run["items"][0]["source_table_name"], "public.a");
  EXPECT_EQ(run["items"][0]["target_table_name"], "a_copy");
  EXPECT_EQ(run["items"][0]["rows_written"], nullptr) << "not measured, never 0";
  EXPECT_EQ(run["items"][0]["checked_at"], nullptr);
  EXPECT_EQ(run["items"][0]["pipeline_id"], pipeline_.ToString());
  EXPECT_EQ(run["items"][1]["partition_column"], "id");
  EXPECT_EQ(run["counts"]["queued"], 2);
}

TEST_F(BackfillsApi, ABulkTriggerSpanningTwoSourcesCreatesOneRunEach) {
  auto r = Post("/backfills",
                {{"origin", "bulk"}, {"subscription_ids", {a_.ToString(), c_.ToString()}}});
  ASSERT_EQ(r.status, 201) << r.raw;
  EXPECT_EQ(r.body["runs"].size(), 2u);
  EXPECT_EQ(h_.Count("SELECT count(*) FROM backfill_run WHERE origin = 'bulk'"), 2);
}

TEST_F(BackfillsApi, ASecondActiveRunForTheSameSourceIs409AndCreatesNothing) {
  ASSERT_EQ(
      Post("/backfills", {{"origin", "subscription"}, {"subscription_id", a_.ToString()}}).status,
      201);
  auto again = Post("/backfills",
                    {{"origin", "bulk"}, {"subscription_ids", {c_.ToString(), b_.ToString()}}});
  EXPECT_EQ(again.status, 409) << again.raw;
  EXPECT_EQ(again.body["error"]["code"], "backfill_active");
  EXPECT_EQ(h_.Count("SELECT count(*) FROM backfill_run"), 1) << "c's run rolled back too";
}

// "internal" is the operator path: a superuser's run that records no actor
// (triggered_by_* NULL), while user_log still says who asked. A team
// member, even one who may write the pairs, cannot take it.
TEST_F(BackfillsApi, InternalOriginIsTheOperatorPathWithNoActorOfRecord) {
  auto member = h_.CreateUser("member@example.com");
  h_.Grant(env_, member, "member");
  h_.AddToTeam(team_, member, true);
  auto refused = Post("/backfills", {{"origin", "internal"}, {"subscription_ids", {a_.ToString()}}},
                      member.token);
  EXPECT_EQ(refused.status, 403) << refused.raw;
  EXPECT_EQ(Post("/backfills", {{"origin", "internal"}}).status, 422);
  auto r = Post("/backfills", {{"origin", "internal"}, {"subscription_ids", {a_.ToString()}}});
  ASSERT_EQ(r.status, 201) << r.raw;
  auto run = r.body["runs"][0];
  EXPECT_EQ(run["origin"], "internal");
  EXPECT_EQ(run["triggered_by_email"], nullptr);
  EXPECT_EQ(h_.Count("SELECT count(*) FROM backfill_run WHERE origin = 'internal' AND "
                     "triggered_by_user_id IS NULL AND triggered_by_email IS NULL"),
            1);
  EXPECT_EQ(h_.Count("SELECT count(*) FROM user_log WHERE action = 'backfill' AND user_email = '" +
                     h_.root().email + "'"),
            1);
}

TEST_F(BackfillsApi, BadTriggersAre422) {
  EXPECT_EQ(Post("/backfills", {{"origin", "warehouse"}}).status, 422);
  EXPECT_EQ(Post("/backfills", {{"origin", "pipeline"}}).status, 422);
  auto both = Post(
      "/backfills",
      {{"origin", "bulk"},
       {"subscription_ids", {a_.ToString()}},
       {"tables", {{a_.ToString(), {{"partition_column", "id"}, {"sequential_read", true}}}}}});
  EXPECT_EQ(both.status, 422) << both.raw;
  EXPECT_EQ(Post("/backfills",
                 {{"origin", "subscription"}, {"subscription_id", common::Uuid::V4().ToString()}})
                .status,
            404);
}

TEST_F(BackfillsApi, DetailProgressListAndCancel) {
  auto r = Post("/backfills", {{"origin", "connector"}, {"connector_id", source_.ToString()}});
  ASSERT_EQ(r.status, 201) << r.raw;
  auto id = r.body["runs"][0]["id"].get<std::string>();
  EXPECT_EQ(r.body["runs"][0]["items"].size(), 2u);
  auto detail = Get("/backfills/" + id);
  ASSERT_EQ(detail.status, 200);
  EXPECT_EQ(detail.body["items"].size(), 2u);
  // A report arrives for the first item: progress and ETA follow.
  h_.db().Transact([&](pqxx::work& tx) {
    tx.exec_params(
        "UPDATE backfill_item SET status = 'running', started_at = (now() AT TIME ZONE 'UTC') - "
        "interval '10 seconds', checked_at = now(), approximate_row_count = 1000, rows_written "
        "= 250, last_report_at = now() WHERE backfill_run_id = $1 AND position = 0",
        id);
    tx.exec_params(
        "UPDATE backfill_item SET approximate_row_count = 1000 WHERE backfill_run_id = "
        "$1 AND position = 1",
        id);
  });
  auto p = Get("/backfills/" + id + "/progress");
  ASSERT_EQ(p.status, 200) << p.raw;
  EXPECT_EQ(p.body["rows_written"], 250);
  EXPECT_EQ(p.body["approximate_row_count"], 2000);
  EXPECT_DOUBLE_EQ(p.body["percent"].get<double>(), 12.5);
  ASSERT_TRUE(p.body["eta_seconds"].is_number()) << p.raw;
  EXPECT_GT(p.body["eta_seconds"].get<int>(), 0);
  auto list = Get("/teams/" + team_.ToString() + "/backfills?status=running");
  ASSERT_EQ(list.status, 200) << list.raw;
  EXPECT_EQ(list.body["items"].size(), 1u);
  auto cancelled = Post("/backfills/" + id + "/cancel", Json::object());
  ASSERT_EQ(cancelled.status, 200) << cancelled.raw;
  EXPECT_EQ(cancelled.body["status"], "cancelled");
  EXPECT_EQ(cancelled.body["items"][1]["status"], "cancelled") << "the queued one never ran";
  EXPECT_EQ(cancelled.body["items"][0]["status"], "running") << "the launcher stops it";
  EXPECT_EQ(Post("/backfills/" + id + "/cancel", Json::object()).status, 409);
  // The source is free again.
  EXPECT_EQ(
      Post("/backfills", {{"origin", "subscription"}, {"subscription_id", a_.ToString()}}).status,
      201);
}

TEST_F(BackfillsApi, TheKillSwitchCancelsTheSourcesRunningRun) {
  EXPECT_EQ(Post("/connectors/" + source_.ToString() + "/backfills/cancel", Json::object()).status,
            404);
  auto r = Post("/backfills", {{"origin", "subscription"}, {"subscription_id", a_.ToString()}});
  ASSERT_EQ(r.status, 201);
  auto k = Post("/connectors/" + source_.ToString() + "/backfills/cancel", Json::object());
  ASSERT_EQ(k.status, 200) << k.raw;
  EXPECT_EQ(k.body["id"], r.body["runs"][0]["id"]);
  EXPECT_EQ(k.body["status"], "cancelled");
}

TEST_F(BackfillsApi, AnOutsiderSeesNothing) {
  auto r = Post("/backfills", {{"origin", "subscription"}, {"subscription_id", a_.ToString()}});
  ASSERT_EQ(r.status, 201);
  auto outsider = h_.CreateUser("outsider@example.com");
  auto id = r.body["runs"][0]["id"].get<std::string>();
  EXPECT_EQ(Get("/backfills/" + id, outsider.token).status, 404);
  EXPECT_EQ(Post("/backfills/" + id + "/cancel", Json::object(), outsider.token).status, 404);
  EXPECT_EQ(Post("/backfills", {{"origin", "subscription"}, {"subscription_id", b_.ToString()}},
                 outsider.token)
                .status,
            404);
}

}  // namespace
}  // namespace sluice::testing
