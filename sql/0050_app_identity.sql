-- The application API keeps its own data in the `app` schema, beside the market data.
CREATE SCHEMA app;

-- Email and username are unique without regard to case; they are stored as the user typed them.
CREATE TABLE app.users (
  id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  email         text        NOT NULL CHECK (length(email) BETWEEN 3 AND 254),
  username      text        NOT NULL CHECK (username ~ '^[A-Za-z0-9._-]{3,32}$'),
  -- argon2id in PHC string form ($argon2id$v=19$m=…,p=…,t=…$salt$hash).
  password_hash text        NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX users_email_key ON app.users (lower(email));
CREATE UNIQUE INDEX users_username_key ON app.users (lower(username));

-- Server-side sessions. The cookie carries a 256-bit random id; only its SHA-256 is stored, so a
-- copy of this table does not hand out live sessions. Idle and absolute time-outs are computed
-- from last_seen_at and created_at at every read, so changing the settings applies at once.
CREATE TABLE app.sessions (
  id_hash      bytea       PRIMARY KEY,
  user_id      bigint      REFERENCES app.users (id) ON DELETE CASCADE,
  data         jsonb       NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  last_seen_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sessions_user ON app.sessions (user_id);
CREATE INDEX sessions_last_seen ON app.sessions (last_seen_at);

-- Counters of rate-limiter-flexible (RateLimiterPostgres) for login throttling; its own layout.
CREATE TABLE app.login_limits (
  key    varchar(255) PRIMARY KEY,
  points integer      NOT NULL DEFAULT 0,
  expire bigint
);
CREATE INDEX login_limits_expire ON app.login_limits (expire);
