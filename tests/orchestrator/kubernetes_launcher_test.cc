// The Kubernetes launcher through the orchestrator. No Kubernetes cluster can
// run on this machine, so a small HTTP server here stands in for the API
// server: it speaks the part of its REST API the launcher uses (server-side
// apply PATCH, label-selected GET lists, DELETE) and records every request.
// The orchestrator, the launcher, the HTTP client and the database are real.
#include <gtest/gtest.h>
#include <httplib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <pqxx/pqxx>
#include <thread>

#include "license/license_repository.h"
#include "orchestrator/orchestrator.h"
#include "runtime/worker_repository.h"
#include "support/test_database.h"

namespace sluice::orchestrator {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using runtime::WorkerState;

class FakeApiServer {
 public:
  struct Seen {
    std::string method, path, query, content_type, authorization;
  };

  FakeApiServer() {
    server_.Patch(".*", [this](const httplib::Request& q, httplib::Response& r) {
      Record(q);
      std::lock_guard lock(mu_);
      objects_[q.path] = json::parse(q.body);
      r.set_content(q.body, "application/json");
    });
    server_.Delete(".*", [this](const httplib::Request& q, httplib::Response& r) {
      Record(q);
      std::lock_guard lock(mu_);
      if (objects_.erase(q.path) == 0) {
        r.status = 404;
        r.set_content(R"({"kind":"Status","message":"not found"})", "application/json");
        return;
      }
      r.set_content(R"({"kind":"Status","status":"Success"})", "application/json");
    });
    server_.Get(".*", [this](const httplib::Request& q, httplib::Response& r) {
      Record(q);
      // Only "key=value" selectors: all the launcher asks.
      auto selector = q.get_param_value("labelSelector");
      auto eq = selector.find('=');
      std::string key = selector.substr(0, eq), value = selector.substr(eq + 1);
      json items = json::array();
      std::lock_guard lock(mu_);
      for (const auto& [path, object] : objects_) {
        if (path.rfind(q.path + "/", 0) != 0) continue;
        auto labels = object["metadata"].value("labels", json::object());
        if (labels.value(key, "") == value) items.push_back(object);
      }
      r.set_content(json{{"kind", "List"}, {"items", items}}.dump(), "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeApiServer() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::optional<json> Object(const std::string& path) {
    std::lock_guard lock(mu_);
    auto it = objects_.find(path);
    return it == objects_.end() ? std::nullopt : std::optional<json>(it->second);
  }
  void Put(const std::string& path, json object) {
    std::lock_guard lock(mu_);
    objects_[path] = std::move(object);
  }
  std::vector<Seen> Requests(const std::string& method) {
    std::lock_guard lock(mu_);
    std::vector<Seen> out;
    for (const auto& s : seen_)
      if (s.method == method) out.push_back(s);
    return out;
  }

 private:
  void Record(const httplib::Request& q) {
    std::string query;
    for (const auto& [k, v] : q.params) query += k + "=" + v + "&";
    std::lock_guard lock(mu_);
    seen_.push_back({q.method, q.path, query, q.get_header_value("Content-Type"),
                     q.get_header_value("Authorization")});
  }
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::map<std::string, json> objects_;
  std::vector<Seen> seen_;
};

class KubernetesLauncherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = std::make_unique<store::Database>(plane_.url(), 4);
    dir_ = std::filesystem::temp_directory_path() / ("sluice-k8s-" + common::Uuid::V4().ToString());
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ / "token") << "cluster-token\n";
    connector_ = common::Uuid::V4();
    db_->Transact([&](pqxx::work& tx) {
      auto env = common::Uuid::V4().ToString(), team = common::Uuid::V4().ToString();
      tx.exec_params("INSERT INTO env (id, name, retention_configuration) VALUES ($1, 'e', $2)",
                     env, json{{"bootstrap_servers", "kafka:9092"}}.dump());
      tx.exec_params("INSERT INTO team (id, name, env_id) VALUES ($1, 't', $2)", team, env);
      tx.exec_params(
          "INSERT INTO connector (id, name, connector_type, json_configuration, way, team_id, "
          "env_id) VALUES ($1, 'orders-src', 'postgresql', $2, 'source', $3, $4)",
          connector_.ToString(), json{{"url", "postgresql://db/orders"}}.dump(), team, env);
      tx.exec_params(
          "INSERT INTO datamodel (id, name, config, source_connector_id, source_topic, "
          "source_schema, source_table) VALUES ($1, 'orders', '{}', $2, 'sluice.public.orders', "
          "'public', 'orders')",
          common::Uuid::V4().ToString(), connector_.ToString());
      license::LicenseRepository::Store(tx, {true, std::nullopt, common::Clock::now()});
    });
    options_.run_dir = (dir_ / "run").string();
    options_.stop_timeout = 1s;
    options_.backend_url = "http://sluice-api.sluice.svc:8080";
    options_.issue_worker_token = [](const runtime::Worker& w) {
      return "worker-token-" + w.launch_generation.ToString();
    };
    runtime::KubernetesLauncherOptions k8s;
    k8s.api.server = api_.url();
    k8s.api.token_file = (dir_ / "token").string();
    k8s.api.ca_file = "";
    k8s.manifests.namespace_name = "data";
    k8s.manifests.image = "sluice:test";
    options_.kubernetes = k8s;
    orchestrator_ = std::make_unique<Orchestrator>(*db_, options_);
  }
  void TearDown() override {
    orchestrator_.reset();
    std::filesystem::remove_all(dir_);
  }
  runtime::Worker Row() {
    return db_->Transact(
        [&](pqxx::work& tx) { return runtime::WorkerRepository::ForConnector(tx, connector_)[0]; });
  }
  void Start() {
    db_->Transact([&](pqxx::work& tx) {
      for (auto& w : runtime::WorkerRepository::EnsureShards(tx, connector_, 1)) {
        w.Start(common::Clock::now(), std::nullopt);
        runtime::WorkerRepository::Update(tx, w);
      }
    });
  }
  std::string DeploymentPath() {
    return "/apis/apps/v1/namespaces/data/deployments/sluice-worker-" +
           connector_.ToString().substr(0, 8) + "-0";
  }
  std::string SecretPath() {
    return "/api/v1/namespaces/data/secrets/sluice-worker-" + connector_.ToString().substr(0, 8) +
           "-0-token";
  }

