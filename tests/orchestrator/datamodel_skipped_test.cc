// A record a datamodel cannot read (undecodable, no key) is skipped, and
// the user sees it: a warn event per reason on the connector's events in
// the API, with the count of records skipped, at once the first time and
// then at most once per interval (a flood of bad records is not a flood of
// events). Real processes: the broker over TCP, the orchestrator launching
// real workers that speak the HTTP worker protocol to a real API server,
// a `kafka` source whose datamodel republishes into a PostgreSQL target.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <pqxx/pqxx>
#include <thread>

#include "api/authenticate.h"
#include "api_harness.h"
#include "broker/broker_harness.h"
#include "kafka/admin.h"
#include "kafka/producer.h"
#include "license/license_repository.h"
#include "orchestrator/orchestrator.h"
#include "runtime/worker_repository.h"
#include "support/pipeline_checks.h"

namespace sluice::orchestrator {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

constexpr const char* kNotJson = "message value is not a JSON object";
constexpr const char* kNoKey =
    "no key: set the datamodel's config.key or key the messages by a JSON object";

class DatamodelSkippedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    broker_.Start();
    config_.bootstrap_servers = broker_.bootstrap();
    ASSERT_TRUE(kafka::Admin::Create(config_).value()->CreateTopic(topic_, 1).ok());
    producer_ = kafka::Producer::Create(config_).value();
    run_dir_ =
        std::filesystem::temp_directory_path() / ("sluice-dmskip-" + common::Uuid::V4().ToString());
    auto& db = api_.db();
    db.Transact([&](pqxx::work& tx) {
      tx.exec_params("INSERT INTO env (id, name, retention_configuration) VALUES ($1, 'e', $2)",
                     env_.ToString(), json{{"bootstrap_servers", broker_.bootstrap()}}.dump());
      license::LicenseRepository::Store(tx, {true, std::nullopt, common::Clock::now()});
      tx.exec_params("INSERT INTO team (id, name, env_id) VALUES ($1, 'team', $2)",
                     team_.ToString(), env_.ToString());
      auto connector = [&](const common::Uuid& id, const std::string& name, const char* type,
                           const char* way, const json& config) {
        tx.exec_params(
            "INSERT INTO connector (id, name, connector_type, json_configuration, way, team_id, "
            "env_id) VALUES ($1, $2, $3, $4, $5, $6, $7)",
            id.ToString(), name, type, config.dump(), way, team_.ToString(), env_.ToString());
      };
      connector(source_, "orders-in", "kafka", "source",
                json{{"topic", topic_}, {"format", "json"}});
      connector(target_, "orders-out", "postgresql", "target", json{{"url", target_db_.url()}});
      // No config.key, as the wizard makes it: a record is keyed by its
      // message key when that is a JSON object, and skipped otherwise.
      tx.exec_params(
          "INSERT INTO datamodel (id, name, config, source_connector_id, source_topic, "
          "target_topic) VALUES ($1, 'orders', '{}', $2, $3, $4)",
          datamodel_.ToString(), source_.ToString(), topic_, topic_ + ".sluice.orders");
      tx.exec_params(
          "INSERT INTO subscription (id, name, config, transform_config, datamodel_id, "
          "target_connector_id, error_table_enabled, target_table_name, "
          "requires_unique_destination) VALUES ($1, 'orders-to-pg', '{}', '{}', $2, $3, false, "
          "'orders', true)",
          common::Uuid::V4().ToString(), datamodel_.ToString(), target_.ToString());
      for (const auto* id : {&source_, &target_})
        for (auto& w : runtime::WorkerRepository::EnsureShards(tx, *id, 1)) {
          w.Start(common::Clock::now(), std::nullopt);
          runtime::WorkerRepository::Update(tx, w);
        }
    });
  }
  void TearDown() override {
    if (orchestrator_) orchestrator_->Stop();
    orchestrator_.reset();
    std::filesystem::remove_all(run_dir_);
  }

  void Start() {
    OrchestratorOptions options;
    options.sluice_bin = std::getenv("SLUICE_BIN");
    options.run_dir = run_dir_.string();
    options.supervisor = {.initial_backoff = 200ms, .max_backoff = 1000ms};
    options.license_grace = 3600s;
    // As serve wires it: the workers fetch their launch from the API and
    // report through its worker endpoints.
    options.backend_url = "http://127.0.0.1:" + std::to_string(api_.port());
    api::ApiServer* server = &api_.server();
    options.issue_worker_token = [server](const runtime::Worker& w) {
      return api::IssueWorkerToken(server->context().signer, w.id, w.connector_id,
                                   w.launch_generation, std::chrono::hours(1));
    };
    orchestrator_ = std::make_unique<Orchestrator>(api_.db(), options);
    orchestrator_->Start();
  }
  void Send(const std::string& key, const std::string& value) {
    ASSERT_TRUE(producer_->Send(topic_, key, value, next_id_++).ok());
  }
  void Flush() {
    auto delivered = producer_->Flush(20s);
    ASSERT_TRUE(delivered.ok()) << delivered.status().ToString();
    for (const auto& d : *delivered) ASSERT_TRUE(d.status.ok()) << d.status.ToString();
  }
  bool TargetHolds(int id) {
    return testing::TextRows(target_db_.url(),
                             "SELECT id FROM orders WHERE id = " + std::to_string(id)) ==
           "[[\"" + std::to_string(id) + "\"]]";
  }
  // The datamodel.record_skipped rows of the source connector, by reason.
  std::map<std::string, json> SkippedEvents() {
    auto r = api_.Call("GET", "/api/v1/connectors/" + source_.ToString() + "/events?level=warn",
                       nullptr, api_.root().token);
    std::map<std::string, json> out;
    if (r.status != 200) return out;
    for (const auto& e : r.body["items"])
      if (e["code"] == "datamodel.record_skipped") out[e["reason"].get<std::string>()] = e;
    return out;
  }
  std::string Logs() { return testing::LogTails(run_dir_, 2000); }
  std::string SourceWorkerState() {
    return api_.db().Transact([&](pqxx::work& tx) {
      auto r = tx.exec_params("SELECT state::text FROM worker WHERE connector_id = $1",
                              source_.ToString());
      return r.empty() ? std::string("none") : std::string(r[0][0].c_str());
    });
  }

  testing::BrokerProcess broker_;
  testing::ApiHarness api_;
  testing::TestDatabase target_db_;
  kafka::ClientConfig config_;
  std::unique_ptr<kafka::Producer> producer_;
  std::filesystem::path run_dir_;
  std::string topic_ = "raw_orders";
  common::Uuid env_ = common::Uuid::V4(), team_ = common::Uuid::V4(), source_ = common::Uuid::V4(),
               target_ = common::Uuid::V4(), datamodel_ = common::Uuid::V4();
  std::unique_ptr<Orchestrator> orchestrator_;
  std::int64_t next_id_ = 1;
};

