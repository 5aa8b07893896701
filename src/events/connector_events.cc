#include "events/connector_events.h"

#include <spdlog/spdlog.h>

namespace sluice::events {

std::optional<ResourceRef> LoadResourceRef(pqxx::work& tx, const ResourceIds& ids) {
  auto c = tx.exec_params("SELECT env_id, team_id, name FROM connector WHERE id = $1",
                          ids.connector_id.ToString());
  if (c.empty() || c[0][0].is_null() || c[0][1].is_null()) return std::nullopt;
  ResourceRef ref;
  ref.env_id = *common::Uuid::Parse(c[0][0].c_str());
  ref.team_id = *common::Uuid::Parse(c[0][1].c_str());
  ref.connector_id = ids.connector_id;
  ref.connector_name = c[0][2].is_null() ? "" : c[0][2].c_str();
  if (ids.datamodel_id) {
    ref.datamodel_id = ids.datamodel_id;
    auto d =
        tx.exec_params("SELECT name FROM datamodel WHERE id = $1", ids.datamodel_id->ToString());
    if (!d.empty() && !d[0][0].is_null()) ref.datamodel_name = d[0][0].c_str();
  }
  if (ids.subscription_id) {
    ref.subscription_id = ids.subscription_id;
    auto s = tx.exec_params("SELECT name FROM subscription WHERE id = $1",
                            ids.subscription_id->ToString());
    if (!s.empty() && !s[0][0].is_null()) ref.subscription_name = s[0][0].c_str();
  }
  return ref;
}

common::Result<RecordResult> RecordAbout(pqxx::work& tx, const ResourceIds& ids, ResourceEvent ev) {
  auto ref = LoadResourceRef(tx, ids);
  if (!ref) return common::NotFound("the connector has no team or env to attribute the event to");
  ev.resource = std::move(*ref);
  return EventStore::Record(tx, ev, {});
}

void RecordAboutOrLog(pqxx::work& tx, const ResourceIds& ids, ResourceEvent ev) {
  const std::string code = ev.code;
  auto recorded = RecordAbout(tx, ids, std::move(ev));
  if (!recorded.ok() && recorded.status().code() != common::Code::kNotFound)
    spdlog::warn("cannot record {}: {}", code, recorded.status().message());
}

ResourceEvent RuntimeEvent(Level level, std::string code, std::string summary,
                           const std::string& reason, nlohmann::json details) {
  ResourceEvent ev;
  ev.ts = common::Clock::now();
  ev.level = level;
  ev.type = Type::kConnector;
  ev.code = std::move(code);
  ev.summary = std::move(summary);
  if (!reason.empty()) ev.reason = reason;
  ev.details = std::move(details);
  return ev;
}

ResourceEvent LifecycleEvent(std::string code, std::string summary, std::string actor_email,
                             nlohmann::json details) {
  ResourceEvent ev;
  ev.ts = common::Clock::now();
  ev.level = Level::kInfo;
  ev.type = Type::kLifecycle;
  ev.code = std::move(code);
  ev.summary = std::move(summary);
  ev.actor_email = std::move(actor_email);
  ev.details = std::move(details);
  return ev;
}

}  // namespace sluice::events
