// The connector_events topic is environment-wide; its resource filter is a
// permission boundary (#4437). Two teams of one env each read the env's topic
// through a `kafka` source connector into their own target table, with real
// processes: the real broker over TCP, the orchestrator launching real
// workers from the rows (the filter comes from the launch builder, never
// from the connector's configuration), and the outbox publishing. Team B
// never receives a record of team A's, and team A receives its own, an event
// about a connector it has since deleted included.
#include <gtest/gtest.h>

#include <pqxx/pqxx>
#include <thread>

#include "broker/broker_harness.h"
#include "common/uuid.h"
#include "events/event_store.h"
#include "events/events_topic.h"
#include "license/license_repository.h"
#include "orchestrator/events_outbox.h"
#include "orchestrator/launch_builder.h"
#include "orchestrator/orchestrator.h"
#include "runtime/worker_repository.h"
#include "store/database.h"
#include "support/pipeline_checks.h"
#include "support/test_database.h"

namespace sluice::orchestrator {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

struct TeamReader {
  common::Uuid team = common::Uuid::V4();
  common::Uuid source = common::Uuid::V4();  // kafka source on the env's events topic
  common::Uuid target = common::Uuid::V4();  // postgresql target
  std::string table;                         // where its events land
};

class EventsSubscriptionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    broker_.Start();
    run_dir_ =
        std::filesystem::temp_directory_path() / ("sluice-evsub-" + common::Uuid::V4().ToString());
    a_.table = "events_a";
    b_.table = "events_b";
    topic_ = events::EnvEventsTopic(env_);
    db_.Transact([&](pqxx::work& tx) {
      tx.exec_params("INSERT INTO env (id, name, retention_configuration) VALUES ($1, 'e', $2)",
                     env_.ToString(), json{{"bootstrap_servers", broker_.bootstrap()}}.dump());
      license::LicenseRepository::Store(tx, {true, std::nullopt, common::Clock::now()});
    });
    AddReader(a_, "a", json{{"topic", topic_}, {"format", "json"}});
    // Team B's configuration asks for team A's events: the filter is not its to choose.
    // Its datamodel names no key, as the pipeline wizard makes it: each
    // record's id is the row key all the same.
    AddReader(b_, "b",
              json{{"topic", topic_}, {"format", "json"}, {"only_team", a_.team.ToString()}},
              json::object());
  }
  void TearDown() override {
    if (orchestrator_) orchestrator_->Stop();
    orchestrator_.reset();
    outbox_.reset();
    std::filesystem::remove_all(run_dir_);
  }

  void AddReader(const TeamReader& r, const std::string& name, const json& kafka_config,
                 const json& datamodel_config = json{{"key", {"id"}}}) {
    db_.Transact([&](pqxx::work& tx) {
      tx.exec_params("INSERT INTO team (id, name, env_id) VALUES ($1, $2, $3)", r.team.ToString(),
                     "team-" + name, env_.ToString());
      auto connector = [&](const common::Uuid& id, const std::string& cname, const char* type,
                           const char* way, const json& config) {
        tx.exec_params(
            "INSERT INTO connector (id, name, connector_type, json_configuration, way, team_id, "
            "env_id) VALUES ($1, $2, $3, $4, $5, $6, $7)",
            id.ToString(), cname, type, config.dump(), way, r.team.ToString(), env_.ToString());
      };
      connector(r.source, "events-" + name, "kafka", "source", kafka_config);
      connector(r.target, "dst-" + name, "postgresql", "target", json{{"url", target_.url()}});
      auto dm = common::Uuid::V4().ToString();
      tx.exec_params(
          "INSERT INTO datamodel (id, name, config, source_connector_id, source_topic, "
          "target_topic) VALUES ($1, 'events', $2, $3, $4, $5)",
          dm, datamodel_config.dump(), r.source.ToString(), topic_, topic_ + ".sluice." + name);
      tx.exec_params(
          "INSERT INTO subscription (id, name, config, transform_config, datamodel_id, "
          "target_connector_id, error_table_enabled, target_table_name, "
          "requires_unique_destination) VALUES ($1, $2, '{}', '{}', $3, $4, false, $5, true)",
          common::Uuid::V4().ToString(), "events-to-" + name, dm, r.target.ToString(), r.table);
    });
  }
  void StartConnector(const common::Uuid& id) {
    db_.Transact([&](pqxx::work& tx) {
      for (auto& w : runtime::WorkerRepository::EnsureShards(tx, id, 1)) {
        w.Start(common::Clock::now(), std::nullopt);
        runtime::WorkerRepository::Update(tx, w);
      }
    });
  }
  void StartEverything() {
    OrchestratorOptions options;
    options.sluice_bin = std::getenv("SLUICE_BIN");
    options.run_dir = run_dir_.string();
    options.report_database_url = plane_.url();
    options.supervisor = {.initial_backoff = 200ms, .max_backoff = 1000ms};
    options.license_grace = 3600s;
    orchestrator_ = std::make_unique<Orchestrator>(db_, options);
    for (const auto* r : {&a_, &b_}) {
      StartConnector(r->source);
      StartConnector(r->target);
    }
    orchestrator_->Start();
    EventsOutboxOptions o;
    o.interval = 200ms;
    o.rescan = 1000ms;
    o.outbox.grace = 0ms;
    outbox_ = std::make_unique<EventsOutbox>(db_, o);
  }
  void Record(const common::Uuid& team, const common::Uuid& connector, const std::string& code) {
    events::ResourceEvent e;
    e.ts = common::Clock::now();
    e.level = events::Level::kError;
    e.type = events::Type::kConnector;
    e.code = code;
    e.summary = "Worker restarted";
    e.resource = {env_, team, connector, "conn-" + code, {}, {}, {}, {}};
    ASSERT_TRUE(events::EventStore(db_).Record(e).ok());
  }
  // (code, team_id) of every row the team's target holds.
  std::vector<std::pair<std::string, std::string>> Rows(const std::string& table) {
    try {
      pqxx::connection c(target_.url());
      std::vector<std::pair<std::string, std::string>> out;
      for (const auto& r : pqxx::nontransaction(c).exec("SELECT code::text, team_id::text FROM " +
                                                        table + " ORDER BY code"))
        out.emplace_back(r[0].c_str(), r[1].c_str());
      return out;
    } catch (...) {
      return {};
    }
  }
  bool Holds(const std::string& table, const std::string& code) {
    for (const auto& [c, t] : Rows(table))
      if (c == code) return true;
    return false;
  }
  std::string Logs() { return testing::LogTails(run_dir_, 1500); }

  testing::BrokerProcess broker_;
  testing::TestDatabase plane_, target_;
  store::Database db_{plane_.url(), 8};
  std::filesystem::path run_dir_;
  common::Uuid env_ = common::Uuid::V4();
  std::string topic_;
  TeamReader a_, b_;
  std::unique_ptr<Orchestrator> orchestrator_;
  std::unique_ptr<EventsOutbox> outbox_;
};

