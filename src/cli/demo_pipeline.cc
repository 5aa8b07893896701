#include "cli/demo_pipeline.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <pqxx/pqxx>
#include <random>

#include "common/uuid.h"
#include "connectors/topic_naming.h"
#include "model/pipelines/connectors_repository.h"
#include "model/pipelines/datamodels_repository.h"
#include "model/pipelines/subscriptions_repository.h"
#include "runtime/worker_repository.h"
#include "store/provision.h"

namespace sluice::cli {

namespace {
constexpr const char* kPipelineName = "demo-orders";
}  // namespace

common::Result<DemoPipeline> SeedDemo(store::Database& db, store::EmbeddedCluster& cluster,
                                      const secrets::KeyRing& keys,
                                      const std::string& broker_bootstrap,
                                      const std::string& format) {
  try {
    SLUICE_RETURN_IF_ERROR(cluster.EnsureRole(kDemoRole, "REPLICATION"));
    for (const char* name : {"sluice_demo_source", "sluice_demo_target"})
      SLUICE_RETURN_IF_ERROR(store::OwnDatabase(cluster, kDemoRole, name));
    auto demo_password = cluster.PasswordOf(kDemoRole);
    if (!demo_password.ok()) return demo_password.status();
    DemoPipeline demo{"", cluster.Url("sluice_demo_source", kDemoRole),
                      cluster.Url("sluice_demo_target", kDemoRole)};
    {
      pqxx::connection src(demo.source_url);
      pqxx::nontransaction(src).exec(
          "CREATE TABLE IF NOT EXISTS public.orders (id bigserial PRIMARY KEY, customer text NOT "
          "NULL, amount numeric(12,2) NOT NULL, status text NOT NULL DEFAULT 'new', tags text[], "
          "created_at timestamptz NOT NULL DEFAULT now()); "
          "INSERT INTO public.orders (customer, amount, tags) SELECT 'customer-' || g, g * 3.25, "
          "ARRAY['demo'] FROM generate_series(1, 100) g WHERE NOT EXISTS (SELECT 1 FROM orders)");
    }
    auto existing = db.Transact([&](pqxx::work& tx) {
      return tx.exec_params("SELECT id FROM pipeline WHERE name = $1", kPipelineName);
    });
    if (!existing.empty()) {
      demo.pipeline_id = existing[0][0].c_str();
      return demo;
    }
    auto port = cluster.port();
    db.Transact([&](pqxx::work& tx) {
      auto now = "now() AT TIME ZONE 'UTC'";
      auto env = common::Uuid::V4().ToString(), team = common::Uuid::V4().ToString();
      auto source = common::Uuid::V4().ToString(), target = common::Uuid::V4().ToString();
      auto datamodel = common::Uuid::V4().ToString(), sub = common::Uuid::V4().ToString();
      demo.pipeline_id = common::Uuid::V4().ToString();
      nlohmann::json broker = {{"bootstrap_servers", broker_bootstrap},
                               {"security_protocol", "plaintext"}};
      tx.exec_params(fmt::format("INSERT INTO env (id, name, retention_configuration, created_at, "
                                 "updated_at) VALUES ($1, 'demo', $2, {0}, {0})",
                                 now),
                     env, broker.dump());
      tx.exec_params(fmt::format("INSERT INTO team (id, name, description, env_id, created_at, "
                                 "updated_at) VALUES ($1, 'demo', 'The demo team', $2, {0}, {0})",
                                 now),
                     team, env);
      auto connector = [&](const std::string& id, const std::string& name, const std::string& way,
                           const std::string& database) {
        model::ConnectorRow c;
        c.id = *common::Uuid::Parse(id);
        c.name = name;
        c.connector_type = "postgresql";
        c.way = way;
        c.configuration = {{"host", "127.0.0.1"},
                           {"port", port},
                           {"database", database},
                           {"user", kDemoRole},
                           {"password", *demo_password}};
        if (way == "source") c.configuration["format"] = format;
        c.team_id = common::Uuid::Parse(team);
        c.env_id = common::Uuid::Parse(env);
        model::InsertConnector(tx, keys, c);
      };
      connector(source, "demo-source", "source", "sluice_demo_source");
      connector(target, "demo-target", "target", "sluice_demo_target");
      auto topic = connectors::TopicForTable("sluice", {"public", "orders"});
      model::DatamodelRow d;
      d.id = *common::Uuid::Parse(datamodel);
      d.name = "orders";
      d.source_connector_id = common::Uuid::Parse(source);
      d.source_topic = d.target_topic = topic;
      d.source_schema = "public";
      d.source_table = "orders";
      model::InsertDatamodel(tx, d);
      tx.exec_params(
          fmt::format("INSERT INTO pipeline (id, name, json_configuration, version, "
                      "is_completed, team_id, env_id, source_connector_id, "
                      "target_connector_id, datamodel_id, created_at, updated_at) VALUES "
                      "($1, $2, '{{}}', 1, true, $3, $4, $5, $6, $7, {0}, {0})",
                      now),
          demo.pipeline_id, kPipelineName, team, env, source, target, datamodel);
      model::SubscriptionRow subscription;
      subscription.id = *common::Uuid::Parse(sub);
      subscription.name = "orders-copy";
      subscription.pipeline_id = common::Uuid::Parse(demo.pipeline_id);
      subscription.datamodel_id = d.id;
      subscription.target_connector_id = common::Uuid::Parse(target);
      subscription.error_table_enabled = true;
      subscription.error_table_name = "orders_errors";
      subscription.target_table_name = "orders";
      model::InsertSubscription(tx, subscription);  // consumer_id: the id
      for (const auto& c : {source, target}) {
        for (auto& w : runtime::WorkerRepository::EnsureShards(tx, *common::Uuid::Parse(c), 1)) {
          w.Start(common::Clock::now(), std::nullopt);
          runtime::WorkerRepository::Update(tx, w);
        }
      }
    });
    return demo;
  } catch (const std::exception& e) {
    return common::Internal(fmt::format("cannot set up the demo: {}", e.what()));
  }
}

std::thread StartDemoWriter(std::string source_url, const std::atomic<bool>& stop) {
  return std::thread([url = std::move(source_url), &stop] {
    std::mt19937 rng(std::random_device{}());
    while (!stop) {
      try {
        pqxx::connection c(url);
        while (!stop) {
          pqxx::work tx(c);
          tx.exec_params(
              "INSERT INTO orders (customer, amount, tags) VALUES ($1, $2, ARRAY['live'])",
              fmt::format("customer-{}", rng() % 1000), (rng() % 100000) / 100.0);
          tx.exec(
              "UPDATE orders SET status = 'paid', amount = amount + 1 WHERE id = (SELECT id FROM "
              "orders ORDER BY random() LIMIT 1)");
          if (rng() % 5 == 0)
            tx.exec(
                "DELETE FROM orders WHERE id = (SELECT id FROM orders ORDER BY random() LIMIT 1)");
          tx.commit();
          std::this_thread::sleep_for(std::chrono::milliseconds(500));
        }
      } catch (const std::exception& e) {
        spdlog::warn("demo writer: {}", e.what());
        std::this_thread::sleep_for(std::chrono::seconds(2));
      }
    }
  });
}

}  // namespace sluice::cli
