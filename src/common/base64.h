// Base64 (RFC 4648, standard alphabet, padded): how binary column values
// travel in the JSON envelope, whichever source they come from.
#pragma once

#include <string>
#include <string_view>

namespace sluice::common {

std::string Base64Encode(std::string_view bytes);

}  // namespace sluice::common
