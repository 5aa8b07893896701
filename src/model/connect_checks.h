// The connect policy (guard/connect_policy.h) when a configuration is saved
// or used through the API: a connector, warehouse or env whose connection
// would reach the data-plane's control database, its API or registry, or a
// denied address is a 422 naming the rule (code "connect_refused"); a JSONL
// directory or table name leading out of the JSONL root is a 422 too
// (code "jsonl_root"). The same rules are checked again at connect time.
#pragma once

#include <string>

#include "model/pipelines/connectors_repository.h"

namespace sluice::model {

// A connector's configuration of `system` (postgresql, http, jsonl, kafka).
void RequireConnectorAllowed(const std::string& system, const Json& config);
// A warehouse's configuration of `warehouse_type` (postgresql, databricks).
void RequireWarehouseAllowed(const std::string& warehouse_type, const Json& config);
// An env's retention_configuration: its broker's bootstrap_servers.
void RequireBootstrapAllowed(const Json& retention_configuration);
// A table a JSONL target writes (a subscription's target_table_name).
void RequireJsonlTableName(const std::string& field, const std::string& table);

}  // namespace sluice::model
