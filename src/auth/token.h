// Signed bearer tokens, table-free: "slu1.<payload>.<mac>", where payload is
// base64url JSON claims and mac its HMAC-SHA256 under the deployment secret.
// A token proves who signed it, never that the identity may still act: the
// caller re-reads the user (is_active), and for a login token its session,
// on every request.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "auth/secret_key.h"
#include "common/status.h"
#include "common/uuid.h"

namespace sluice::auth {

// kWorker: a pod's token, scoped to one worker row of one connector and one
// launch generation; it opens the worker endpoints and nothing else.
// kLoader: a backfill loader's token, scoped to one item (user_id) and one
// attempt (name: the attempt's started_at in micros); it opens the loader
// endpoints of that item and nothing else.
enum class TokenKind { kAccess, kRefresh, kService, kWorker, kLoader };

const char* TokenKindName(TokenKind kind);

struct TokenClaims {
  TokenKind kind = TokenKind::kAccess;
  common::Uuid user_id;  // the worker row's id for a worker token
  // Service-account tokens carry both ids and the account's own token name.
  std::optional<common::Uuid> service_account_id;
  std::string name;
  std::int64_t issued_at = 0;   // epoch seconds
  std::int64_t expires_at = 0;  // epoch seconds
  // Worker tokens: the connector and launch generation the pod runs.
  std::optional<common::Uuid> connector_id;
  std::optional<common::Uuid> generation;
  // Access and refresh tokens: the login session (refresh-token family) they
  // belong to; the API refuses them once that session is revoked.
  std::optional<common::Uuid> session_id;
};

// The SHA-256 of a token (32 raw bytes): what the session store keeps
// instead of a refresh token.
std::string TokenDigest(std::string_view token);

class TokenSigner {
 public:
  explicit TokenSigner(SecretKey key) : key_(std::move(key)) {}

  std::string Sign(const TokenClaims& claims) const;
  // Unauthenticated for a bad signature, a malformed token or one expired at `now`.
  common::Result<TokenClaims> Verify(std::string_view token, std::int64_t now) const;

 private:
  std::string Mac(std::string_view message) const;
  SecretKey key_;
};

}  // namespace sluice::auth
