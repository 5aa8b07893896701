#include "monitoring/monitoring_harness.h"

#include "events/event_store.h"
#include "metrics/ingest.h"

namespace sluice::testing {

void MonitoringHarness::SetUp() {
  ApiTest::SetUp();
  source_ = NewConnector(team_id_, "src", "postgresql-source");
  target_ = NewConnector(team_id_, "dst", "jsonl-target");
  // The topics are the source's: "<its topic_prefix>.public.<table>".
  auto datamodel = [&](const std::string& table, std::string* topic) {
    auto d = Post("/api/v1/connectors/" + source_ + "/datamodels",
                  {{"name", table}, {"source_schema", "public"}, {"source_table", table}});
    EXPECT_EQ(d.status, 201) << d.body.dump();
    *topic = d.body.value("source_topic", "");
    return d.body.value("id", "");
  };
  datamodel_ = datamodel("orders", &topic_);
  other_datamodel_ = datamodel("items", &other_topic_);
  auto pipeline = [&](const std::string& name, const std::string& dm) {
    auto p = Post("/api/v1/teams/" + team_id_ + "/pipelines", {{"name", name},
                                                               {"source_connector_id", source_},
                                                               {"target_connector_id", target_},
                                                               {"datamodel_id", dm}});
    EXPECT_EQ(p.status, 201) << p.body.dump();
    return p.body.value("id", "");
  };
  pipeline_ = pipeline("orders", datamodel_);
  other_pipeline_ = pipeline("items", other_datamodel_);
  auto subscription = [&](const std::string& name, const std::string& dm, const std::string& p) {
    auto s = Post("/api/v1/teams/" + team_id_ + "/subscriptions", {{"name", name},
                                                                   {"datamodel_id", dm},
                                                                   {"pipeline_id", p},
                                                                   {"target_connector_id", target_},
                                                                   {"target_table_name", name}});
    EXPECT_EQ(s.status, 201) << s.body.dump();
    return s.body.value("id", "");
  };
  subscription_ = subscription("orders_copy", datamodel_, pipeline_);
  other_subscription_ = subscription("items_copy", other_datamodel_, other_pipeline_);
}

void MonitoringHarness::UseBroker(const std::string& bootstrap) {
  pqxx::connection c(url());
  pqxx::work tx(c);
  tx.exec_params("UPDATE env SET retention_configuration = $1::json WHERE id = $2",
                 Json{{"bootstrap_servers", bootstrap}}.dump(), env_id_);
  tx.commit();
}

void MonitoringHarness::Record(events::Level level, const std::string& code,
                               const std::string& reason, common::TimePoint ts,
                               const std::string& datamodel, const std::string& subscription,
                               const std::string& connector) {
  events::ResourceEvent ev;
  ev.ts = ts;
  ev.level = level;
  ev.type = events::Type::kConnector;
  ev.code = code;
  ev.summary = "Something happened";
  ev.reason = reason;
  ev.details = {{"code", code}, {"attempt", 1}};
  ev.resource.env_id = *common::Uuid::Parse(env_id_);
  ev.resource.team_id = *common::Uuid::Parse(team_id_);
  std::string conn = connector.empty() ? (subscription.empty() ? source_ : target_) : connector;
  ev.resource.connector_id = *common::Uuid::Parse(conn);
  ev.resource.connector_name = conn == source_ ? "src" : "dst";
  if (!datamodel.empty()) {
    ev.resource.datamodel_id = common::Uuid::Parse(datamodel);
    ev.resource.datamodel_name = "dm";
  }
  if (!subscription.empty()) {
    ev.resource.subscription_id = common::Uuid::Parse(subscription);
    ev.resource.subscription_name = "sub";
  }
  events::EventStore store(db());
  auto r = store.Record(ev);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
}

void MonitoringHarness::IngestProduction(const std::string& topic, std::int64_t from_ms,
                                         std::int64_t to_ms, std::int64_t total,
                                         common::TimePoint at) {
  metrics::ProductionSnapshot s;
  s.topic = topic;
  s.from_ts = from_ms;
  s.to_ts = to_ms;
  s.events.total = total;
  s.events.c = total;
  auto st = db().Transact([&](pqxx::work& tx) { return metrics::IngestProduction(tx, {s}, at); });
  ASSERT_TRUE(st.ok()) << st.ToString();
}

void MonitoringHarness::IngestConsumption(const std::string& subscription, std::int64_t from_ms,
                                          std::int64_t to_ms, std::int64_t delivered,
                                          std::int64_t errored, std::optional<std::int64_t> lag,
                                          common::TimePoint at) {
  metrics::ConsumptionSnapshot s;
  s.subscription_id = *common::Uuid::Parse(subscription);
  s.topic = topic_;
  s.from_ts = from_ms;
  s.to_ts = to_ms;
  s.consumed = delivered + errored;
  s.delivered = delivered;
  s.errored = errored;
  s.consumer_lag = lag;
  auto st = db().Transact([&](pqxx::work& tx) { return metrics::IngestConsumption(tx, {s}, at); });
  ASSERT_TRUE(st.ok()) << st.ToString();
}

}  // namespace sluice::testing
