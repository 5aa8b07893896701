// The key ring that encrypts connector and warehouse configurations and
// idempotency records. The server installs it at start-up (SetConfigKeyRing);
// until then the first use loads it from SLUICE_CONFIG_KEY or
// $SLUICE_DATA_DIR/config.key (default ./var).
#pragma once

#include "secrets/configuration_cipher.h"
#include "secrets/key_ring.h"

namespace sluice::api {

void SetConfigKeyRing(secrets::KeyRing ring);
const secrets::KeyRing& ConfigKeyRing();

// Decrypts a stored configuration column; 500 when it cannot (a lost key).
nlohmann::json DecryptStored(const nlohmann::json& stored);

}  // namespace sluice::api
