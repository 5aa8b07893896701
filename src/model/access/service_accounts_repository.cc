#include "model/access/service_accounts_repository.h"

#include "model/sql_util.h"

namespace sluice::model {
namespace {

ServiceAccountRow ServiceAccountFromRow(const pqxx::row& r) {
  return {sql::GetUuid(r["id"]), r["name"].as<std::string>(), sql::GetUuid(r["user_id"]),
          sql::GetOptString(r["created_at"]).value_or("")};
}

std::string Select() {
  return "SELECT id, name, user_id, " + sql::Iso("created_at") +
         " AS created_at FROM service_account_user";
}

}  // namespace

Json ServiceAccountJson(const ServiceAccountRow& s) {
  return {{"id", s.id.ToString()},
          {"name", s.name},
          {"user_id", s.user_id.ToString()},
          {"created_at", s.created_at}};
}

std::optional<ServiceAccountRow> FindServiceAccount(pqxx::work& tx, const common::Uuid& id) {
  auto res = tx.exec_params(Select() + " WHERE id = $1", id.ToString());
  if (res.empty()) return std::nullopt;
  return ServiceAccountFromRow(res[0]);
}

void InsertServiceAccount(pqxx::work& tx, const ServiceAccountRow& s) {
  tx.exec_params(std::string("INSERT INTO service_account_user (id, name, user_id, created_at, "
                             "updated_at) VALUES ($1, $2, $3, ") +
                     sql::kNowUtc + ", " + sql::kNowUtc + ")",
                 s.id.ToString(), s.name, s.user_id.ToString());
}

Json ListServiceAccounts(pqxx::work& tx, int fetch, std::int64_t offset) {
  Json items = Json::array();
  for (const auto& r :
       tx.exec_params(Select() + " ORDER BY name, id LIMIT $1 OFFSET $2", fetch, offset)) {
    items.push_back(ServiceAccountJson(ServiceAccountFromRow(r)));
  }
  return items;
}

}  // namespace sluice::model
