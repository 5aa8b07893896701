// SQL for service_account_user: a name over a real user row.
#pragma once

#include <optional>
#include <pqxx/pqxx>
#include <string>

#include "common/uuid.h"
#include "model/error.h"

namespace sluice::model {

struct ServiceAccountRow {
  common::Uuid id;
  std::string name;
  common::Uuid user_id;
  std::string created_at;
};

Json ServiceAccountJson(const ServiceAccountRow& s);

std::optional<ServiceAccountRow> FindServiceAccount(pqxx::work& tx, const common::Uuid& id);
void InsertServiceAccount(pqxx::work& tx, const ServiceAccountRow& s);
Json ListServiceAccounts(pqxx::work& tx, int fetch, std::int64_t offset);

}  // namespace sluice::model
