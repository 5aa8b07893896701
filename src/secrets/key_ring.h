// The deployment keys that encrypt configurations at rest. The first key is
// the primary (new ciphertexts use it); the others only decrypt, so a key can
// be rotated without a flag day: add a new primary, re-encrypt, drop the old.
//
// Sources, in order: SLUICE_CONFIG_KEY (comma-separated hex keys, primary
// first), else <data-dir>/config.key (one hex key per line, primary first;
// created with mode 0600 and one fresh key on first run).
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace sluice::secrets {

struct Key {
  std::string id;     // 16 hex chars derived from the key; stored beside each ciphertext
  std::string bytes;  // 32 raw bytes
};

class KeyRing {
 public:
  static constexpr size_t kKeyBytes = 32;

  static common::Result<KeyRing> Load(const std::string& data_dir);
  // Hex keys, primary first.
  static common::Result<KeyRing> FromHex(const std::vector<std::string>& hex_keys);
  static Key RandomKey();
  static Key MakeKey(std::string bytes);

  const Key& primary() const { return keys_.front(); }
  const std::vector<Key>& keys() const { return keys_; }
  // nullptr when no key of the ring has this id.
  const Key* Find(const std::string& id) const;

 private:
  explicit KeyRing(std::vector<Key> keys) : keys_(std::move(keys)) {}
  std::vector<Key> keys_;
};

// Writes hex keys (primary first) to `path` with mode 0600, atomically.
common::Status WriteKeyFile(const std::string& path, const std::vector<Key>& keys);
std::string KeyFilePath(const std::string& data_dir);

}  // namespace sluice::secrets
