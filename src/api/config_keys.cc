#include "api/config_keys.h"

#include <cstdlib>
#include <memory>
#include <mutex>

#include "api/http.h"

namespace sluice::api {
namespace {

std::mutex& Mu() {
  static std::mutex mu;
  return mu;
}
std::shared_ptr<const secrets::KeyRing>& Slot() {
  static std::shared_ptr<const secrets::KeyRing> ring;
  return ring;
}

}  // namespace

void SetConfigKeyRing(secrets::KeyRing ring) {
  std::lock_guard<std::mutex> lock(Mu());
  Slot() = std::make_shared<const secrets::KeyRing>(std::move(ring));
}

const secrets::KeyRing& ConfigKeyRing() {
  std::lock_guard<std::mutex> lock(Mu());
  if (!Slot()) {
    const char* dir = std::getenv("SLUICE_DATA_DIR");
    auto ring = secrets::KeyRing::Load(dir != nullptr && *dir != '\0' ? dir : "./var");
    if (!ring.ok())
      throw ApiError(500, "internal", "configuration key: " + ring.status().message());
    Slot() = std::make_shared<const secrets::KeyRing>(std::move(*ring));
  }
  // Installed once at start-up and never replaced while serving.
  return *Slot();
}

Json DecryptStored(const Json& stored) {
  auto plain = secrets::DecryptConfiguration(stored, ConfigKeyRing());
  if (!plain.ok()) throw ApiError(500, "internal", plain.status().message());
  return *plain;
}

}  // namespace sluice::api
