#include "common/base64.h"

#include <sodium.h>

namespace sluice::common {

std::string Base64Encode(std::string_view bytes) {
  constexpr int kVariant = sodium_base64_VARIANT_ORIGINAL;
  std::string out(sodium_base64_ENCODED_LEN(bytes.size(), kVariant), '\0');
  sodium_bin2base64(out.data(), out.size(), reinterpret_cast<const unsigned char*>(bytes.data()),
                    bytes.size(), kVariant);
  out.resize(out.size() - 1);  // the terminating NUL
  return out;
}

}  // namespace sluice::common
