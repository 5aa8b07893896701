// SQL for login sessions (sluice_state.auth_session) and their refresh
// tokens (sluice_state.auth_refresh_token), created by migration 0003. No
// foreign keys: a session's tokens are deleted with it here.
//
// A session is one login and the family of refresh tokens descending from
// it. Each refresh token is single-use: exchanging it marks it rotated and
// stores its successor. Only a token's SHA-256 (auth::TokenDigest) is ever
// stored. Access tokens carry the session id; the API checks per request that
// the session is not revoked (one primary-key read, no cache), so a
// revocation takes effect on the very next request.
#pragma once

#include <cstdint>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <string_view>

#include "common/uuid.h"

namespace sluice::model {

// Why a session ended, kept in revoked_reason.
inline constexpr const char* kRevokedLogout = "logout";
inline constexpr const char* kRevokedReuse = "refresh_token_reuse";
inline constexpr const char* kRevokedPasswordChange = "password_change";
inline constexpr const char* kRevokedDeactivated = "deactivated";

// A new session for `user_id` whose first refresh token has `refresh_digest`
// and expires at `refresh_expires_at` (epoch seconds). Prunes that user's
// sessions that can no longer be refreshed first, so rows stay bounded by the
// logins within one refresh-token lifetime.
void InsertSession(pqxx::work& tx, const common::Uuid& session_id, const common::Uuid& user_id,
                   std::string_view refresh_digest, std::int64_t refresh_expires_at);

enum class RotateOutcome {
  kRotated,  // the token was live: it is spent now and its successor stored
  kUnknown,  // no such token (never issued here, or pruned), or another session's
  kRevoked,  // its session was already revoked
  kReused,   // it had been rotated before: its whole session is revoked now
};

struct RotateResult {
  RotateOutcome outcome = RotateOutcome::kUnknown;
  common::Uuid user_id;
};

// Exchanges the refresh token with `old_digest`, of session `session_id`, for
// one with `new_digest`. The token and session rows are locked, so two
// concurrent exchanges of the same token cannot both succeed: the second is
// reuse. The caller commits whatever the outcome (a reuse revocation must
// stick even though the request is refused).
RotateResult RotateRefreshToken(pqxx::work& tx, const common::Uuid& session_id,
                                std::string_view old_digest, std::string_view new_digest,
                                std::int64_t new_expires_at);

// Whether session `session_id` exists for `user_id` and is not revoked.
bool SessionIsLive(pqxx::work& tx, const common::Uuid& session_id, const common::Uuid& user_id);

// Revokes one session; a no-op when already revoked.
void RevokeSession(pqxx::work& tx, const common::Uuid& session_id, const char* reason);

// Revokes every live session of `user_id` but `except`; returns how many.
int RevokeUserSessions(pqxx::work& tx, const common::Uuid& user_id,
                       const std::optional<common::Uuid>& except, const char* reason);

// Removes every session (and refresh token) of `user_id`: the user is gone.
void DeleteUserSessions(pqxx::work& tx, const common::Uuid& user_id);

}  // namespace sluice::model
