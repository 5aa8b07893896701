// A source's replication slot as its worker reports it: the pipeline status
// and the Prometheus page show lag in bytes and seconds, wal_status and
// safe_wal_size; a change of level is one event (warn, critical, cleared),
// and a lost slot is an event naming it.
#include "dataflow/pod_reports.h"
#include "model/pipelines/pod_reports.h"
#include "monitoring/monitoring_harness.h"
#include "monitoring/prometheus_text.h"

namespace sluice::testing {
namespace {

class SlotHealthApi : public MonitoringHarness {
 protected:
  void Report(const dataflow::SlotReport& r) {
    dataflow::PodIdentity pod{common::Uuid::V4(), *common::Uuid::Parse(source_), common::Uuid::V4(),
                              0};
    auto st = db().Transact([&](pqxx::work& tx) { return model::ApplySlotReport(tx, pod, r); });
    ASSERT_TRUE(st.ok()) << st.ToString();
  }
  static dataflow::SlotReport Reading(std::int64_t lag, const std::string& level,
                                      const std::string& wal_status = "reserved") {
    dataflow::SlotReport r;
    r.slot = "sluice_slot_a";
    r.wal_status = wal_status;
    r.safe_wal_size = 123456789;
    r.lag_bytes = lag;
    r.lag_seconds = 42.5;
    r.confirmed_flush_lsn = "0/16B3748";
    r.level = level;
    return r;
  }
  int Events(const std::string& code) {
    return db().Transact([&](pqxx::work& tx) {
      return tx
          .exec_params(
              "SELECT coalesce(sum(count), 0) FROM resource_event WHERE code = $1 AND "
              "connector_id = $2",
              code, source_)[0][0]
          .as<int>();
    });
  }
  std::map<std::string, double> Scrape() {
    httplib::Client cli("127.0.0.1", server().port());
    auto res = cli.Get("/metrics", {{"Authorization", "Bearer " + root_token_}});
    EXPECT_TRUE(res && res->status == 200);
    return res ? ParsePrometheus(res->body) : std::map<std::string, double>{};
  }
};

TEST_F(SlotHealthApi, StatusAndPrometheusShowTheSlotsLagWalStatusAndSafeWalSize) {
  auto before = Get("/api/v1/pipelines/" + pipeline_ + "/status");
  ASSERT_EQ(before.status, 200) << before.body.dump();
  EXPECT_TRUE(before.body["source_slots"].empty()) << "nothing reported yet";

  Report(Reading(4096, "ok"));
  auto status = Get("/api/v1/pipelines/" + pipeline_ + "/status");
  ASSERT_EQ(status.status, 200);
  ASSERT_EQ(status.body["source_slots"].size(), 1u) << status.body.dump();
  const auto& slot = status.body["source_slots"][0];
  EXPECT_EQ(slot["slot_name"], "sluice_slot_a");
  EXPECT_EQ(slot["lag_bytes"], 4096);
  EXPECT_DOUBLE_EQ(slot["lag_seconds"].get<double>(), 42.5);
  EXPECT_EQ(slot["wal_status"], "reserved");
  EXPECT_EQ(slot["safe_wal_size"], 123456789);
  EXPECT_EQ(slot["level"], "ok");
  EXPECT_EQ(slot["connector_id"], source_);
  EXPECT_FALSE(slot["measured_at"].get<std::string>().empty());
  // Both of the harness's pipelines read this source: both show its slot.
  EXPECT_EQ(Get("/api/v1/pipelines/" + other_pipeline_ + "/status").body["source_slots"].size(),
            1u);

  auto page = Scrape();
  std::string labels = "{connector_id=\"" + source_ + "\",shard=\"0\",slot=\"sluice_slot_a\"}";
  EXPECT_EQ(page["sluice_source_slot_lag_bytes" + labels], 4096);
  EXPECT_DOUBLE_EQ(page["sluice_source_slot_lag_seconds" + labels], 42.5);
  EXPECT_EQ(page["sluice_source_slot_safe_wal_size_bytes" + labels], 123456789);
  EXPECT_EQ(page["sluice_source_slot_wal_status{connector_id=\"" + source_ +
                 "\",shard=\"0\",slot=\"sluice_slot_a\",wal_status=\"reserved\"}"],
            1);
}

TEST_F(SlotHealthApi, ALevelChangeIsOneEventAndBackUnderIsRecorded) {
  Report(Reading(10, "ok"));
  EXPECT_EQ(Events("source.slot_lag_warn"), 0);
  Report(Reading(2000, "warn"));
  Report(Reading(2100, "warn"));  // no change of level: no new event
  EXPECT_EQ(Events("source.slot_lag_warn"), 1);
  Report(Reading(2200, "critical", "unreserved"));
  EXPECT_EQ(Events("source.slot_lag_critical"), 1);
  Report(Reading(5, "ok"));
  EXPECT_EQ(Events("source.slot_lag_cleared"), 1);
  auto reason = db().Transact([&](pqxx::work& tx) {
    return tx.exec_params("SELECT reason, level FROM resource_event WHERE code = $1",
                          "source.slot_lag_critical")[0];
  });
  EXPECT_NE(std::string(reason[0].c_str()).find("sluice_slot_a"), std::string::npos);
  EXPECT_NE(std::string(reason[0].c_str()).find("unreserved"), std::string::npos);
  EXPECT_EQ(std::string(reason[1].c_str()), "critical");
}

TEST_F(SlotHealthApi, ALostSlotIsAnEventNamingIt) {
  dataflow::SlotReport lost;
  lost.slot = "sluice_slot_a";
  lost.lost_reason = "replication slot sluice_slot_a is lost (wal_status = lost)";
  Report(lost);
  EXPECT_EQ(Events("source.slot_lost"), 1);
  auto row = db().Transact([&](pqxx::work& tx) {
    return tx.exec_params("SELECT message, details::text FROM resource_event WHERE code = $1",
                          "source.slot_lost")[0];
  });
  EXPECT_NE(std::string(row[0].c_str()).find("sluice_slot_a"), std::string::npos);
  // It says the targets' tables are emptied until the re-snapshot refills them.
  EXPECT_NE(std::string(row[0].c_str()).find("truncated in the targets"), std::string::npos)
      << row[0].c_str();
  EXPECT_NE(std::string(row[1].c_str()).find("sluice_slot_a"), std::string::npos);
}

TEST(SlotReportWire, RoundTripsAndRefusesAnUnknownLevel) {
  dataflow::SlotReport r;
  r.slot = "s";
  r.wal_status = "extended";
  r.lag_bytes = 7;
  r.lag_seconds = 1.5;
  r.level = "warn";
  auto back = dataflow::SlotReportFromJson(dataflow::SlotReportToJson(r));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->lag_bytes, 7);
  EXPECT_EQ(back->level, "warn");
  EXPECT_FALSE(back->safe_wal_size.has_value());
  EXPECT_FALSE(dataflow::SlotReportFromJson({{"lag_bytes", 1}}).ok());
}

}  // namespace
}  // namespace sluice::testing
