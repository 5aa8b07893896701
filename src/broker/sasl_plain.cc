#include "broker/sasl_plain.h"

#include <sodium.h>

namespace sluice::broker {

common::Result<std::string> CheckPlainToken(std::string_view token,
                                            const std::map<std::string, std::string>& users) {
  auto first = token.find('\0');
  if (first == std::string_view::npos) return common::Unauthenticated("malformed PLAIN token");
  auto second = token.find('\0', first + 1);
  if (second == std::string_view::npos) return common::Unauthenticated("malformed PLAIN token");
  std::string user(token.substr(first + 1, second - first - 1));
  std::string_view pass = token.substr(second + 1);
  auto it = users.find(user);
  // Constant-time compare so the reply time does not leak the password.
  bool ok = it != users.end() && it->second.size() == pass.size() &&
            sodium_memcmp(it->second.data(), pass.data(), pass.size()) == 0;
  if (!ok) return common::Unauthenticated("invalid username or password");
  return user;
}

}  // namespace sluice::broker
