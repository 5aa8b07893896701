// SQL for env_request and team_request: one row shape, two tables. The
// grant column differs (env: role text, team: admin flag).
#pragma once

#include <optional>
#include <pqxx/pqxx>
#include <string>

#include "auth/roles.h"
#include "common/uuid.h"
#include "model/error.h"

namespace sluice::model {

enum class RequestScope { kEnv, kTeam };

struct RequestRow {
  RequestScope scope = RequestScope::kEnv;
  common::Uuid id;
  common::Uuid scope_id;  // env_id or team_id
  common::Uuid from_user_id;
  common::Uuid to_user_id;
  auth::RequestStatus status = auth::RequestStatus::kPending;
  std::string role = "member";  // env requests
  bool admin = false;           // team requests
  std::string created_at;
  std::string updated_at;

  bool is_invite() const { return from_user_id != to_user_id; }
};

Json RequestJson(const RequestRow& r);

std::optional<RequestRow> FindRequest(pqxx::work& tx, RequestScope scope, const common::Uuid& id,
                                      bool for_update);
// A pending request for (scope_id, to_user), if any.
std::optional<RequestRow> FindPendingRequest(pqxx::work& tx, RequestScope scope,
                                             const common::Uuid& scope_id,
                                             const common::Uuid& to_user);
void InsertRequest(pqxx::work& tx, const RequestRow& r);
void UpdateRequestStatus(pqxx::work& tx, RequestScope scope, const common::Uuid& id,
                         auth::RequestStatus status);
// Requests of one env/team (scope_id) or involving one user (as from or to);
// status filter optional. Newest first.
Json ListRequests(pqxx::work& tx, RequestScope scope, const std::optional<common::Uuid>& scope_id,
                  const std::optional<common::Uuid>& user, const std::optional<std::string>& status,
                  int fetch, std::int64_t offset);

}  // namespace sluice::model
