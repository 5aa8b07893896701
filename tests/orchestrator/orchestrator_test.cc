// The orchestrator with real worker processes: launches what should run,
// restarts what crashes (and says so in one folded event), marks a silent
// pod ERROR after the heartbeat window, and forces a stop that hangs.
#include <gtest/gtest.h>

#include <signal.h>

#include <pqxx/pqxx>
#include <thread>

#include "broker/broker_harness.h"
#include "common/uuid.h"
#include "connectors/topic_naming.h"
#include "guard/connect_policy.h"
#include "guard/postgres_conninfo.h"
#include "items_pipeline.h"
#include "license/license_repository.h"
#include "metrics/data_plane_gauges.h"
#include "orchestrator/launch_builder.h"
#include "orchestrator/orchestrator.h"
#include "orchestrator/placement.h"
#include "runtime/worker_repository.h"
#include "support/test_database.h"

namespace sluice::orchestrator {
namespace {

using namespace std::chrono_literals;
using runtime::WorkerState;

class OrchestratorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    broker_.Start();
    db_ = std::make_unique<store::Database>(plane_.url(), 8);
    run_dir_ =
        std::filesystem::temp_directory_path() / ("sluice-orch-" + common::Uuid::V4().ToString());
    {
      pqxx::connection c(source_.url());
      pqxx::nontransaction(c).exec(
          "CREATE TABLE items (id int PRIMARY KEY, label text); "
          "INSERT INTO items SELECT g, 'item ' || g FROM generate_series(1, 50) g");
    }
    source_id_ = common::Uuid::V4();
    target_id_ = common::Uuid::V4();
    db_->Transact([&](pqxx::work& tx) {
      testing::SeedItemsPipeline(tx, {{"bootstrap_servers", broker_.bootstrap()}}, source_id_,
                                 source_.url(), target_id_, target_.url());
    });
    auto& options = options_;
    options.sluice_bin = std::getenv("SLUICE_BIN");
    options.run_dir = run_dir_.string();
    options.stale_after = 3s;
    options.stop_timeout = 2s;
    options.report_database_url = plane_.url();
    options.supervisor = {.initial_backoff = 200ms, .max_backoff = 1000ms};
    options.license_grace = 3600s;
    orchestrator_ = std::make_unique<Orchestrator>(*db_, options);
  }
  void TearDown() override {
    orchestrator_.reset();
    try {
      pqxx::connection c(source_.url());
      pqxx::nontransaction(c).exec(
          "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE NOT active "
          // Slots are cluster-wide: another test's slot between its creation
          // and its stream is inactive too.
          "AND database = current_database()");
    } catch (...) {
    }
    std::filesystem::remove_all(run_dir_);
  }

  void StartConnector(const common::Uuid& id) {
    db_->Transact([&](pqxx::work& tx) {
      for (auto& w : runtime::WorkerRepository::EnsureShards(tx, id, 1)) {
        w.Start(common::Clock::now(), std::nullopt);
        runtime::WorkerRepository::Update(tx, w);
      }
    });
  }
  runtime::Worker WorkerOf(const common::Uuid& connector) {
    return db_->Transact(
        [&](pqxx::work& tx) { return runtime::WorkerRepository::ForConnector(tx, connector)[0]; });
  }
  template <typename Pred>
  bool TickUntil(Pred pred, std::chrono::seconds limit = 90s) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      EXPECT_TRUE(orchestrator_->Tick().ok());
      if (pred()) return true;
      std::this_thread::sleep_for(200ms);
    }
    return pred();
  }
  int TargetRows() {
    try {
      pqxx::connection c(target_.url());
      return pqxx::nontransaction(c).exec1("SELECT count(*) FROM items_copy")[0].as<int>();
    } catch (...) {
      return -1;
    }
  }
  int EventCount(const std::string& code) {
    return db_->Transact([&](pqxx::work& tx) {
      auto r = tx.exec_params("SELECT coalesce(sum(count), 0) FROM resource_event WHERE code = $1",
                              code);
      return r[0][0].as<int>();
    });
  }

  testing::BrokerProcess broker_;
  testing::TestDatabase plane_, source_, target_;
  std::unique_ptr<store::Database> db_;
  std::filesystem::path run_dir_;
  common::Uuid source_id_, target_id_;
  OrchestratorOptions options_;
  std::unique_ptr<Orchestrator> orchestrator_;
};

