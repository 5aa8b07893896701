// A MariaDB table to backfill through the backfill harness: what the loader
// tests over a mysql-source share.
#pragma once

#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <string>

#include "backfill/backfill_harness.h"
#include "common/uuid.h"
#include "support/mariadb_server.h"

namespace sluice::backfill::testing {

// A subscription backfilling `table` of `maria` into `target_table` of the
// harness's PostgreSQL destination, through a datamodel (source_schema NULL:
// MySQL has no schema) of the mysql connector `*connector`, which the first
// call makes while it is nil.
inline common::Uuid AddMysqlPair(BackfillHarness& harness,
                                 const sluice::testing::TestMariaDatabase& maria,
                                 common::Uuid* connector, const std::string& table,
                                 const std::string& target_table) {
  const auto& server = sluice::testing::TestMariaDb();
  auto sub = common::Uuid::V4();
  harness.db().Transact([&](pqxx::work& tx) {
    if (connector->is_nil()) {
      *connector = common::Uuid::V4();
      tx.exec_params(
          "INSERT INTO connector (id, name, connector_type, json_configuration, way, team_id, "
          "env_id) SELECT $1, 'maria', 'mysql', $2, 'source', $3, env_id FROM team WHERE id = $3",
          connector->ToString(),
          nlohmann::json{{"host", "127.0.0.1"},
                         {"port", server.port},
                         {"user", server.user},
                         {"password", server.password},
                         {"database", maria.name()}}
              .dump(),
          harness.team_id().ToString());
    }
    auto dm = common::Uuid::V4().ToString();
    tx.exec_params(
        "INSERT INTO datamodel (id, name, config, source_connector_id, source_topic, "
        "source_schema, source_table) VALUES ($1, $2, '{}', $3, $4, NULL, $2)",
        dm, table, connector->ToString(), "sluice." + maria.name() + "." + table);
    tx.exec_params(
        "INSERT INTO subscription (id, name, config, transform_config, datamodel_id, "
        "target_connector_id, error_table_enabled, target_table_name, "
        "requires_unique_destination) VALUES ($1, $2, '{}', '{}', $3, $4, false, $5, true)",
        sub.ToString(), table + "-sub", dm, harness.target_id().ToString(), target_table);
  });
  return sub;
}

}  // namespace sluice::backfill::testing
