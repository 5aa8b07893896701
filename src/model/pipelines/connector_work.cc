#include "model/pipelines/connector_work.h"

#include <fmt/format.h>

namespace sluice::model {

using nlohmann::json;

namespace {

std::string Text(const pqxx::field& f) { return f.is_null() ? std::string() : f.c_str(); }

std::optional<std::string> OptionalText(const pqxx::field& f) {
  return f.is_null() ? std::nullopt : std::optional<std::string>(f.c_str());
}

std::optional<int> OptionalInt(const pqxx::field& f) {
  return f.is_null() ? std::nullopt : std::optional<int>(f.as<int>());
}

std::optional<common::Uuid> OptionalUuid(const pqxx::field& f) {
  return f.is_null() ? std::nullopt : common::Uuid::Parse(f.c_str());
}

json ParseJson(const pqxx::field& f) {
  if (f.is_null()) return json::object();
  auto j = json::parse(f.c_str(), nullptr, false);
  return j.is_discarded() ? json::object() : j;
}

// The table of a connector's work and the column naming the connector.
const char* WorkTable(bool source) { return source ? "datamodel" : "subscription"; }
const char* WorkOwner(bool source) {
  return source ? "source_connector_id" : "target_connector_id";
}

constexpr const char* kSubscriptionSourceSelect =
    "SELECT s.id, d.source_connector_id, s.target_connector_id, s.pipeline_id, "
    "coalesce(d.source_schema, 'public'), d.source_table, s.target_table_name, s.name "
    "FROM subscription s LEFT JOIN datamodel d ON d.id = s.datamodel_id ";
constexpr const char* kSubscriptionSourceOrder = " ORDER BY d.source_schema, d.source_table, s.id";

SubscriptionSource SubscriptionSourceFrom(const pqxx::row& r) {
  SubscriptionSource s;
  s.id = *common::Uuid::Parse(r[0].c_str());
  s.source_connector_id = OptionalUuid(r[1]);
  s.target_connector_id = OptionalUuid(r[2]);
  s.pipeline_id = OptionalUuid(r[3]);
  s.source_schema = r[4].c_str();
  s.source_table = OptionalText(r[5]);
  s.target_table_name = OptionalText(r[6]);
  s.name = r[7].c_str();
  return s;
}

std::vector<SubscriptionSource> SubscriptionSources(const pqxx::result& rows) {
  std::vector<SubscriptionSource> out;
  for (const auto& r : rows) out.push_back(SubscriptionSourceFrom(r));
  return out;
}

}  // namespace

std::optional<StoredConnector> FindStoredConnector(pqxx::transaction_base& tx,
                                                   const common::Uuid& id) {
  auto rows = tx.exec_params(
      "SELECT c.connector_type, c.way, c.json_configuration, e.retention_configuration, c.name, "
      "c.team_id "
      "FROM connector c LEFT JOIN env e ON e.id = c.env_id WHERE c.id = $1",
      id.ToString());
  if (rows.empty()) return std::nullopt;
  const auto& r = rows[0];
  StoredConnector c;
  c.connector_type = Text(r[0]);
  c.way = Text(r[1]);
  c.stored_configuration = ParseJson(r[2]);
  c.env_retention_configuration = ParseJson(r[3]);
  c.name = Text(r[4]);
  c.team_id = OptionalUuid(r[5]);
  return c;
}

std::optional<std::string> ConnectorWay(pqxx::transaction_base& tx, const common::Uuid& id) {
  auto way = tx.exec_params("SELECT way FROM connector WHERE id = $1", id.ToString());
  if (way.empty()) return std::nullopt;
  return std::string(way[0][0].c_str());
}

int CountConnectorWork(pqxx::transaction_base& tx, const common::Uuid& connector, bool source) {
  auto work = tx.exec_params(
      fmt::format("SELECT count(*) FROM {} WHERE {} = $1", WorkTable(source), WorkOwner(source)),
      connector.ToString());
  return work[0][0].as<int>();
}

std::vector<PlacedWork> LockConnectorWork(pqxx::transaction_base& tx, const common::Uuid& connector,
                                          bool source) {
  auto rows = tx.exec_params(fmt::format("SELECT id, shard_index FROM {} WHERE {} = $1 ORDER BY "
                                         "id FOR UPDATE",
                                         WorkTable(source), WorkOwner(source)),
                             connector.ToString());
  std::vector<PlacedWork> items;
  for (const auto& r : rows) items.push_back({r[0].c_str(), OptionalInt(r[1])});
  return items;
}

void PlaceWork(pqxx::transaction_base& tx, bool source, const std::string& id, int shard_index) {
  tx.exec_params(fmt::format("UPDATE {} SET shard_index = $2, updated_at = now() AT TIME ZONE "
                             "'UTC' WHERE id = $1",
                             WorkTable(source)),
                 id, shard_index);
}

std::vector<SourceDatamodel> EnabledDatamodelsOf(pqxx::transaction_base& tx,
                                                 const common::Uuid& source_connector,
                                                 bool with_tableless) {
  std::vector<SourceDatamodel> out;
  for (const auto& r : tx.exec_params(
           "SELECT id, source_schema, source_table, shard_index, source_topic, target_topic, "
           "coalesce(consumer_id, 'datamodel-' || id::text), config FROM datamodel WHERE "
           "source_connector_id = $1 AND coalesce(enabled, true) AND ($2 OR source_table IS "
           "NOT NULL) ORDER BY source_schema, source_table, id",
           source_connector.ToString(), with_tableless)) {
    SourceDatamodel d;
    d.id = Text(r[0]);
    d.source_schema = OptionalText(r[1]);
    d.source_table = Text(r[2]);
    d.shard_index = OptionalInt(r[3]);
    d.source_topic = Text(r[4]);
    d.target_topic = OptionalText(r[5]);
    d.consumer_group = Text(r[6]);
    d.config = ParseJson(r[7]);
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<TargetSubscription> EnabledSubscriptionsOf(pqxx::transaction_base& tx,
                                                       const common::Uuid& target_connector) {
  std::vector<TargetSubscription> out;
  for (const auto& r : tx.exec_params(
           "SELECT s.id, d.source_topic, coalesce(s.consumer_id, s.id::text), "
           "s.target_table_name, s.transform_config, s.error_table_enabled, s.error_table_name, "
           "s.shard_index, s.name, d.config, et.json_configuration, et.connector_type, "
           "d.target_topic, sc.connector_type, s.config FROM subscription s "
           "JOIN datamodel d ON d.id = s.datamodel_id "
           "LEFT JOIN connector sc ON sc.id = d.source_connector_id "
           "LEFT JOIN connector et ON et.id = s.error_table_target_id "
           "WHERE s.target_connector_id = $1 AND coalesce(s.enabled, true) ORDER BY s.id",
           target_connector.ToString())) {
    TargetSubscription s;
    s.id = Text(r[0]);
    s.source_topic = Text(r[1]);
    s.consumer_group = Text(r[2]);
    s.target_table_name = Text(r[3]);
    s.transform_config = ParseJson(r[4]);
    s.error_table_enabled = !r[5].is_null() && r[5].as<bool>();
    s.error_table_name = OptionalText(r[6]);
    s.shard_index = OptionalInt(r[7]);
    s.name = Text(r[8]);
    s.datamodel_config = ParseJson(r[9]);
    if (!r[10].is_null()) s.error_target_stored_configuration = ParseJson(r[10]);
    s.error_target_type = Text(r[11]);
    s.target_topic = OptionalText(r[12]);
    s.source_connector_type = Text(r[13]);
    s.config = ParseJson(r[14]);
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<SubscriptionSource> EnabledSubscriptionSourcesOfPipeline(pqxx::transaction_base& tx,
                                                                     const common::Uuid& pipeline) {
  return SubscriptionSources(tx.exec_params(std::string(kSubscriptionSourceSelect) +
                                                "WHERE s.pipeline_id = $1 AND "
                                                "coalesce(s.enabled, true)" +
                                                kSubscriptionSourceOrder,
                                            pipeline.ToString()));
}

std::vector<SubscriptionSource> EnabledSubscriptionSourcesOfConnector(pqxx::transaction_base& tx,
                                                                      const common::Uuid& connector,
                                                                      bool source) {
  std::string where =
      source ? "WHERE d.source_connector_id = $1" : "WHERE s.target_connector_id = $1";
  return SubscriptionSources(tx.exec_params(std::string(kSubscriptionSourceSelect) + where +
                                                " AND coalesce(s.enabled, true)" +
                                                kSubscriptionSourceOrder,
                                            connector.ToString()));
}

std::optional<SubscriptionSource> FindSubscriptionSource(pqxx::transaction_base& tx,
                                                         const common::Uuid& id) {
  auto r =
      tx.exec_params(std::string(kSubscriptionSourceSelect) + "WHERE s.id = $1", id.ToString());
  if (r.empty()) return std::nullopt;
  return SubscriptionSourceFrom(r[0]);
}

std::optional<SubscriptionShaping> FindSubscriptionShaping(pqxx::transaction_base& tx,
                                                           const common::Uuid& id) {
  auto sub = tx.exec_params(
      "SELECT s.transform_config, d.config FROM subscription s LEFT JOIN datamodel d ON d.id = "
      "s.datamodel_id WHERE s.id = $1",
      id.ToString());
  if (sub.empty()) return std::nullopt;
  return SubscriptionShaping{ParseJson(sub[0][1]), ParseJson(sub[0][0])};
}

}  // namespace sluice::model
