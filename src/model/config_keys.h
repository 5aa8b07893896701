// The key ring that encrypts connector and warehouse configurations and
// idempotency records is the caller's: the API holds it in its ApiContext
// (loaded at start-up from SLUICE_CONFIG_KEY or $SLUICE_DATA_DIR/config.key),
// and every model function that reads or writes a configuration takes it.
#pragma once

#include <pqxx/pqxx>

#include "secrets/configuration_cipher.h"
#include "secrets/key_ring.h"

namespace sluice::model {

// Decrypts a stored configuration column; 500 when it cannot (a lost key).
nlohmann::json DecryptStored(const nlohmann::json& stored, const secrets::KeyRing& keys);

struct ReencryptCounts {
  long connectors = 0;
  long warehouses = 0;
  long idempotency_dropped = 0;
};

// Re-encrypts every connector and warehouse configuration not already under
// `ring`'s primary key (rows locked as they are rewritten). Idempotency
// records keep their key (their request hash is keyed by it) and expire in
// 24 h; with `drop_other_keys` those under another key are deleted, so the
// old keys can leave the ring now. Throws on a row no key of `ring` opens.
ReencryptCounts ReencryptConfigurations(pqxx::work& tx, const secrets::KeyRing& ring,
                                        bool drop_other_keys);

}  // namespace sluice::model
