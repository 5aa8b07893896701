// The Monitoring listing over real HTTP and PostgreSQL: errors only by
// default, level filters, folded counts with first/last seen, keyset paging
// on ts, the four scopes, and 404 outside the team.
#include <set>

#include "monitoring/monitoring_harness.h"

namespace sluice::testing {
namespace {

using events::Level;
using namespace std::chrono_literals;

class EventsApi : public MonitoringHarness {
 protected:
  std::vector<std::string> Codes(const HttpResult& r) {
    std::vector<std::string> out;
    for (const auto& e : r.body["items"]) out.push_back(e["code"]);
    return out;
  }
  common::TimePoint t0_ = std::chrono::floor<std::chrono::seconds>(common::Clock::now()) - 1h;
};

TEST_F(EventsApi, DefaultIsErrorsOnlyNewestFirstWithFoldedCountAndFirstLastSeen) {
  for (int i = 0; i < 3; ++i)
    Record(Level::kError, "worker.crash", "exit code 137 restart " + std::to_string(i),
           t0_ + std::chrono::seconds(10 * i));
  Record(Level::kWarn, "worker.slow", "slow", t0_ + 40s);
  Record(Level::kInfo, "worker.started", "ok", t0_ + 50s);
  Record(Level::kCritical, "target.gone", "connection refused", t0_ + 60s, datamodel_,
         subscription_);

  auto r = Get("/api/v1/connectors/" + source_ + "/events");
  ASSERT_EQ(r.status, 200) << r.body.dump();
  // The connector view holds its own and its datamodels' events; the
  // subscription event's connector is the target, so it is not here.
  EXPECT_EQ(Codes(r), (std::vector<std::string>{"worker.crash"}));
  EXPECT_EQ(r.body["levels"], Json({"critical", "error"}));
  const auto& crash = r.body["items"][0];
  EXPECT_EQ(crash["count"], 3);
  EXPECT_EQ(crash["first_ts"], common::FormatIso8601(t0_));
  EXPECT_EQ(crash["ts"], common::FormatIso8601(t0_ + 20s));
  EXPECT_EQ(crash["details"]["code"], "worker.crash");
  EXPECT_EQ(crash["level"], "error");
  EXPECT_EQ(crash["connector_name"], "src");
  EXPECT_TRUE(crash["closed_at"].is_null());
  EXPECT_TRUE(r.body["next_cursor"].is_null());

  auto target = Get("/api/v1/connectors/" + target_ + "/events");
  ASSERT_EQ(target.status, 200);
  EXPECT_EQ(Codes(target), (std::vector<std::string>{"target.gone"}));
  EXPECT_EQ(target.body["items"][0]["level"], "critical");
}

TEST_F(EventsApi, LevelFilterSelectsExactlyTheLevelsAsked) {
  Record(Level::kError, "a.error", "x", t0_ + 1s);
  Record(Level::kWarn, "a.warn", "x", t0_ + 2s);
  Record(Level::kInfo, "a.info", "x", t0_ + 3s);
  Record(Level::kCritical, "a.critical", "x", t0_ + 4s);
  std::string path = "/api/v1/connectors/" + source_ + "/events";
  EXPECT_EQ(Codes(Get(path + "?level=warn")), (std::vector<std::string>{"a.warn"}));
  EXPECT_EQ(Codes(Get(path + "?level=info,warn")), (std::vector<std::string>{"a.info", "a.warn"}));
  EXPECT_EQ(Codes(Get(path + "?level=all")),
            (std::vector<std::string>{"a.critical", "a.info", "a.warn", "a.error"}));
  EXPECT_EQ(Codes(Get(path)), (std::vector<std::string>{"a.critical", "a.error"}));
  auto bad = Get(path + "?level=debug");
  EXPECT_EQ(bad.status, 422);
  EXPECT_EQ(bad.body["error"]["code"], "invalid_field");
  EXPECT_EQ(Get(path + "?level=,").status, 422);
  // A misspelt filter is an error, not the default page.
  auto misspelt = Get(path + "?levels=warn");
  EXPECT_EQ(misspelt.status, 422);
  EXPECT_EQ(misspelt.body["error"]["code"], "unknown_field");
  EXPECT_NE(misspelt.body["error"]["message"].get<std::string>().find("levels"), std::string::npos);
}

TEST_F(EventsApi, PagingOnTsNeitherRepeatsNorSkipsEvenWhenNewEventsArrive) {
  for (int i = 0; i < 7; ++i)
    Record(Level::kError, "e.n" + std::to_string(i), "x", t0_ + std::chrono::seconds(i));
  std::string path = "/api/v1/connectors/" + source_ + "/events?limit=3";
  auto p1 = Get(path);
  ASSERT_EQ(p1.status, 200);
  EXPECT_EQ(Codes(p1), (std::vector<std::string>{"e.n6", "e.n5", "e.n4"}));
  ASSERT_TRUE(p1.body["next_cursor"].is_string());
  // A newer event arrives between pages: the cursor is a position in ts, so
  // page 2 continues exactly after e.n4.
  Record(Level::kError, "e.new", "x", t0_ + 100s);
  auto p2 = Get(path + "&cursor=" + p1.body["next_cursor"].get<std::string>());
  EXPECT_EQ(Codes(p2), (std::vector<std::string>{"e.n3", "e.n2", "e.n1"}));
  auto p3 = Get(path + "&cursor=" + p2.body["next_cursor"].get<std::string>());
  EXPECT_EQ(Codes(p3), (std::vector<std::string>{"e.n0"}));
  EXPECT_TRUE(p3.body["next_cursor"].is_null());
  EXPECT_EQ(Codes(Get(path)).front(), "e.new");

  EXPECT_EQ(Get(path + "&cursor=garbage").status, 422);
  EXPECT_EQ(Get("/api/v1/connectors/" + source_ + "/events?limit=0").status, 422);
  EXPECT_EQ(Get("/api/v1/connectors/" + source_ + "/events?limit=501").status, 422);
  EXPECT_EQ(Get("/api/v1/connectors/" + source_ + "/events?limit=2x").status, 422);
}

TEST_F(EventsApi, ScopesShowTheirOwnEventsAndTheirConnectorsConnectorWideOnes) {
  Record(Level::kError, "src.wide", "x", t0_ + 1s);                   // source connector-wide
  Record(Level::kError, "dst.wide", "x", t0_ + 2s, "", "", target_);  // target connector-wide
  Record(Level::kError, "dm.orders", "x", t0_ + 3s, datamodel_);
  Record(Level::kError, "dm.items", "x", t0_ + 4s, other_datamodel_);
  Record(Level::kError, "sub.orders", "x", t0_ + 5s, datamodel_, subscription_);
  Record(Level::kError, "sub.items", "x", t0_ + 6s, other_datamodel_, other_subscription_);

  auto set = [&](const std::string& path) {
    auto r = Get(path);
    EXPECT_EQ(r.status, 200) << path << " " << r.body.dump();
    auto codes = Codes(r);
    return std::set<std::string>(codes.begin(), codes.end());
  };
  using S = std::set<std::string>;
  EXPECT_EQ(set("/api/v1/datamodels/" + datamodel_ + "/events"), (S{"src.wide", "dm.orders"}));
  EXPECT_EQ(set("/api/v1/subscriptions/" + subscription_ + "/events"),
            (S{"dst.wide", "sub.orders"}));
  EXPECT_EQ(set("/api/v1/pipelines/" + pipeline_ + "/events"),
            (S{"src.wide", "dst.wide", "dm.orders", "sub.orders"}));
  EXPECT_EQ(set("/api/v1/pipelines/" + other_pipeline_ + "/events"),
            (S{"src.wide", "dst.wide", "dm.items", "sub.items"}));
  EXPECT_EQ(set("/api/v1/connectors/" + target_ + "/events"),
            (S{"dst.wide", "sub.orders", "sub.items"}));
}

TEST_F(EventsApi, AnotherTeamGets404AndTheOwningTeamGets200) {
  Record(Level::kError, "e.secret", "x", t0_);
  std::string other_team = NewTeam("elsewhere");
  std::string outsider = NewMember("outsider@example.com", other_team);
  std::string insider = NewMember("insider@example.com", team_id_);
  for (const std::string& path :
       {"/api/v1/connectors/" + source_ + "/events", "/api/v1/datamodels/" + datamodel_ + "/events",
        "/api/v1/subscriptions/" + subscription_ + "/events",
        "/api/v1/pipelines/" + pipeline_ + "/events",
        "/api/v1/pipelines/" + pipeline_ + "/metrics/summary",
        "/api/v1/pipelines/" + pipeline_ + "/metrics/series",
        "/api/v1/subscriptions/" + subscription_ + "/metrics/summary",
        "/api/v1/subscriptions/" + subscription_ + "/metrics/series",
        "/api/v1/datamodels/" + datamodel_ + "/metrics/summary",
        "/api/v1/teams/" + team_id_ + "/topics/" + topic_ + "/metrics/summary"}) {
    auto out = Call("GET", path, nullptr, outsider);
    EXPECT_EQ(out.status, 404) << path << " " << out.body.dump();
    EXPECT_EQ(out.body["error"]["code"], "not_found") << path;
    EXPECT_EQ(out.body.dump().find("e.secret"), std::string::npos);
    EXPECT_EQ(Call("GET", path, nullptr, insider).status, 200) << path;
  }
  EXPECT_EQ(Call("GET", "/api/v1/connectors/" + source_ + "/events", nullptr, "not-a-token").status,
            401);
  EXPECT_EQ(Get("/api/v1/connectors/" + common::Uuid::V4().ToString() + "/events").status, 404);
  EXPECT_EQ(Get("/api/v1/teams/" + team_id_ + "/topics/sluice.public.nope/metrics/summary").status,
            404);
}

// A user's action on what runs, or on its configuration, is a lifecycle
// event on every connector it touched, attributed to the actor.
TEST_F(EventsApi, UserActionsLeaveLifecycleEventsAttributedToTheActor) {
  const std::string actor = "operator@example.com";
  auto token = NewMember(actor, team_id_);
  auto act = [&](const std::string& method, const std::string& path, const Json& body) {
    auto r = Call(method, path, body, token);
    EXPECT_EQ(r.status, 200) << path << " " << r.body.dump();
  };
  act("POST", "/api/v1/connectors/" + source_ + "/pause", Json::object());
  act("POST", "/api/v1/pipelines/" + pipeline_ + "/stop", Json::object());
  act("PATCH", "/api/v1/subscriptions/" + subscription_, {{"name", "orders_copy_renamed"}});

  auto info = [&](const std::string& path) {
    auto r = Get(path + "/events?level=info");
    EXPECT_EQ(r.status, 200) << r.body.dump();
    return r.body["items"];
  };
  auto source_events = info("/api/v1/connectors/" + source_);
  std::set<std::string> source_codes;
  for (const auto& e : source_events) source_codes.insert(e["code"]);
  EXPECT_EQ(source_codes, (std::set<std::string>{"connector.paused", "pipeline.stopped"}));
  for (const auto& e : source_events) {
    EXPECT_EQ(e["type"], "lifecycle");
    EXPECT_EQ(e["level"], "info");
    EXPECT_EQ(e["actor_email"], actor);
    EXPECT_TRUE(e["reason"].is_null());
    EXPECT_NE(e["message"].get<std::string>().find("(by " + actor + ")"), std::string::npos)
        << e["message"];
  }
  // A pipeline action reaches both of its connectors and names the pipeline.
  auto target_events = info("/api/v1/connectors/" + target_);
  bool pipeline_stop_on_target = false;
  for (const auto& e : target_events)
    if (e["code"] == "pipeline.stopped" && e["details"]["pipeline_id"] == pipeline_)
      pipeline_stop_on_target = true;
  EXPECT_TRUE(pipeline_stop_on_target) << target_events.dump();
  Json changed;
  for (const auto& e : info("/api/v1/subscriptions/" + subscription_))
    if (e["code"] == "subscription.config_changed") changed = e;
  ASSERT_TRUE(changed.is_object());
  EXPECT_EQ(changed["subscription_name"], "orders_copy_renamed");
  EXPECT_EQ(changed["actor_email"], actor);
  // Lifecycle actions are not errors: the default listing stays quiet.
  EXPECT_TRUE(Get("/api/v1/connectors/" + source_ + "/events").body["items"].empty());
}

// Read access to an event is read access to the team it was recorded for:
// a connector moved to another team keeps its history with the old team,
// and a deleted connector's events stay readable by the team that owned it.
TEST_F(EventsApi, EventsAreReadThroughTheTeamTheyWereRecordedFor) {
  auto old_member = NewMember("old-owner@example.com", team_id_);
  auto other_team = NewTeam("analytics");
  auto new_member = NewMember("new-owner@example.com", other_team);
  auto outsider = NewMember("outsider@example.com", NewTeam("elsewhere"));
  Record(Level::kError, "worker.crash", "exit code 137", t0_);
  const std::string path = "/api/v1/connectors/" + source_ + "/events";
  ASSERT_EQ(Call("GET", path, nullptr, old_member).body["items"].size(), 1u);

  // Moved: the new team sees the connector but none of the old team's history.
  db().Transact([&](pqxx::work& tx) {
    tx.exec_params("UPDATE connector SET team_id = $1 WHERE id = $2", other_team, source_);
  });
  auto for_new = Call("GET", path, nullptr, new_member);
  ASSERT_EQ(for_new.status, 200) << for_new.body.dump();
  EXPECT_TRUE(for_new.body["items"].empty()) << for_new.body.dump();
  auto for_old = Call("GET", path, nullptr, old_member);
  ASSERT_EQ(for_old.status, 200) << for_old.body.dump();
  EXPECT_EQ(Codes(for_old), (std::vector<std::string>{"worker.crash"}));

  // Deleted: the history stays with its team; anyone else gets 404.
  auto lone = NewConnector(team_id_, "lone", "jsonl-target");
  Record(Level::kError, "target.gone", "connection refused", t0_ + 1s, "", "", lone);
  ASSERT_EQ(Delete("/api/v1/connectors/" + lone).status, 204);
  const std::string gone_path = "/api/v1/connectors/" + lone + "/events";
  auto gone = Call("GET", gone_path, nullptr, old_member);
  ASSERT_EQ(gone.status, 200) << gone.body.dump();
  EXPECT_EQ(Codes(gone), (std::vector<std::string>{"target.gone"}));
  EXPECT_EQ(Call("GET", gone_path, nullptr, outsider).status, 404);
  EXPECT_EQ(Call("GET", gone_path, nullptr, new_member).status, 404);
}

}  // namespace
}  // namespace sluice::testing
