// Recording an event about a connector (or one of its datamodels or
// subscriptions) with the resource reference read from the rows as they
// stand now: the team that owns it at this moment, its env, its names.
// Every emitter — the orchestrator, the backfill reporter, the API's
// lifecycle actions — goes through here, so the reference is built one way.
#pragma once

#include <optional>
#include <pqxx/pqxx>

#include "common/status.h"
#include "common/uuid.h"
#include "events/event_store.h"
#include "events/resource_event.h"

namespace sluice::events {

struct ResourceIds {
  common::Uuid connector_id;
  std::optional<common::Uuid> datamodel_id;
  std::optional<common::Uuid> subscription_id;
};

// The reference for `ids`; nullopt when the connector is gone or has no team
// or env (nothing to attribute the event to).
std::optional<ResourceRef> LoadResourceRef(pqxx::work& tx, const ResourceIds& ids);

// Fills ev.resource from `ids` and records it in the caller's transaction.
// NotFound when there is nothing to attribute it to.
common::Result<RecordResult> RecordAbout(pqxx::work& tx, const ResourceIds& ids, ResourceEvent ev);

// RecordAbout for emitters that carry on whatever happens: a failure is
// logged (nothing to attribute the event to is not a failure).
void RecordAboutOrLog(pqxx::work& tx, const ResourceIds& ids, ResourceEvent ev);

// The runtime reporting on itself (type connector); an empty reason is none.
ResourceEvent RuntimeEvent(Level level, std::string code, std::string summary,
                           const std::string& reason, nlohmann::json details);

// A user's action (type lifecycle, level info): `code` such as
// connector.paused, the actor's email, no reason (a lifecycle action has no
// cause to report).
ResourceEvent LifecycleEvent(std::string code, std::string summary, std::string actor_email,
                             nlohmann::json details = nlohmann::json::object());

}  // namespace sluice::events
