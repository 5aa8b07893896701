// A real back end API (in process, over real HTTP) on the backfill harness's
// data-plane database, for loaders that speak the loader protocol, and a
// stand-in for the Kubernetes API server. No Kubernetes cluster can run on
// this machine, so KubeStandIn plays the API server's REST surface the
// launcher uses (server-side apply PATCH, label-selected lists, DELETE) and,
// when asked, the kubelet: it runs an applied Job's container args as a real
// `sluice loader` process with the token from the Job's Secret in its env,
// then sets the Job's status from the exit code.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "api/authenticate.h"
#include "api/server.h"
#include "auth/secret_key.h"
#include "backfill/launcher.h"
#include "backfill_harness.h"
#include "common/subprocess.h"
#include "secrets/key_ring.h"

namespace sluice::backfill::testing {

class KubeStandIn {
 public:
  struct Seen {
    std::string method, path, body;
  };

  explicit KubeStandIn(bool run_jobs) : run_jobs_(run_jobs) {
    server_.Patch(".*", [this](const httplib::Request& q, httplib::Response& r) {
      auto object = nlohmann::json::parse(q.body);
      {
        std::lock_guard lock(mu_);
        seen_.push_back({q.method, q.path, q.body});
        objects_[q.path] = object;
      }
      if (run_jobs_ && object.value("kind", "") == "Job") RunJob(q.path, object);
      r.set_content(q.body, "application/json");
    });
    server_.Delete(".*", [this](const httplib::Request& q, httplib::Response& r) {
      std::lock_guard lock(mu_);
      seen_.push_back({q.method, q.path, q.body});
      if (objects_.erase(q.path) == 0) {
        r.status = 404;
        r.set_content(R"({"kind":"Status","message":"not found"})", "application/json");
        return;
      }
      r.set_content(R"({"kind":"Status","status":"Success"})", "application/json");
    });
    server_.Get(".*", [this](const httplib::Request& q, httplib::Response& r) {
      auto selector = q.get_param_value("labelSelector");
      auto eq = selector.find('=');
      std::string key = selector.substr(0, eq), value = selector.substr(eq + 1);
      nlohmann::json items = nlohmann::json::array();
      std::lock_guard lock(mu_);
      if (down_) {
        r.status = 503;
        r.set_content(R"({"kind":"Status","message":"unavailable"})", "application/json");
        return;
      }
      for (const auto& [path, object] : objects_) {
        if (path.rfind(q.path + "/", 0) != 0) continue;
        if (object["metadata"].value("labels", nlohmann::json::object()).value(key, "") == value)
          items.push_back(object);
      }
      r.set_content(nlohmann::json{{"kind", "List"}, {"items", items}}.dump(), "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~KubeStandIn() {
    server_.stop();
    thread_.join();
    for (auto& t : pods_) t.join();
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::optional<nlohmann::json> Object(const std::string& path) {
    std::lock_guard lock(mu_);
    auto it = objects_.find(path);
    return it == objects_.end() ? std::nullopt : std::optional<nlohmann::json>(it->second);
  }
  void Erase(const std::string& path) {
    std::lock_guard lock(mu_);
    objects_.erase(path);
  }
  void SetStatus(const std::string& path, nlohmann::json status) {
    std::lock_guard lock(mu_);
    objects_[path]["status"] = std::move(status);
  }
  void SetDown(bool down) {
    std::lock_guard lock(mu_);
    down_ = down;
  }
  std::vector<Seen> Requests(const std::string& method, const std::string& path_part) {
    std::lock_guard lock(mu_);
    std::vector<Seen> out;
    for (const auto& s : seen_)
      if (s.method == method && s.path.find(path_part) != std::string::npos) out.push_back(s);
    return out;
  }
  std::string PodLogs() {
    std::lock_guard lock(mu_);
    return logs_;
  }

 private:
  // The kubelet's part: the container's args, its env from the Secret.
  void RunJob(const std::string& path, const nlohmann::json& job) {
    const auto& c = job["spec"]["template"]["spec"]["containers"][0];
    std::string ns = job["metadata"]["namespace"];
    std::vector<std::string> argv = {"/usr/bin/env"};
    {
      std::lock_guard lock(mu_);
      for (const auto& e : c["env"]) {
        auto ref = e["valueFrom"]["secretKeyRef"];
        auto secret =
            objects_["/api/v1/namespaces/" + ns + "/secrets/" + ref["name"].get<std::string>()];
        argv.push_back(e["name"].get<std::string>() + "=" +
                       secret["stringData"].value(ref["key"].get<std::string>(), ""));
      }
    }
    argv.push_back(std::getenv("SLUICE_BIN"));
    for (const auto& a : c["args"]) argv.push_back(a);
    std::string attempt = job["metadata"]["annotations"].value("sluice.dev/attempt", "");
    std::lock_guard pods_lock(mu_);
    pods_.emplace_back([this, argv, path, attempt] {
      auto r = common::RunProcess(argv);
      std::lock_guard lock(mu_);
      logs_ += r.output;
      auto it = objects_.find(path);
      if (it == objects_.end() ||
          it->second["metadata"]["annotations"].value("sluice.dev/attempt", "") != attempt)
        return;  // deleted or replaced meanwhile
      it->second["status"] =
          r.exit_code == 0 ? nlohmann::json{{"succeeded", 1}} : nlohmann::json{{"failed", 1}};
    });
  }

  bool run_jobs_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  bool down_ = false;
  std::map<std::string, nlohmann::json> objects_;
  std::vector<Seen> seen_;
  std::vector<std::thread> pods_;
  std::string logs_;
};

// The back end's API over the harness's database, with a key ring for
// connector configs and a signer for loader tokens.
class ProtocolFixture : public ::testing::Test, public BackfillHarness {
 protected:
  void SetUp() override {
    server_ = std::make_unique<api::ApiServer>(db(), auth::SecretKey::Random(),
                                               *secrets::KeyRing::Load((dir() / "data").string()),
                                               api::ApiOptions{});
    ASSERT_TRUE(server_->Start("127.0.0.1", 0).ok());
  }
  void TearDown() override { server_->Stop(); }
  std::string ApiUrl() const { return "http://127.0.0.1:" + std::to_string(server_->port()); }
  std::string TokenFor(const common::Uuid& item, std::int64_t attempt) {
    return api::IssueLoaderToken(server_->context().signer, item, attempt, std::chrono::hours(1));
  }
  // A launcher whose loaders run as Jobs on `kube` and reach the database
  // through this fixture's API with their attempt's token.
  std::unique_ptr<Launcher> MakeLauncher(KubeStandIn& kube, int max_lost = 5) {
    LauncherOptions o;
    o.sluice_bin = std::getenv("SLUICE_BIN");
    o.run_dir = (dir() / "run").string();
    o.database_url = plane_url();
    o.partitions = 2;
    o.max_lost_attempts = max_lost;
    runtime::KubernetesLauncherOptions k8s;
    k8s.api.server = kube.url();
    k8s.api.token_file = "";
    k8s.api.ca_file = "";
    k8s.manifests.namespace_name = "data";
    k8s.manifests.image = "sluice:test";
    k8s.manifests.api_url = ApiUrl();
    o.kubernetes = k8s;
    o.issue_loader_token = [this](const common::Uuid& item, std::int64_t attempt) {
      return TokenFor(item, attempt);
    };
    return std::make_unique<Launcher>(db(), o);
  }
  std::unique_ptr<api::ApiServer> server_;
};

}  // namespace sluice::backfill::testing
