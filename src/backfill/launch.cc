#include "backfill/launch.h"

#include <fmt/format.h>

#include "backfill/repository.h"
#include "guard/connect_policy.h"
#include "guard/jsonl_path.h"
#include "launch/target_launch.h"
#include "model/pipelines/connector_work.h"
#include "orchestrator/launch_builder.h"
#include "secrets/configuration_cipher.h"

namespace sluice::backfill {

using nlohmann::json;

namespace {

common::Result<json> Config(const json& stored, const secrets::KeyRing* keys) {
  if (!keys) return stored;
  return secrets::DecryptConfiguration(stored, *keys);
}

}  // namespace

common::Result<LoaderConfig> BuildLoaderConfig(pqxx::transaction_base& tx, const BackfillItem& item,
                                               const BackfillRun& run, const secrets::KeyRing* keys,
                                               std::optional<std::string> report_database_url) {
  auto src = model::FindStoredConnector(tx, run.source_connector_id);
  if (!src) return common::NotFound("the source connector no longer exists");
  const std::string source_type = src->connector_type;
  if (source_type != "postgresql" && source_type != "mysql")
    return common::FailedPrecondition(fmt::format("no loader for a {} source", source_type));
  auto source_config = Config(src->stored_configuration, keys);
  if (!source_config.ok()) return source_config.status();
  auto dst = model::FindStoredConnector(tx, item.target_connector_id);
  if (!dst) return common::NotFound("the destination connector no longer exists");
  auto target_config = Config(dst->stored_configuration, keys);
  if (!target_config.ok()) return target_config.status();

  LoaderConfig c;
  c.item_id = item.id.ToString();
  if (item.started_at) c.attempt_micros = Micros(*item.started_at);
  c.source_type = source_type;
  c.source_table = item.source_table_name;
  if (source_type == "mysql") {
    // The item names the table "<database>.<table>" (MySQL has no schemas;
    // neither name can hold a dot).
    auto dot = item.source_table_name.find('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 == item.source_table_name.size())
      return common::InvalidArgument(
          fmt::format("backfill item names {} where a mysql source needs <database>.<table>",
                      item.source_table_name));
    launch::LoaderMysqlSource m;
    m.host = source_config->value("host", std::string());
    m.port = source_config->value("port", 3306);
    m.user = source_config->value("user", std::string());
    m.password = source_config->value("password", std::string());
    m.database = item.source_table_name.substr(0, dot);
    c.source_table = item.source_table_name.substr(dot + 1);
    c.mysql = std::move(m);
  } else {
    c.source_url = orchestrator::PostgresConninfo(*source_config);
  }
  c.target_type = dst->connector_type;
  // The same target the connector's worker writes to (under its team's part
  // of the JSONL root), built by the one function both launchers use.
  auto target = launch::TargetFromConnector(
      c.target_type, *target_config, dst->team_id ? dst->team_id->ToString() : std::string());
  if (!target.ok()) return target.status();
  if (auto* jsonl = std::get_if<launch::JsonlTargetLaunch>(&*target))
    jsonl->root = guard::ProcessJsonlRoot();
  c.target = launch::TargetToJson(*target);
  // The loader checks its connections at connect time with this policy.
  c.connect_policy = guard::ProcessPolicy()->ToJson();
  c.target_schema = target_config->value("schema", std::string("public"));
  c.target_table = item.target_table_name;
  c.truncate_history = run.truncate_history;
  c.already_truncated = item.truncated_at.has_value();
  c.partition_column = item.partition_column;
  c.sequential_read = item.sequential_read;
  // The same shaping the live stream applies: the datamodel's, then the
  // subscription's. A deleted subscription leaves the rows unshaped.
  if (auto shaping = model::FindSubscriptionShaping(tx, item.subscription_id)) {
    c.transforms.push_back(shaping->datamodel_config.value("transform", json::object()));
    c.transforms.push_back(shaping->transform_config);
  }
  c.report_database_url = std::move(report_database_url);
  return c;
}

}  // namespace sluice::backfill