  FakeApiServer api_;
  testing::TestDatabase plane_;
  std::unique_ptr<store::Database> db_;
  std::filesystem::path dir_;
  common::Uuid connector_;
  OrchestratorOptions options_;
  std::unique_ptr<Orchestrator> orchestrator_;
};

TEST_F(KubernetesLauncherTest, StartAppliesTheTokenSecretThenTheDeployment) {
  Start();
  ASSERT_TRUE(orchestrator_->Tick().ok());
  auto row = Row();
  auto secret = api_.Object(SecretPath());
  auto deployment = api_.Object(DeploymentPath());
  ASSERT_TRUE(secret.has_value());
  ASSERT_TRUE(deployment.has_value());
  EXPECT_EQ((*secret)["stringData"]["token"], "worker-token-" + row.launch_generation.ToString());
  auto annotations = (*deployment)["metadata"]["annotations"];
  EXPECT_EQ(annotations["sluice.dev/launch-generation"], row.launch_generation.ToString());
  EXPECT_EQ(annotations["sluice.dev/worker-id"], row.id.ToString());
  EXPECT_EQ(annotations["sluice.dev/config-hash"], row.launched_config_hash.value_or("none"));
  auto container = (*deployment)["spec"]["template"]["spec"]["containers"][0];
  EXPECT_EQ(container["image"], "sluice:test");
  auto args = container["args"].dump();
  EXPECT_NE(args.find("http://sluice-api.sluice.svc:8080"), std::string::npos) << args;
  EXPECT_EQ(container["env"][0]["valueFrom"]["secretKeyRef"]["name"],
            "sluice-worker-" + connector_.ToString().substr(0, 8) + "-0-token");
  // Decrypted connector settings never go into the cluster.
  EXPECT_EQ(deployment->dump().find("postgresql://db/orders"), std::string::npos);
  EXPECT_EQ(secret->dump().find("postgresql://db/orders"), std::string::npos);
  auto patches = api_.Requests("PATCH");
  ASSERT_EQ(patches.size(), 2u);
  EXPECT_EQ(patches[0].path, SecretPath());  // the token exists before the pod
  for (const auto& p : patches) {
    EXPECT_EQ(p.content_type, "application/apply-patch+yaml");
    EXPECT_NE(p.query.find("fieldManager=sluice"), std::string::npos);
    EXPECT_NE(p.query.find("force=true"), std::string::npos);
    EXPECT_EQ(p.authorization, "Bearer cluster-token");
  }
}

TEST_F(KubernetesLauncherTest, ARunningDeploymentIsNotReappliedAndSurvivesABackEndRestart) {
  Start();
  ASSERT_TRUE(orchestrator_->Tick().ok());
  auto generation = Row().launch_generation;
  ASSERT_TRUE(orchestrator_->Tick().ok());
  EXPECT_EQ(api_.Requests("PATCH").size(), 2u);
  // A new back end adopts what the cluster runs instead of relaunching it.
  orchestrator_ = std::make_unique<Orchestrator>(*db_, options_);
  ASSERT_TRUE(orchestrator_->Tick().ok());
  EXPECT_EQ(api_.Requests("PATCH").size(), 2u);
  EXPECT_EQ(Row().launch_generation, generation);
  EXPECT_TRUE(api_.Requests("DELETE").empty());
}

TEST_F(KubernetesLauncherTest, StopDeletesTheDeploymentAndItsSecret) {
  Start();
  ASSERT_TRUE(orchestrator_->Tick().ok());
  db_->Transact([&](pqxx::work& tx) {
    auto w = *runtime::WorkerRepository::FindForUpdate(tx, Row().id);
    w.RequestStop(common::Clock::now());
    runtime::WorkerRepository::Update(tx, w);
  });
  for (int i = 0; i < 50 && Row().state != WorkerState::kStopped; ++i) {
    ASSERT_TRUE(orchestrator_->Tick().ok());
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(Row().state, WorkerState::kStopped);
  EXPECT_FALSE(api_.Object(DeploymentPath()).has_value());
  EXPECT_FALSE(api_.Object(SecretPath()).has_value());
}

TEST_F(KubernetesLauncherTest, ADeploymentNoWorkerWantsIsDeleted) {
  std::string orphan = "/apis/apps/v1/namespaces/data/deployments/sluice-worker-deadbeef-0";
  api_.Put(orphan, {{"metadata",
                     {{"name", "sluice-worker-deadbeef-0"},
                      {"labels", {{"app.kubernetes.io/name", "sluice-worker"}}},
                      {"annotations",
                       {{"sluice.dev/worker-id", common::Uuid::V4().ToString()},
                        {"sluice.dev/launch-generation", common::Uuid::V4().ToString()}}}}}});
  ASSERT_TRUE(orchestrator_->Tick().ok());
  EXPECT_FALSE(api_.Object(orphan).has_value());
}

TEST_F(KubernetesLauncherTest, AnUnreachableApiServerIsTheWorkersReasonUntilItAnswers) {
  options_.kubernetes->api.server = "http://127.0.0.1:1";
  orchestrator_ = std::make_unique<Orchestrator>(*db_, options_);
  Start();
  ASSERT_TRUE(orchestrator_->Tick().ok());
  auto row = Row();
  ASSERT_TRUE(row.reason.has_value());
  EXPECT_NE(row.reason->find("cannot launch: Kubernetes API server"), std::string::npos)
      << *row.reason;
  EXPECT_EQ(row.state, WorkerState::kStarting);  // the intent stands
  options_.kubernetes->api.server = api_.url();
  orchestrator_ = std::make_unique<Orchestrator>(*db_, options_);
  ASSERT_TRUE(orchestrator_->Tick().ok());
  EXPECT_TRUE(api_.Object(DeploymentPath()).has_value());
}

TEST_F(KubernetesLauncherTest, WithoutTheWorkerProtocolNothingIsApplied) {
  options_.backend_url.reset();
  orchestrator_ = std::make_unique<Orchestrator>(*db_, options_);
  Start();
  ASSERT_TRUE(orchestrator_->Tick().ok());
  auto row = Row();
  ASSERT_TRUE(row.reason.has_value());
  EXPECT_NE(row.reason->find("worker protocol"), std::string::npos) << *row.reason;
  EXPECT_TRUE(api_.Requests("PATCH").empty());
}

}  // namespace
}  // namespace sluice::orchestrator
