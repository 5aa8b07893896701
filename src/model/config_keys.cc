#include "model/config_keys.h"

#include "model/error.h"

namespace sluice::model {

Json DecryptStored(const Json& stored, const secrets::KeyRing& keys) {
  auto plain = secrets::DecryptConfiguration(stored, keys);
  if (!plain.ok()) throw ApiError(500, "internal", plain.status().message());
  return *plain;
}

namespace {

long ReencryptColumn(pqxx::work& tx, const secrets::KeyRing& ring, const std::string& table) {
  long n = 0;
  for (const auto& r :
       tx.exec("SELECT id, json_configuration::text FROM " + table + " ORDER BY id FOR UPDATE")) {
    Json stored = Json::parse(r[1].as<std::string>());
    if (secrets::EnvelopeKeyId(stored) == ring.primary().id) continue;
    auto plain = secrets::DecryptConfiguration(stored, ring);
    if (!plain.ok()) {
      throw std::runtime_error(table + " " + r[0].as<std::string>() + ": " +
                               plain.status().message());
    }
    tx.exec_params("UPDATE " + table + " SET json_configuration = $2::json WHERE id = $1",
                   r[0].as<std::string>(), secrets::EncryptConfiguration(*plain, ring).dump());
    ++n;
  }
  return n;
}

}  // namespace

ReencryptCounts ReencryptConfigurations(pqxx::work& tx, const secrets::KeyRing& ring,
                                        bool drop_other_keys) {
  ReencryptCounts counts;
  counts.connectors = ReencryptColumn(tx, ring, "connector");
  counts.warehouses = ReencryptColumn(tx, ring, "warehouse");
  if (drop_other_keys) {
    counts.idempotency_dropped = static_cast<long>(
        tx.exec_params("DELETE FROM idempotency_record WHERE (response_body->>'kid') IS "
                       "DISTINCT FROM $1",
                       ring.primary().id)
            .affected_rows());
  }
  return counts;
}

}  // namespace sluice::model
