#include "model/access/sessions_repository.h"

#include "common/hex.h"

namespace sluice::model {
namespace {

// Digests cross libpq as hex and are stored as BYTEA.
std::string Hex(std::string_view bytes) { return common::ToHex(bytes); }

// The sessions matching `where` (over auth_session, one parameter $1) and
// their refresh tokens: there is no foreign key to cascade.
void DeleteSessionsWhere(pqxx::work& tx, const std::string& where, const std::string& param) {
  tx.exec_params("WITH gone AS (DELETE FROM sluice_state.auth_session WHERE " + where +
                     " RETURNING id) DELETE FROM sluice_state.auth_refresh_token t USING gone "
                     "WHERE t.session_id = gone.id",
                 param);
}

}  // namespace

void InsertSession(pqxx::work& tx, const common::Uuid& session_id, const common::Uuid& user_id,
                   std::string_view refresh_digest, std::int64_t refresh_expires_at) {
  const std::string uid = user_id.ToString();
  // Expired families are of no use even to detect reuse: their tokens fail
  // their own expiry check first.
  DeleteSessionsWhere(tx, "user_id = $1 AND expires_at < now()", uid);
  tx.exec_params(
      "INSERT INTO sluice_state.auth_session (id, user_id, created_at, expires_at) "
      "VALUES ($1, $2, now(), to_timestamp($3))",
      session_id.ToString(), uid, refresh_expires_at);
  tx.exec_params(
      "INSERT INTO sluice_state.auth_refresh_token (token_sha256, session_id, issued_at, "
      "expires_at) VALUES (decode($1, 'hex'), $2, now(), to_timestamp($3))",
      Hex(refresh_digest), session_id.ToString(), refresh_expires_at);
}

RotateResult RotateRefreshToken(pqxx::work& tx, const common::Uuid& session_id,
                                std::string_view old_digest, std::string_view new_digest,
                                std::int64_t new_expires_at) {
  RotateResult out;
  const std::string sid = session_id.ToString();
  // The session row first, then the token: every path that touches both
  // locks them in this order.
  auto session = tx.exec_params(
      "SELECT user_id, revoked_at IS NOT NULL FROM sluice_state.auth_session WHERE id = $1 "
      "FOR UPDATE",
      sid);
  if (session.empty()) return out;
  auto token = tx.exec_params(
      "SELECT rotated_at IS NOT NULL FROM sluice_state.auth_refresh_token "
      "WHERE token_sha256 = decode($1, 'hex') AND session_id = $2 FOR UPDATE",
      Hex(old_digest), sid);
  if (token.empty()) return out;
  out.user_id = *common::Uuid::Parse(session[0][0].as<std::string>());
  if (session[0][1].as<bool>()) {
    out.outcome = RotateOutcome::kRevoked;
    return out;
  }
  if (token[0][0].as<bool>()) {
    RevokeSession(tx, session_id, kRevokedReuse);
    out.outcome = RotateOutcome::kReused;
    return out;
  }
  tx.exec_params(
      "UPDATE sluice_state.auth_refresh_token SET rotated_at = now() "
      "WHERE token_sha256 = decode($1, 'hex')",
      Hex(old_digest));
  // Spent tokens are kept (to recognise reuse) only while they could pass
  // their own expiry check.
  tx.exec_params(
      "DELETE FROM sluice_state.auth_refresh_token WHERE session_id = $1 AND expires_at < now()",
      sid);
  tx.exec_params(
      "INSERT INTO sluice_state.auth_refresh_token (token_sha256, session_id, issued_at, "
      "expires_at) VALUES (decode($1, 'hex'), $2, now(), to_timestamp($3))",
      Hex(new_digest), sid, new_expires_at);
  tx.exec_params(
      "UPDATE sluice_state.auth_session SET last_refreshed_at = now(), "
      "expires_at = greatest(expires_at, to_timestamp($2)) WHERE id = $1",
      sid, new_expires_at);
  out.outcome = RotateOutcome::kRotated;
  return out;
}

bool SessionIsLive(pqxx::work& tx, const common::Uuid& session_id, const common::Uuid& user_id) {
  return !tx.exec_params(
                "SELECT 1 FROM sluice_state.auth_session WHERE id = $1 AND user_id = $2 AND "
                "revoked_at IS NULL",
                session_id.ToString(), user_id.ToString())
              .empty();
}

void RevokeSession(pqxx::work& tx, const common::Uuid& session_id, const char* reason) {
  tx.exec_params(
      "UPDATE sluice_state.auth_session SET revoked_at = now(), revoked_reason = $2 "
      "WHERE id = $1 AND revoked_at IS NULL",
      session_id.ToString(), std::string(reason));
}

int RevokeUserSessions(pqxx::work& tx, const common::Uuid& user_id,
                       const std::optional<common::Uuid>& except, const char* reason) {
  auto r = tx.exec_params(
      "UPDATE sluice_state.auth_session SET revoked_at = now(), revoked_reason = $3 "
      "WHERE user_id = $1 AND revoked_at IS NULL AND ($2::uuid IS NULL OR id <> $2::uuid)",
      user_id.ToString(), except ? std::optional<std::string>(except->ToString()) : std::nullopt,
      std::string(reason));
  return static_cast<int>(r.affected_rows());
}

void DeleteUserSessions(pqxx::work& tx, const common::Uuid& user_id) {
  DeleteSessionsWhere(tx, "user_id = $1", user_id.ToString());
}

}  // namespace sluice::model
