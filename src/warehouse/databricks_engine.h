// The `databricks` engine: Databricks' SQL Statement Execution API 2.0 over
// HTTPS (libcurl). Submit is POST /api/2.0/sql/statements with
// wait_timeout=0s (asynchronous), Poll is GET .../statements/{id}, Cancel is
// POST .../statements/{id}/cancel, and results arrive INLINE as JSON_ARRAY
// chunks, the first with the statement and the others from
// GET .../statements/{id}/result/chunks/{n}.
#pragma once

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>

#include "warehouse/engine.h"

namespace sluice::warehouse {

struct DatabricksOptions {
  std::chrono::seconds request_timeout{30};  // per HTTP request
};

// config: host ("dbc-1.cloud.databricks.com"; a value with a scheme, such as
// "http://127.0.0.1:8000", is used as the base URL as it is), http_path
// ("/sql/1.0/warehouses/<id>": the warehouse id is its last segment), token,
// and optional catalog and schema.
common::Result<std::unique_ptr<Engine>> ConnectDatabricks(const nlohmann::json& config,
                                                          DatabricksOptions options = {});

}  // namespace sluice::warehouse
