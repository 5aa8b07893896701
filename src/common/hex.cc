#include "common/hex.h"

#include <sodium.h>

namespace sluice::common {

std::string ToHex(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 0x0F]);
  }
  return out;
}

std::string Sha256Hex(std::string_view data) {
  unsigned char digest[crypto_hash_sha256_BYTES];
  crypto_hash_sha256(digest, reinterpret_cast<const unsigned char*>(data.data()), data.size());
  return ToHex(std::string_view(reinterpret_cast<const char*>(digest), sizeof digest));
}

}  // namespace sluice::common
