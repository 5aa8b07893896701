// The pipeline the orchestrator suites run: in a fresh env whose broker
// settings are `broker`, one team's PostgreSQL source and target (by URL), a
// datamodel on public.items and a subscription into items_copy; and a fresh
// license verdict (the license is default-deny).
#pragma once

#include <nlohmann/json.hpp>
#include <pqxx/pqxx>

#include <string>

#include "common/time.h"
#include "common/uuid.h"
#include "connectors/topic_naming.h"
#include "license/license_repository.h"

namespace sluice::testing {

inline void SeedItemsPipeline(pqxx::work& tx, const nlohmann::json& broker,
                              const common::Uuid& source_id, const std::string& source_url,
                              const common::Uuid& target_id, const std::string& target_url) {
  auto env = common::Uuid::V4().ToString(), team = common::Uuid::V4().ToString();
  tx.exec_params("INSERT INTO env (id, name, retention_configuration) VALUES ($1, 'e', $2)", env,
                 broker.dump());
  tx.exec_params("INSERT INTO team (id, name, env_id) VALUES ($1, 't', $2)", team, env);
  auto connector = [&](const common::Uuid& id, const char* name, const char* way,
                       const std::string& url) {
    tx.exec_params(
        "INSERT INTO connector (id, name, connector_type, json_configuration, way, team_id, "
        "env_id) VALUES ($1, $2, 'postgresql', $3, $4, $5, $6)",
        id.ToString(), name, nlohmann::json{{"url", url}}.dump(), way, team, env);
  };
  connector(source_id, "src", "source", source_url);
  connector(target_id, "dst", "target", target_url);
  auto dm = common::Uuid::V4().ToString();
  tx.exec_params(
      "INSERT INTO datamodel (id, name, config, source_connector_id, source_topic, "
      "source_schema, source_table) VALUES ($1, 'items', '{}', $2, $3, 'public', 'items')",
      dm, source_id.ToString(), connectors::TopicForTable("sluice", {"public", "items"}));
  tx.exec_params(
      "INSERT INTO subscription (id, name, config, transform_config, datamodel_id, "
      "target_connector_id, error_table_enabled, target_table_name, "
      "requires_unique_destination) VALUES ($1, 's', '{}', '{}', $2, $3, false, "
      "'items_copy', true)",
      common::Uuid::V4().ToString(), dm, target_id.ToString());
  license::LicenseRepository::Store(tx, {true, std::nullopt, common::Clock::now()});
}

}  // namespace sluice::testing
