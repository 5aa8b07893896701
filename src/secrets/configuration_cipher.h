// AEAD (XChaCha20-Poly1305) of whole JSON configurations. The stored value is
// itself JSON, since the columns are JSON:
//   {"enc":"v1","kid":"<key id>","nonce":"<b64>","ct":"<b64>"}
// The key id inside the envelope is what lets a ring with several keys
// decrypt rows written before a rotation.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "common/status.h"
#include "secrets/key_ring.h"

namespace sluice::secrets {

// Encrypts `plain` under the ring's primary key.
nlohmann::json EncryptConfiguration(const nlohmann::json& plain, const KeyRing& ring);

// The plain JSON of a stored column value. A value that is not an envelope is
// a row written before encryption existed and is returned as it is (rotate-key
// encrypts such rows). InvalidArgument when the key is unknown or the
// ciphertext was tampered with.
common::Result<nlohmann::json> DecryptConfiguration(const nlohmann::json& stored,
                                                    const KeyRing& ring);

bool IsEnvelope(const nlohmann::json& stored);
// The key id of an envelope; empty for a plain value.
std::string EnvelopeKeyId(const nlohmann::json& stored);

// HMAC-SHA256 (hex) of `payload` under a subkey of the key `key_id` (primary
// when empty), used to fingerprint requests without storing them.
common::Result<std::string> KeyedHash(const KeyRing& ring, const std::string& key_id,
                                      const std::string& payload);

}  // namespace sluice::secrets
