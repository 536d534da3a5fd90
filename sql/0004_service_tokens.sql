-- Service tokens of the data module. Only a SHA-256 of each token is kept; the token itself is
-- shown once by `platform token create`.
CREATE TABLE service_tokens (
  id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name         text        NOT NULL CHECK (name ~ '^[A-Za-z0-9._-]{1,64}$'),
  token_hash   bytea       NOT NULL UNIQUE,
  scopes       text[]      NOT NULL CHECK (scopes <@ ARRAY['read', 'write']::text[] AND cardinality(scopes) > 0),
  created_at   timestamptz NOT NULL DEFAULT now(),
  last_used_at timestamptz,
  revoked_at   timestamptz
);
-- A name is reusable once its token is revoked.
CREATE UNIQUE INDEX service_tokens_active_name ON service_tokens (name) WHERE revoked_at IS NULL;
