// Lower-case hex and SHA-256 digests, used for config hashes and fingerprints.
#pragma once

#include <string>
#include <string_view>

namespace sluice::common {

std::string ToHex(std::string_view bytes);
// SHA-256 of the input, as 64 lower-case hex characters.
std::string Sha256Hex(std::string_view data);

}  // namespace sluice::common
