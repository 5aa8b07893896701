#include "api/source_tables.h"

#include "connectors/mysql/mysql_source.h"
#include "guard/connect_policy.h"
#include "guard/postgres_conninfo.h"
#include "launch/source_launch.h"

namespace sluice::api {

namespace {

// `message` with every secret of the configuration masked, should a
// server's words ever quote one.
std::string WithoutSecrets(std::string message, const model::ConnectorRow& c) {
  const auto* type = c.type();
  if (!type) return message;
  for (const auto& field : type->fields) {
    if (!field.secret || !c.configuration.contains(field.name) ||
        !c.configuration[field.name].is_string())
      continue;
    const auto secret = c.configuration[field.name].get<std::string>();
    if (secret.empty()) continue;
    for (auto at = message.find(secret); at != std::string::npos; at = message.find(secret, at + 8))
      message.replace(at, secret.size(), "********");
  }
  return message;
}

}  // namespace

std::optional<common::Result<std::vector<connectors::ListedTable>>> ReadSourceTables(
    const model::ConnectorRow& c) {
  common::Result<std::vector<connectors::ListedTable>> tables = common::Unavailable("not read");
  if (c.connector_type == "postgresql") {
    auto pinned = guard::PinPostgres(guard::ConninfoFromConfig(c.configuration));
    tables = pinned.ok() ? connectors::ListPostgresTables(*pinned)
                         : common::Result<std::vector<connectors::ListedTable>>(pinned.status());
  } else if (c.connector_type == "mysql") {
    auto source = launch::MysqlSourceLaunch::FromConnector(c.configuration, 0, 0, "", "json", {});
    tables = connectors::ListMysqlTables(
        connectors::mysql::MysqlSourceOptionsFromLaunch(source).endpoint, source.database);
  } else {
    return std::nullopt;
  }
  if (!tables.ok())
    return common::Status(tables.status().code(), WithoutSecrets(tables.status().message(), c));
  return tables;
}

}  // namespace sluice::api
