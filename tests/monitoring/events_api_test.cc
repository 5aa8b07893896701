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
  std::vector<std::string> Codes(const Reply& r) {
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

}  // namespace
}  // namespace sluice::testing