TEST_F(OrchestratorTest, StartedPipelineGoesLiveAndRowsFlow) {
  StartConnector(source_id_);
  StartConnector(target_id_);
  ASSERT_TRUE(TickUntil([&] {
    return WorkerOf(source_id_).state == WorkerState::kLive &&
           WorkerOf(target_id_).state == WorkerState::kLive && TargetRows() == 50;
  }));
  auto w = WorkerOf(source_id_);
  EXPECT_TRUE(w.launched_config_hash.has_value());
  EXPECT_TRUE(w.last_heartbeat_at.has_value());
}

TEST_F(OrchestratorTest, TheSourceReportsItsSlotAndATinyLagThresholdRecordsAWarnEvent) {
  db_->Transact([&](pqxx::work& tx) {
    tx.exec_params(
        "UPDATE connector SET json_configuration = $2 WHERE id = $1", source_id_.ToString(),
        nlohmann::json{
            {"url", source_.url()}, {"heartbeat_interval_seconds", 1}, {"slot_lag_warn_bytes", 1}}
            .dump());
  });
  StartConnector(source_id_);
  StartConnector(target_id_);
  ASSERT_TRUE(TickUntil([&] { return TargetRows() == 50; }));
  ASSERT_TRUE(TickUntil([&] { return EventCount("source.slot_lag_warn") >= 1; }, 60s));
  std::string slot = DefaultSlotName(WorkerOf(source_id_));
  auto row = db_->Transact([&](pqxx::work& tx) {
    return tx.exec_params(
        "SELECT slot_name, wal_status, lag_bytes, lag_seconds, level FROM "
        "sluice_state.source_slot WHERE connector_id = $1",
        source_id_.ToString());
  });
  ASSERT_EQ(row.size(), 1u);
  EXPECT_EQ(std::string(row[0][0].c_str()), slot);
  EXPECT_EQ(std::string(row[0][1].c_str()), "reserved");
  EXPECT_GE(row[0][2].as<std::int64_t>(), 0);
  EXPECT_GE(row[0][3].as<double>(), 0);
  // The gauges /metrics renders carry the slot.
  auto families = db_->Transact(
      [&](pqxx::work& tx) { return metrics::CollectDataPlaneGauges(tx, common::Clock::now()); });
  bool found = false;
  for (const auto& f : families) {
    if (f.name != "sluice_source_slot_lag_bytes") continue;
    for (const auto& sample : f.samples)
      for (const auto& [k, v] : sample.labels) found = found || (k == "slot" && v == slot);
  }
  EXPECT_TRUE(found);
  // Writes to a table the publication leaves out: the slot still follows
  // the server's position.
  auto lag = [&] {
    pqxx::connection c(source_.url());
    return pqxx::nontransaction(c)
        .exec_params1(
            "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn)::bigint "
            "FROM pg_replication_slots WHERE slot_name = $1",
            slot)[0]
        .as<std::int64_t>();
  };
  {
    pqxx::connection c(source_.url());
    pqxx::nontransaction(c).exec(
        "CREATE TABLE unpublished (x text); "
        "INSERT INTO unpublished SELECT repeat('x', 100) FROM generate_series(1, 20000)");
  }
  EXPECT_TRUE(TickUntil([&] { return lag() < 100000; }));
}

TEST_F(OrchestratorTest, KilledWorkerIsRestartedAndTheCrashIsOneFoldedEvent) {
  StartConnector(target_id_);
  ASSERT_TRUE(TickUntil([&] { return WorkerOf(target_id_).state == WorkerState::kLive; }));
  for (int i = 0; i < 2; ++i) {
    auto pid = orchestrator_->supervisor().Pid(Orchestrator::PodKey(WorkerOf(target_id_)));
    ASSERT_TRUE(pid);
    kill(*pid, SIGKILL);
    ASSERT_TRUE(TickUntil([&] {
      auto now = orchestrator_->supervisor().Pid(Orchestrator::PodKey(WorkerOf(target_id_)));
      return now && *now != *pid;
    }));
  }
  ASSERT_TRUE(TickUntil([&] { return EventCount("worker.crashed") >= 2; }));
  auto rows = db_->Transact([&](pqxx::work& tx) {
    return tx.exec1("SELECT count(*) FROM resource_event WHERE code = 'worker.crashed'")[0]
        .as<int>();
  });
  EXPECT_EQ(rows, 1) << "a crash loop folds into one row";
}

