// Local passwords: Argon2id through libsodium's crypto_pwhash_str, whose
// output string carries its own salt and cost parameters.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace sluice::auth {

// Hashes with the "interactive" cost; the result fits user.hashed_password.
common::Result<std::string> HashPassword(std::string_view password);

// True when `password` matches `hash`. libsodium compares in constant time.
bool VerifyPassword(std::string_view hash, std::string_view password);

// Burns the same work as a real check, so a login for an unknown email or a
// password-less identity takes as long as a wrong password does.
void VerifyAgainstDummy(std::string_view password);

}  // namespace sluice::auth