TEST_F(DatamodelSkippedTest, UnreadableRecordsAreOneWarnEventPerReasonWithTheirCount) {
  // Before the workers start, so the first poll reads them all at once.
  Send(R"({"id":1})", R"({"id":1,"name":"first"})");
  Send(R"({"id":90})", std::string("\xff\xfe\x00{\"id\":", 9));  // bytes, a NUL, cut JSON
  Send(R"({"id":91})", "[1,2,3]");                               // JSON, not an object
  Send(R"({"id":92})", "null");
  Send("", R"({"id":93,"name":"no message key"})");
  Send(R"("93")", R"({"id":94,"name":"a key that is no object"})");
  Send(R"({"id":2})", R"({"id":2,"name":"after the bad ones"})");
  Flush();
  Start();
  ASSERT_TRUE(testing::WaitUntil([&] { return TargetHolds(1) && TargetHolds(2); }, 120s))
      << "the good records around the bad ones did not land\n"
      << Logs();
  std::map<std::string, json> skipped;
  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        skipped = SkippedEvents();
        return skipped.count(kNotJson) && skipped.count(kNoKey);
      },
      120s))
      << json(skipped).dump() << "\n"
      << Logs();
  const auto first_seen = std::chrono::steady_clock::now();
  const json& not_json = skipped[kNotJson];
  EXPECT_EQ(not_json["level"], "warn");
  EXPECT_EQ(not_json["count"], 1) << not_json.dump();
  EXPECT_EQ(not_json["details"]["skipped"], 3) << not_json.dump();
  EXPECT_EQ(not_json["details"]["topic"], topic_);
  EXPECT_EQ(not_json["details"]["offset"], 1) << "the first of them";
  EXPECT_EQ(not_json["datamodel_id"], datamodel_.ToString()) << not_json.dump();
  const json& no_key = skipped[kNoKey];
  EXPECT_EQ(no_key["count"], 1) << no_key.dump();
  EXPECT_EQ(no_key["details"]["skipped"], 2) << no_key.dump();
  EXPECT_EQ(no_key["details"]["offset"], 4);
  EXPECT_EQ(skipped.size(), 2u) << json(skipped).dump();

  // A flood of 500 more: the pipeline carries on, and within the interval
  // (30 s) no event more; after it, one occurrence saying 500.
  for (int i = 0; i < 500; ++i) Send(R"({"id":95})", "not json " + std::to_string(i));
  Send(R"({"id":3})", R"({"id":3,"name":"after the flood"})");
  Flush();
  ASSERT_TRUE(testing::WaitUntil([&] { return TargetHolds(3); }, 120s)) << Logs();
  EXPECT_EQ(SourceWorkerState(), "LIVE");
  // Time for a report the worker would make at once to land.
  std::this_thread::sleep_for(3s);
  if (std::chrono::steady_clock::now() - first_seen < 20s) {
    EXPECT_EQ(SkippedEvents()[kNotJson]["count"], 1)
        << "the flood was reported before the interval";
  }
  ASSERT_TRUE(
      testing::WaitUntil([&] { return SkippedEvents()[kNotJson].value("count", 0) >= 2; }, 60s))
      << json(SkippedEvents()).dump() << "\n"
      << Logs();
  auto after = SkippedEvents()[kNotJson];
  EXPECT_EQ(after["count"], 2) << after.dump();
  EXPECT_EQ(after["details"]["skipped"], 500) << after.dump();
  EXPECT_EQ(SkippedEvents()[kNoKey]["count"], 1);
  EXPECT_EQ(SourceWorkerState(), "LIVE");
}

}  // namespace
}  // namespace sluice::orchestrator