// A worker that exits cleanly (SIGTERM: it stops and exits 0) is restarted
// by its supervisor, but that is no crash (found from outside: a connector restart read
// as `worker.crashed ... exited with status 0`).
TEST_F(OrchestratorTest, AWorkerThatExitsCleanlyIsRestartedWithoutACrashEvent) {
  StartConnector(target_id_);
  ASSERT_TRUE(TickUntil([&] { return WorkerOf(target_id_).state == WorkerState::kLive; }));
  auto pid = orchestrator_->supervisor().Pid(Orchestrator::PodKey(WorkerOf(target_id_)));
  ASSERT_TRUE(pid);
  kill(*pid, SIGTERM);
  ASSERT_TRUE(TickUntil([&] { return EventCount("worker.exited") >= 1; }));
  EXPECT_EQ(EventCount("worker.crashed"), 0);
}

TEST_F(OrchestratorTest, SilentPodIsMarkedErrorAfterTheHeartbeatWindow) {
  StartConnector(target_id_);
  ASSERT_TRUE(TickUntil([&] { return WorkerOf(target_id_).state == WorkerState::kLive; }));
  auto pid = orchestrator_->supervisor().Pid(Orchestrator::PodKey(WorkerOf(target_id_)));
  ASSERT_TRUE(pid);
  kill(*pid, SIGSTOP);  // alive, but says nothing
  ASSERT_TRUE(TickUntil([&] { return WorkerOf(target_id_).state == WorkerState::kError; }, 20s));
  EXPECT_NE(WorkerOf(target_id_).reason.value_or("").find("no heartbeat"), std::string::npos);
  EXPECT_GE(EventCount("worker.heartbeat_lost"), 1);
  // The back end emitted it: no pod, no generation (the spec's NULLs).
  EXPECT_EQ(db_->Transact([&](pqxx::work& tx) {
    return tx
        .exec(
            "SELECT count(*) FROM resource_event WHERE code = 'worker.heartbeat_lost' AND "
            "(pod IS NOT NULL OR generation IS NOT NULL)")[0][0]
        .as<int>();
  }),
            0);
  kill(*pid, SIGCONT);
  // Silence meant it stopped reporting, not that it stopped: its next
  // heartbeat restores LIVE, and it is the same pod, not a relaunch.
  ASSERT_TRUE(TickUntil([&] { return WorkerOf(target_id_).state == WorkerState::kLive; }, 20s));
  EXPECT_FALSE(WorkerOf(target_id_).reason.has_value());
  EXPECT_EQ(orchestrator_->supervisor().Pid(Orchestrator::PodKey(WorkerOf(target_id_))), pid);
}

TEST_F(OrchestratorTest, ABrokerBootstrapThePolicyRefusesIsAReportedErrorNotACrashLoop) {
  // The operator denied the env's broker address after the env was saved.
  const auto before = *guard::ProcessPolicy();
  guard::SetProcessPolicy(*guard::ConnectPolicy::FromLists({}, {"127.0.0.3/32"}));
  db_->Transact([&](pqxx::work& tx) {
    nlohmann::json broker = {{"bootstrap_servers", "127.0.0.3:" + std::to_string(broker_.port())}};
    tx.exec_params("UPDATE env SET retention_configuration = $1", broker.dump());
  });
  StartConnector(target_id_);
  const bool refused = TickUntil([&] {
    auto w = WorkerOf(target_id_);
    return w.state == WorkerState::kError &&
           w.reason.value_or("").find("(connect-deny)") != std::string::npos;
  });
  guard::SetProcessPolicy(before);
  ASSERT_TRUE(refused) << WorkerOf(target_id_).reason.value_or("(no reason)");
  EXPECT_NE(WorkerOf(target_id_).reason->find("broker bootstrap"), std::string::npos);
  auto pid = orchestrator_->supervisor().Pid(Orchestrator::PodKey(WorkerOf(target_id_)));
  ASSERT_TRUE(pid);
  // It waits to be stopped: the same process, still ERROR, no crash.
  TickUntil([] { return false; }, 6s);
  EXPECT_EQ(orchestrator_->supervisor().Pid(Orchestrator::PodKey(WorkerOf(target_id_))), pid);
  EXPECT_EQ(WorkerOf(target_id_).state, WorkerState::kError);
  EXPECT_EQ(EventCount("worker.crashed"), 0);
}

