// What the backfill launcher hands a loader (`sluice loader --config FILE`,
// JSON in a 0600 launch file): one item, its source table, its destination
// and how to load it. backfill/launch.cc builds it, backfill/loader.cc reads
// it (backfill::LoaderConfig is this struct). Unknown keys are ignored.
// The JSON carries secrets (the source and target URLs): never log it.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace sluice::launch {

// A mysql source's server (the loader connects through the connect policy,
// connectors/mysql/mysql_connection.h).
struct LoaderMysqlSource {
  std::string host;
  int port = 3306;
  std::string user;
  std::string password;
  std::string database;  // the source table's database
  bool operator==(const LoaderMysqlSource&) const = default;
};

struct LoaderLaunch {
  std::string item_id;
  std::optional<std::int64_t> attempt_micros;  // the item's started_at: fences reports
  std::string source_type = "postgresql";      // postgresql | mysql
  std::string source_url;                      // postgresql: libpq conninfo
  std::optional<LoaderMysqlSource> mysql;      // mysql: the server (source_url unused)
  // postgresql: "schema.table"; mysql: the table's name in mysql->database.
  std::string source_table;
  std::string target_type;  // postgresql | http | jsonl
  nlohmann::json target;    // the target runtime config (launch/target_launch.h TargetToJson)
  std::string target_schema = "public";
  std::string target_table;
  bool truncate_history = false;
  bool already_truncated = false;  // an earlier attempt emptied it: do not again
  std::optional<std::string> partition_column;
  bool sequential_read = false;
  std::vector<nlohmann::json> transforms;  // datamodel shaping, then the subscription's
  std::optional<std::string> report_database_url;
  int partitions = 4;
  int chunk_rows = 20000;  // rows per chunk (the fence is held for one chunk)
  // The launcher's connect policy (guard/connect_policy.h), so the loader's
  // connect-time check is serve's; null: this process's own.
  nlohmann::json connect_policy;

  bool operator==(const LoaderLaunch&) const = default;
  nlohmann::json ToJson() const;
  static common::Result<LoaderLaunch> FromJson(const nlohmann::json& j);
};

}  // namespace sluice::launch