TEST_F(EventsSubscriptionTest, TheLaunchFiltersOnTheConnectorsOwnTeamWhateverItsConfigurationSays) {
  auto launch = db_.Transact([&](pqxx::work& tx) {
    runtime::Worker w = runtime::WorkerRepository::EnsureShards(tx, b_.source, 1)[0];
    return BuildLaunchConfig(tx, w, nullptr);
  });
  ASSERT_TRUE(launch.ok()) << launch.status().ToString();
  ASSERT_EQ((*launch)["datamodels"].size(), 1u) << launch->dump();
  EXPECT_EQ((*launch)["datamodels"][0]["source_topic"], topic_);
  EXPECT_EQ((*launch)["datamodels"][0]["only_team"], b_.team.ToString());
}

TEST_F(EventsSubscriptionTest, ATeamReceivesOnlyItsOwnEventsDeletedConnectorsIncluded) {
  // A connector of team A that is deleted after its event: the event stays A's.
  auto gone = common::Uuid::V4();
  db_.Transact([&](pqxx::work& tx) {
    tx.exec_params(
        "INSERT INTO connector (id, name, connector_type, json_configuration, way, team_id, "
        "env_id) VALUES ($1, 'doomed', 'postgresql', '{}', 'source', $2, $3)",
        gone.ToString(), a_.team.ToString(), env_.ToString());
  });
  Record(a_.team, gone, "a.about_deleted_connector");
  db_.Transact([&](pqxx::work& tx) {
    tx.exec_params("DELETE FROM connector WHERE id = $1", gone.ToString());
  });
  Record(a_.team, a_.source, "a.secret");
  Record(b_.team, b_.source, "b.own");
  StartEverything();
  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        return Holds(a_.table, "a.secret") && Holds(a_.table, "a.about_deleted_connector") &&
               Holds(b_.table, "b.own");
      },
      120s))
      << "a: " << Rows(a_.table).size() << " rows, b: " << Rows(b_.table).size() << " rows\n"
      << Logs();
  // More of team A's events while both readers run.
  Record(a_.team, a_.source, "a.later");
  Record(b_.team, b_.source, "b.later");
  ASSERT_TRUE(testing::WaitUntil(
      [&] { return Holds(a_.table, "a.later") && Holds(b_.table, "b.later"); }, 120s))
      << Logs();
  std::this_thread::sleep_for(2s);  // anything still in flight lands
  for (const auto& [code, team] : Rows(b_.table)) {
    EXPECT_EQ(team, b_.team.ToString()) << code;
    EXPECT_NE(code.rfind("a.", 0), 0u) << code;
  }
  for (const auto& [code, team] : Rows(a_.table)) {
    EXPECT_EQ(team, a_.team.ToString()) << code;
    EXPECT_NE(code.rfind("b.", 0), 0u) << code;
  }
  // The env topic itself carries both teams' events: the boundary is the filter.
  auto raw = testing::RunShell("timeout 20 kcat -C -b " + broker_.bootstrap() + " -t " + topic_ +
                               " -o beginning -e -q -f '%s\\n' 2>/dev/null");
  EXPECT_NE(raw.out.find("a.secret"), std::string::npos);
  EXPECT_NE(raw.out.find("b.own"), std::string::npos);
}

}  // namespace
}  // namespace sluice::orchestrator
