// An external Kafka as a deployment configures it: the env's
// retention_configuration names SASL_SSL, a SASL user and password, and the
// CA as PEM text (nothing mounted into worker pods). Against the embedded
// broker with TLS and SASL enabled, the pipeline's real worker processes
// connect with those settings and move the rows; with a wrong password
// nothing moves (the broker enforces what the settings claim).
#include <gtest/gtest.h>

#include <fstream>
#include <pqxx/pqxx>
#include <thread>

#include "broker/broker_harness.h"
#include "common/uuid.h"
#include "connectors/topic_naming.h"
#include "items_pipeline.h"
#include "license/license_repository.h"
#include "orchestrator/orchestrator.h"
#include "runtime/worker_repository.h"
#include "support/pipeline_checks.h"
#include "support/test_database.h"
#include "support/tls_cert.h"

namespace sluice::orchestrator {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using runtime::WorkerState;

constexpr const char* kUser = "sluice-ext";
constexpr const char* kPassword = "ext-secret-1";

class ExternalKafka : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::temp_directory_path() / ("sluice-extk-" + common::Uuid::V4().ToString());
    cert_ = testing::MakeSelfSignedCert(dir_ / "tls");
    broker_ = std::make_unique<testing::BrokerProcess>(
        std::vector<std::string>{"--sasl-user", std::string(kUser) + ":" + kPassword, "--tls-cert",
                                 cert_.cert, "--tls-key", cert_.key});
    broker_->Start();
    db_ = std::make_unique<store::Database>(plane_.url(), 4);
    pqxx::connection c(source_.url());
    pqxx::nontransaction(c).exec(
        "CREATE TABLE items (id int PRIMARY KEY, label text); "
        "INSERT INTO items SELECT g, 'item ' || g FROM generate_series(1, 300) g");
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
    broker_.reset();
    if (!HasFailure()) std::filesystem::remove_all(dir_);
  }

  // A pipeline on an env whose broker settings are `kafka`, started.
  void Pipeline(const json& kafka) {
    source_id_ = common::Uuid::V4();
    target_id_ = common::Uuid::V4();
    db_->Transact([&](pqxx::work& tx) {
      testing::SeedItemsPipeline(tx, kafka, source_id_, source_.url(), target_id_, target_.url());
      for (const auto& id : {source_id_, target_id_})
        for (auto& w : runtime::WorkerRepository::EnsureShards(tx, id, 1)) {
          w.Start(common::Clock::now(), std::nullopt);
          runtime::WorkerRepository::Update(tx, w);
        }
    });
    OrchestratorOptions options;
    options.sluice_bin = std::getenv("SLUICE_BIN");
    options.run_dir = (dir_ / "run").string();
    options.report_database_url = plane_.url();
    options.supervisor = {.initial_backoff = 200ms, .max_backoff = 1000ms};
    options.license_grace = 3600s;
    orchestrator_ = std::make_unique<Orchestrator>(*db_, options);
  }
  json Settings(const std::string& password) {
    std::ifstream in(cert_.cert);
    std::string pem((std::istreambuf_iterator<char>(in)), {});
    return {{"bootstrap_servers", broker_->bootstrap()},
            {"security_protocol", "sasl_ssl"},
            {"sasl_mechanism", "PLAIN"},
            {"sasl_username", kUser},
            {"sasl_password", password},
            {"ssl_ca_pem", pem}};
  }
  int TargetRows() {
    try {
      pqxx::connection c(target_.url());
      return pqxx::nontransaction(c).exec1("SELECT count(*) FROM items_copy")[0].as<int>();
    } catch (...) {
      return -1;
    }
  }
  runtime::Worker WorkerOf(const common::Uuid& connector) {
    return db_->Transact(
        [&](pqxx::work& tx) { return runtime::WorkerRepository::ForConnector(tx, connector)[0]; });
  }
  template <typename Pred>
  bool TickUntil(Pred pred, std::chrono::seconds limit) {
    for (auto deadline = std::chrono::steady_clock::now() + limit;
         std::chrono::steady_clock::now() < deadline;) {
      EXPECT_TRUE(orchestrator_->Tick().ok());
      if (pred()) return true;
      std::this_thread::sleep_for(250ms);
    }
    return pred();
  }
  std::string WorkerLogs() { return testing::LogTails(dir_ / "run", 2000); }

  std::filesystem::path dir_;
  testing::TestCert cert_;
  std::unique_ptr<testing::BrokerProcess> broker_;
  testing::TestDatabase plane_, source_, target_;
  std::unique_ptr<store::Database> db_;
  common::Uuid source_id_, target_id_;
  std::unique_ptr<Orchestrator> orchestrator_;
};

TEST_F(ExternalKafka, WorkersMoveRowsOverSaslSslWithTheCaGivenAsPemInTheEnvSettings) {
  Pipeline(Settings(kPassword));
  ASSERT_TRUE(TickUntil(
      [&] {
        return WorkerOf(source_id_).state == WorkerState::kLive &&
               WorkerOf(target_id_).state == WorkerState::kLive && TargetRows() == 300;
      },
      90s))
      << "rows " << TargetRows() << "\n"
      << WorkerLogs() << broker_->log();
  {
    pqxx::connection c(source_.url());
    pqxx::nontransaction(c).exec(
        "INSERT INTO items SELECT g, 'late ' || g FROM generate_series(301, 350) g");
  }
  EXPECT_TRUE(TickUntil([&] { return TargetRows() == 350; }, 60s)) << WorkerLogs();
}

TEST_F(ExternalKafka, AWrongSaslPasswordMovesNothing) {
  Pipeline(Settings("not-the-password"));
  // Long enough for a worker with the right password to have gone live.
  TickUntil([&] { return TargetRows() > 0; }, 20s);
  EXPECT_LE(TargetRows(), 0) << "nothing reached the target\n" << WorkerLogs();
}

}  // namespace
}  // namespace sluice::orchestrator