// Found from outside: an env saved without a broker; each worker exited 2
// ("bad launch config: broker: ...") about once a second, STARTING with no
// reason, the only event a crash "exited with status 1". The orchestrator
// reads the launch config with the worker's own parser first.
TEST_F(OrchestratorTest, ALaunchConfigTheWorkerWouldRefuseIsAnErrorWithItsReasonNotACrashLoop) {
  db_->Transact([&](pqxx::work& tx) { tx.exec("UPDATE env SET retention_configuration = '{}'"); });
  StartConnector(target_id_);
  ASSERT_TRUE(TickUntil([&] { return WorkerOf(target_id_).state == WorkerState::kError; }, 10s));
  const auto refused = WorkerOf(target_id_);
  EXPECT_EQ(refused.reason.value_or(""),
            "bad launch config: broker: retention_configuration.bootstrap_servers is required");
  EXPECT_TRUE(orchestrator_->supervisor().Keys().empty()) << "a process was launched";
  // It stays so, without a process, a new generation or a second event.
  TickUntil([] { return false; }, 3s);
  const auto later = WorkerOf(target_id_);
  EXPECT_EQ(later.state, WorkerState::kError);
  EXPECT_EQ(later.launch_generation, refused.launch_generation);
  EXPECT_TRUE(orchestrator_->supervisor().Keys().empty());
  EXPECT_EQ(EventCount("worker.crashed"), 0);
  EXPECT_EQ(EventCount("worker.config_refused"), 1);
  auto event = db_->Transact([&](pqxx::work& tx) {
    return tx.exec1(
        "SELECT level, reason FROM resource_event WHERE code = 'worker.config_refused'");
  });
  EXPECT_EQ(event[0].as<std::string>(), "error");
  EXPECT_NE(event[1].as<std::string>().find("bootstrap_servers is required"), std::string::npos);
  EXPECT_NE(event[1].as<std::string>().find("set the environment's broker"), std::string::npos)
      << event[1].as<std::string>();
  // Once the env names its broker, the worker launches by itself.
  db_->Transact([&](pqxx::work& tx) {
    tx.exec_params("UPDATE env SET retention_configuration = $1",
                   nlohmann::json{{"bootstrap_servers", broker_.bootstrap()}}.dump());
  });
  ASSERT_TRUE(TickUntil([&] { return WorkerOf(target_id_).state == WorkerState::kLive; }));
  EXPECT_FALSE(WorkerOf(target_id_).reason.has_value());
}

// Found from outside: a pod that exits at once was relaunched as a new
// generation every tick (the orchestrator took a pod waiting out its
// restart backoff for a lost one), so its backoff never grew. Here every
// "worker" is /bin/sh, which exits 2 at once ("cannot open worker").
TEST_F(OrchestratorTest, APodThatExitsAtOnceKeepsItsGenerationAndBacksOff) {
  orchestrator_.reset();
  options_.sluice_bin = "/bin/sh";
  orchestrator_ = std::make_unique<Orchestrator>(*db_, options_);
  StartConnector(target_id_);
  ASSERT_TRUE(TickUntil([&] { return EventCount("worker.crashed") >= 1; }, 10s));
  const auto first = WorkerOf(target_id_);
  TickUntil([] { return false; }, 4s);
  const auto later = WorkerOf(target_id_);
  EXPECT_EQ(later.launch_generation, first.launch_generation)
      << "relaunched as a new generation while in its restart backoff";
  // Backoff 200 ms doubling to 1 s: 6 restarts in 4 s at most (20 when
  // relaunched every 200 ms tick).
  EXPECT_LE(EventCount("worker.crashed"), 7);
  auto reason = db_->Transact([&](pqxx::work& tx) {
    return tx.exec1("SELECT reason FROM resource_event WHERE code = 'worker.crashed'")[0]
        .as<std::string>();
  });
  EXPECT_NE(reason.find("exited with status 2: "), std::string::npos) << reason;
  EXPECT_NE(reason.find("worker"), std::string::npos) << "the pod's own last words: " << reason;
}

TEST_F(OrchestratorTest, StopOfAHungWorkerIsForcedAfterTheTimeout) {
  StartConnector(target_id_);
  ASSERT_TRUE(TickUntil([&] { return WorkerOf(target_id_).state == WorkerState::kLive; }));
  auto w = WorkerOf(target_id_);
  auto pid = orchestrator_->supervisor().Pid(Orchestrator::PodKey(w));
  ASSERT_TRUE(pid);
  kill(*pid, SIGSTOP);  // a stopped process cannot act on SIGTERM
  db_->Transact([&](pqxx::work& tx) {
    auto row = *runtime::WorkerRepository::FindForUpdate(tx, w.id);
    row.RequestStop(common::Clock::now());
    runtime::WorkerRepository::Update(tx, row);
  });
  ASSERT_TRUE(TickUntil([&] { return WorkerOf(target_id_).state == WorkerState::kStopped; }));
  auto stopped = WorkerOf(target_id_);
  EXPECT_FALSE(stopped.stop_requested_at.has_value());
  EXPECT_NE(stopped.reason.value_or("").find("killed"), std::string::npos);
  EXPECT_TRUE(TickUntil([&] { return EventCount("worker.stop_forced") >= 1; }, 10s));
}

