-- Units of bulk ingestion that have been loaded completely: one file, or one time slice of one
-- exchange symbol. The row is written in the same transaction as the unit's rows, so a unit is
-- either loaded and recorded or neither; a rerun skips recorded units and redoes the others.
CREATE TABLE ingest_units (
  -- 'file:<absolute path>:<size>:<mtime ms>' or 'exchange:<source>:<symbol>:<interval>:<from>:<to>'.
  unit_key       text PRIMARY KEY,
  kind           text        NOT NULL CHECK (kind IN ('file', 'exchange')),
  source         text        NOT NULL,
  label          text        NOT NULL,
  content_sha256 text,
  rows_read      bigint      NOT NULL CHECK (rows_read >= 0),
  rows_inserted  bigint      NOT NULL CHECK (rows_inserted >= 0),
  rows_duplicate bigint      NOT NULL CHECK (rows_duplicate >= 0),
  rows_rejected  bigint      NOT NULL CHECK (rows_rejected >= 0),
  -- The first rejected rows ({line, reason}), for `platform backfill` reruns and operators.
  rejections     jsonb       NOT NULL DEFAULT '[]',
  load_path      text        NOT NULL CHECK (load_path IN ('direct', 'merge')),
  completed_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ingest_units_sha256 ON ingest_units (content_sha256) WHERE content_sha256 IS NOT NULL;
CREATE INDEX ingest_units_completed ON ingest_units (completed_at);
