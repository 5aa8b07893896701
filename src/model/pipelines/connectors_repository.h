// SQL for connector. json_configuration is encrypted on every write and
// decrypted on every read here, so no other code sees the envelope; the API
// view (ConnectorJson) redacts secret fields on top of that.
#pragma once

#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "auth/authorizer.h"
#include "common/uuid.h"
#include "connectors/types/connector_types.h"
#include "model/access/principal.h"
#include "model/error.h"
#include "secrets/key_ring.h"

namespace sluice::model {

struct ConnectorRow {
  common::Uuid id;
  std::optional<std::string> name;
  std::string connector_type;  // the system, e.g. "postgresql"
  std::string way;             // "source" | "target"
  Json configuration;          // plain (decrypted)
  std::optional<common::Uuid> team_id;
  std::optional<common::Uuid> env_id;
  std::string created_at;
  std::string updated_at;

  const connectors::types::ConnectorType* type() const {
    return connectors::types::FindStoredType(connector_type, way);
  }
};

// Redacted API view: PresentConnector(ConnectorRecordJson(c)).
Json ConnectorJson(const ConnectorRow& c);
// The API view with the configuration unredacted, as an idempotency record
// keeps it (encrypted); PresentConnector redacts such a view for the wire.
Json ConnectorRecordJson(const ConnectorRow& c);
Json PresentConnector(const Json& record);

std::optional<ConnectorRow> FindConnector(pqxx::work& tx, const secrets::KeyRing& keys,
                                          const common::Uuid& id);
struct ConnectorFilter {
  std::optional<std::string> name;  // case-insensitive substring
  std::optional<std::string> way;
};
std::vector<ConnectorRow> ListConnectors(pqxx::work& tx, const secrets::KeyRing& keys,
                                         const common::Uuid& team, const ConnectorFilter& filter,
                                         int fetch, std::int64_t offset);
// 409 when (env_id, name) is taken.
void InsertConnector(pqxx::work& tx, const secrets::KeyRing& keys, const ConnectorRow& c);
void UpdateConnector(pqxx::work& tx, const secrets::KeyRing& keys, const ConnectorRow& c);
// 409 naming the pipeline when one still references it. Workers go with it;
// datamodels and subscriptions keep their rows with the reference cleared;
// evidence (metrics, events, backfill items) has no FK and stays.
// 409 when a pipeline uses the connector.
void RequireConnectorUnused(pqxx::work& tx, const common::Uuid& id);
void DeleteConnector(pqxx::work& tx, const common::Uuid& id);

// Checks `action` on the team owning a resource; a resource without a team
// is the superuser's alone. 404 "<what> not found" when hidden.
void RequireTeamResource(pqxx::work& tx, const Principal& caller,
                         const std::optional<common::Uuid>& team_id, auth::Action action,
                         const std::string& what);

// The connector when it exists and the caller may do `action` on it.
ConnectorRow RequireConnector(pqxx::work& tx, const secrets::KeyRing& keys, const Principal& caller,
                              const common::Uuid& id, auth::Action action);

// A connector referenced from a body: must exist in `team` (404 naming the
// field otherwise, the same answer whether it is missing or another team's)
// and go the expected way (422).
ConnectorRow RequireTeamConnector(pqxx::work& tx, const secrets::KeyRing& keys,
                                  const common::Uuid& team, const common::Uuid& id,
                                  const std::string& field, const char* way);

// Parses and validates a create/replace of a configuration for `type_id`:
// 400 for an unknown type, 422 listing every failing field.
const connectors::types::ConnectorType& RequireConnectorType(const std::string& type_id);
Json ValidatedConfiguration(const connectors::types::ConnectorType& type, const Json& config);

// LIKE pattern for a case-insensitive substring search.
std::string LikePattern(const std::string& text);

}  // namespace sluice::model