TEST_F(OrchestratorTest, GracefulStopEndsStoppedWithoutAReason) {
  StartConnector(target_id_);
  ASSERT_TRUE(TickUntil([&] { return WorkerOf(target_id_).state == WorkerState::kLive; }));
  auto w = WorkerOf(target_id_);
  db_->Transact([&](pqxx::work& tx) {
    auto row = *runtime::WorkerRepository::FindForUpdate(tx, w.id);
    row.RequestStop(common::Clock::now());
    runtime::WorkerRepository::Update(tx, row);
  });
  ASSERT_TRUE(TickUntil([&] { return WorkerOf(target_id_).state == WorkerState::kStopped; }));
  EXPECT_FALSE(WorkerOf(target_id_).reason.has_value());
  EXPECT_FALSE(orchestrator_->supervisor().IsRunning(Orchestrator::PodKey(w)));
}

TEST_F(OrchestratorTest, StartPlacesUnplacedTablesAndKeepsPlacedOnes) {
  db_->Transact([&](pqxx::work& tx) {
    tx.exec_params(
        "INSERT INTO datamodel (id, name, config, source_connector_id, source_table, "
        "shard_index) VALUES ($1, 'placed', '{}', $2, 'other', 1)",
        common::Uuid::V4().ToString(), source_id_.ToString());
    EXPECT_EQ(PlaceConnectorWork(tx, source_id_, 2), 1);  // only the unplaced one moves
    EXPECT_EQ(PlaceConnectorWork(tx, source_id_, 2), 0);  // a re-plan changes nothing
    auto rows = tx.exec_params(
        "SELECT name, shard_index FROM datamodel WHERE source_connector_id = $1 "
        "ORDER BY name",
        source_id_.ToString());
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0][1].as<int>(), 0);  // items -> the least-loaded shard
    EXPECT_EQ(rows[1][1].as<int>(), 1);  // placed stays
  });
}

TEST_F(OrchestratorTest, PastTheLicenseGraceWorkersPauseAndResumeOnAValidVerdict) {
  StartConnector(source_id_);
  ASSERT_TRUE(TickUntil([&] { return WorkerOf(source_id_).state == WorkerState::kLive; }));
  // The last verdict is older than the grace window: the control-plane went quiet.
  db_->Transact([&](pqxx::work& tx) {
    license::LicenseRepository::Store(tx, {true, std::nullopt, common::Clock::now() - 2h});
  });
  ASSERT_TRUE(TickUntil([&] { return WorkerOf(source_id_).state == WorkerState::kPaused; }));
  auto paused = WorkerOf(source_id_);
  ASSERT_TRUE(paused.reason.has_value());
  EXPECT_NE(paused.reason->find("grace window"), std::string::npos) << *paused.reason;
  EXPECT_EQ(EventCount("worker.license_paused"), 1);
  EXPECT_TRUE(TickUntil([&] { return orchestrator_->supervisor().Keys().empty(); }));
  // An operator's pause is not the license's: it must not resume on its own.
  StartConnector(target_id_);
  db_->Transact([&](pqxx::work& tx) {
    auto w = runtime::WorkerRepository::ForConnector(tx, target_id_)[0];
    w.Pause();
    runtime::WorkerRepository::Update(tx, w);
  });
  db_->Transact([&](pqxx::work& tx) {
    license::LicenseRepository::Store(tx, {true, std::nullopt, common::Clock::now()});
  });
  EXPECT_TRUE(TickUntil([&] { return WorkerOf(source_id_).state == WorkerState::kLive; }));
  EXPECT_FALSE(WorkerOf(source_id_).reason.has_value());
  EXPECT_EQ(WorkerOf(target_id_).state, WorkerState::kPaused);
}

