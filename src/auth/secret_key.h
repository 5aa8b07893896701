// The deployment secret that signs bearer tokens. One small class so key
// handling can later be unified without touching its users.
#pragma once

#include <string>

#include "common/status.h"

namespace sluice::auth {

class SecretKey {
 public:
  static constexpr size_t kBytes = 32;

  // SLUICE_SECRET_KEY (hex) when set; else <data_dir>/secret.key, created
  // with mode 0600 and fresh random bytes on first run.
  static common::Result<SecretKey> Load(const std::string& data_dir);
  // Raw key bytes; at least 16 of them.
  static common::Result<SecretKey> FromBytes(std::string bytes);
  static SecretKey Random();

  const std::string& bytes() const { return bytes_; }

 private:
  explicit SecretKey(std::string bytes) : bytes_(std::move(bytes)) {}
  std::string bytes_;
};

}  // namespace sluice::auth
