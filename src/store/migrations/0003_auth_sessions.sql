-- Login sessions and their refresh tokens. The spec has no table for them
-- (its tokens were stateless), so they live in sluice_state beside the other
-- state of Sluice's own. No foreign keys at all (the database's references
-- are exactly the spec's): the repository deletes a session's tokens with it,
-- and the user is re-read on every request anyway.
--
-- A session is one login: a family of refresh tokens, each used once. Only
-- a token's SHA-256 is stored, never the token. Presenting a token that was
-- already rotated revokes the whole family; so do logout, a password change
-- (every session but the caller's) and deactivation.
CREATE SCHEMA IF NOT EXISTS sluice_state;

CREATE TABLE IF NOT EXISTS sluice_state.auth_session (
  id                UUID PRIMARY KEY,
  user_id           UUID NOT NULL,
  created_at        TIMESTAMPTZ NOT NULL,
  last_refreshed_at TIMESTAMPTZ,
  -- That of its newest refresh token: past it the family can do nothing
  -- and the row is pruned.
  expires_at        TIMESTAMPTZ NOT NULL,
  revoked_at        TIMESTAMPTZ,
  -- logout, refresh_token_reuse, password_change, deactivated
  revoked_reason    VARCHAR(32)
);
CREATE INDEX IF NOT EXISTS auth_session_user_id_idx ON sluice_state.auth_session (user_id);

CREATE TABLE IF NOT EXISTS sluice_state.auth_refresh_token (
  token_sha256 BYTEA PRIMARY KEY,
  session_id   UUID NOT NULL,
  issued_at    TIMESTAMPTZ NOT NULL,
  expires_at   TIMESTAMPTZ NOT NULL,
  -- Set when it was exchanged for its successor; presenting it again
  -- afterwards is reuse.
  rotated_at   TIMESTAMPTZ
);
CREATE INDEX IF NOT EXISTS auth_refresh_token_session_id_idx
  ON sluice_state.auth_refresh_token (session_id);