// A datamodel with its own target_topic is republished by its source's
// worker (shaping included) and its subscriptions read that topic, shaped
// already; a `kafka` source always republishes its existing topic.
TEST_F(OrchestratorTest, DatamodelWithATargetTopicIsRepublishedBySourceAndReadBySubscriptions) {
  common::Uuid kafka_id = common::Uuid::V4();
  db_->Transact([&](pqxx::work& tx) {
    tx.exec_params(
        "UPDATE datamodel SET target_topic = 'items.shaped', consumer_id = 'dm-items', config = "
        "$1",
        nlohmann::json{{"transform", {{"exclude", {"label"}}}}}.dump());
    tx.exec_params("UPDATE connector SET json_configuration = $2 WHERE id = $1",
                   source_id_.ToString(),
                   nlohmann::json{{"url", source_.url()}, {"format", "avro"}}.dump());
    tx.exec_params(
        "INSERT INTO connector (id, name, connector_type, json_configuration, way, team_id, "
        "env_id) SELECT $1, 'k', 'kafka', $2, 'source', team_id, env_id FROM connector WHERE id = "
        "$3",
        kafka_id.ToString(), nlohmann::json{{"topic", "events"}}.dump(), source_id_.ToString());
    tx.exec_params(
        "INSERT INTO datamodel (id, name, config, source_connector_id, source_topic) VALUES "
        "($1, 'events', $2, $3, 'events')",
        common::Uuid::V4().ToString(), nlohmann::json{{"key", {"id"}}}.dump(), kafka_id.ToString());
  });
  auto launch = [&](const common::Uuid& id) {
    return db_->Transact([&](pqxx::work& tx) {
      auto w = runtime::WorkerRepository::EnsureShards(tx, id, 1)[0];
      auto built = BuildLaunchConfig(tx, w, nullptr);
      EXPECT_TRUE(built.ok()) << built.status().message();
      return built.ok() ? *built : nlohmann::json();
    });
  };
  auto source = launch(source_id_);
  ASSERT_EQ(source["datamodels"].size(), 1u) << source.dump();
  EXPECT_EQ(source["datamodels"][0]["source_topic"],
            connectors::TopicForTable("sluice", {"public", "items"}));
  EXPECT_EQ(source["datamodels"][0]["target_topic"], "items.shaped");
  EXPECT_EQ(source["datamodels"][0]["consumer_group"], "dm-items");
  EXPECT_EQ(source["datamodels"][0]["format"], "avro");
  EXPECT_EQ(source["datamodels"][0]["transform"]["exclude"][0], "label");
  EXPECT_EQ(source["source"]["format"], "avro");
  auto target = launch(target_id_);
  EXPECT_EQ(target["subscriptions"][0]["topic"], "items.shaped");
  EXPECT_EQ(target["subscriptions"][0]["datamodel_config"], nlohmann::json::object());
  EXPECT_FALSE(target["subscriptions"][0].contains("on_refusal")) << "stop, the default";
  db_->Transact([&](pqxx::work& tx) {
    tx.exec("UPDATE subscription SET config = '{\"on_refusal\": \"skip\"}'");
  });
  EXPECT_EQ(launch(target_id_)["subscriptions"][0]["on_refusal"], "skip");
  auto kafka = launch(kafka_id);
  EXPECT_EQ(kafka["source"]["type"], "kafka");
  ASSERT_EQ(kafka["datamodels"].size(), 1u) << kafka.dump();
  EXPECT_EQ(kafka["datamodels"][0]["target_topic"], "events.sluice");
  EXPECT_EQ(kafka["datamodels"][0]["input"], "json");
  EXPECT_EQ(kafka["datamodels"][0]["key"][0], "id");
  // The full launch carries where the registry is, and the connect policy
  // the worker checks its connections with (here: this process's, with the
  // data plane's database protected).
  guard::ProtectInProcess(guard::ControlDatabaseEndpoint(db_->url()));
  auto full = db_->Transact([&](pqxx::work& tx) {
    auto w = runtime::WorkerRepository::ForConnector(tx, source_id_)[0];
    return *BuildLaunch(tx, w, {std::nullopt, "http://127.0.0.1:8081"}, nullptr);
  });
  EXPECT_EQ(full["registry"]["url"], "http://127.0.0.1:8081");
  auto policy = guard::ConnectPolicy::FromJson(full["connect_policy"]);
  ASSERT_TRUE(policy.ok()) << full["connect_policy"].dump();
  ASSERT_FALSE(policy->protected_endpoints().empty()) << full["connect_policy"].dump();
  EXPECT_EQ(policy->protected_endpoints().back().rule, "control-database");
}

}  // namespace
}  // namespace sluice::orchestrator
