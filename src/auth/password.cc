#include "auth/password.h"

#include <sodium.h>

namespace sluice::auth {

common::Result<std::string> HashPassword(std::string_view password) {
  if (sodium_init() < 0) return common::Internal("libsodium failed to initialise");
  char out[crypto_pwhash_STRBYTES];
  if (crypto_pwhash_str(out, password.data(), password.size(), crypto_pwhash_OPSLIMIT_INTERACTIVE,
                        crypto_pwhash_MEMLIMIT_INTERACTIVE) != 0) {
    return common::Internal("password hashing ran out of memory");
  }
  return std::string(out);
}

bool VerifyPassword(std::string_view hash, std::string_view password) {
  if (sodium_init() < 0) return false;
  std::string h(hash);  // crypto_pwhash_str_verify wants a NUL-terminated string
  return crypto_pwhash_str_verify(h.c_str(), password.data(), password.size()) == 0;
}

void VerifyAgainstDummy(std::string_view password) {
  static const std::string dummy = [] {
    auto h = HashPassword("sluice-dummy-password");
    return h.ok() ? *h : std::string();
  }();
  if (!dummy.empty()) VerifyPassword(dummy, password);
}

}  // namespace sluice::auth
