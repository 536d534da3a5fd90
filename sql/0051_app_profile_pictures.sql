-- One profile picture per user: the re-encoded image (never the upload as sent), its type and a
-- strong validator for conditional requests. A new upload replaces the row.
CREATE TABLE app.profile_pictures (
  user_id      bigint      PRIMARY KEY REFERENCES app.users (id) ON DELETE CASCADE,
  content_type text        NOT NULL
    CHECK (content_type IN ('image/png', 'image/jpeg', 'image/gif', 'image/webp')),
  image        bytea       NOT NULL,
  etag         text        NOT NULL,
  width        integer     NOT NULL CHECK (width > 0),
  height       integer     NOT NULL CHECK (height > 0),
  updated_at   timestamptz NOT NULL DEFAULT now()
);
