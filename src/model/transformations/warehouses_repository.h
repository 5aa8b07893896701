// SQL for warehouse (the configuration side). Like a connector's, its
// json_configuration is encrypted on write, decrypted on read here, and
// redacted in the API view.
#pragma once

#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "auth/authorizer.h"
#include "common/uuid.h"
#include "model/access/principal.h"
#include "model/error.h"
#include "secrets/key_ring.h"

namespace sluice::model {

struct WarehouseRow {
  common::Uuid id;
  std::string name;
  std::string warehouse_type;
  Json configuration;  // plain
  common::Uuid team_id;
  common::Uuid env_id;
  std::optional<std::string> last_test_at;
  std::optional<bool> last_test_succeeded;
  std::optional<std::string> last_test_message;
  std::string created_at, updated_at;
};

Json WarehouseJson(const WarehouseRow& w);
// The view with the configuration unredacted, as an idempotency record keeps
// it (encrypted); PresentWarehouse redacts such a view for the wire.
Json WarehouseRecordJson(const WarehouseRow& w);
Json PresentWarehouse(const Json& record);

std::optional<WarehouseRow> FindWarehouse(pqxx::work& tx, const secrets::KeyRing& keys,
                                          const common::Uuid& id);
std::vector<WarehouseRow> ListWarehouses(pqxx::work& tx, const secrets::KeyRing& keys,
                                         const common::Uuid& team,
                                         const std::optional<std::string>& name, int fetch,
                                         std::int64_t offset);
void InsertWarehouse(pqxx::work& tx, const secrets::KeyRing& keys, const WarehouseRow& w);
void UpdateWarehouse(pqxx::work& tx, const secrets::KeyRing& keys, const WarehouseRow& w);
// 409 naming a task still scheduled on it; its script runs go with it.
void DeleteWarehouse(pqxx::work& tx, const common::Uuid& id);
// Stores a connection test's verdict: NULL draft, true live, false error.
void RecordWarehouseTest(pqxx::work& tx, const common::Uuid& id, bool succeeded,
                         const std::string& message);

// The warehouse when it exists and the caller may do `action` on its team
// (404 "warehouse not found" when hidden).
WarehouseRow RequireWarehouse(pqxx::work& tx, const secrets::KeyRing& keys, const Principal& caller,
                              const common::Uuid& id, auth::Action action);

}  // namespace sluice::model
