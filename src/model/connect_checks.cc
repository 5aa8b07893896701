#include "model/connect_checks.h"

#include "guard/connect_policy.h"
#include "guard/http_destination.h"
#include "guard/jsonl_path.h"
#include "guard/postgres_conninfo.h"
#include "model/error.h"

namespace sluice::model {

namespace {

void Throw(const common::Status& st, const char* code) {
  if (!st.ok()) throw ApiError(422, code, st.message());
}

std::string Text(const Json& config, const char* field) {
  return config.contains(field) && config[field].is_string() ? config[field].get<std::string>()
                                                             : std::string();
}

}  // namespace

void RequireConnectorAllowed(const std::string& system, const Json& config) {
  const auto& policy = *guard::ProcessPolicy();
  if (system == "postgresql") {
    Throw(guard::CheckPostgres(policy, guard::ConninfoFromConfig(config)), "connect_refused");
  } else if (system == "mysql") {
    int port = config.contains("port") && config["port"].is_number_integer()
                   ? config["port"].get<int>()
                   : 3306;
    Throw(guard::CheckConfigured(policy, {Text(config, "host"), port, std::nullopt}),
          "connect_refused");
  } else if (system == "http") {
    Throw(guard::CheckHttp(policy, Text(config, "url")), "connect_refused");
  } else if (system == "jsonl") {
    Throw(guard::CheckJsonlDirectory(Text(config, "directory")), "jsonl_root");
  }
}

void RequireWarehouseAllowed(const std::string& warehouse_type, const Json& config) {
  const auto& policy = *guard::ProcessPolicy();
  if (warehouse_type == "postgresql") {
    Throw(guard::CheckPostgres(policy, guard::ConninfoFromConfig(config)), "connect_refused");
  } else if (warehouse_type == "databricks") {
    std::string host = Text(config, "host");
    Throw(
        guard::CheckHttp(policy, host.find("://") == std::string::npos ? "https://" + host : host),
        "connect_refused");
  }
}

void RequireBootstrapAllowed(const Json& retention_configuration) {
  std::string bootstrap = Text(retention_configuration, "bootstrap_servers");
  if (bootstrap.empty()) return;
  Throw(guard::CheckBootstrap(*guard::ProcessPolicy(), bootstrap, false), "connect_refused");
}

void RequireJsonlTableName(const std::string& field, const std::string& table) {
  auto st = guard::CheckJsonlTableName(table);
  if (!st.ok()) throw ApiError(422, "jsonl_root", field + ": " + st.message());
}

}  // namespace sluice::model
