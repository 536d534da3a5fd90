-- Live updates across API instances: @socket.io/postgres-adapter relays what one instance emits
-- to the others with NOTIFY; packets too large for a NOTIFY payload (8000 bytes) are stored here
-- and only their id is sent. The adapter deletes rows older than its clean-up interval (30 s).
CREATE TABLE app.socket_io_attachments (
  id         bigserial   UNIQUE,
  created_at timestamptz DEFAULT now(),
  payload    bytea
);

CREATE INDEX socket_io_attachments_created_at ON app.socket_io_attachments (created_at);
