-- Answers of signal writes sent with an Idempotency-Key header, so that a client retrying after a
-- lost answer gets the original answer instead of a second write. A key belongs to one client
-- (scope: the token's name, or the address of a caller from a trusted network) and is kept 24
-- hours. The key row is inserted in the transaction of the write it guards: a concurrent retry
-- waits on the primary key until that transaction ends, then replays its answer (or, when it
-- rolled back, does the write itself).
CREATE TABLE idempotency_keys (
  scope text NOT NULL,
  key text NOT NULL,
  operation text NOT NULL,
  request_hash bytea NOT NULL,
  status int,
  answer jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (scope, key)
);

-- Expired keys are deleted in small batches by later writes.
CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);
