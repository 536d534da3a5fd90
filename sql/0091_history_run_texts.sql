-- Formatted JSON texts of whole runs of materialised hourly candles, kept in the database so that
-- even the first request of a currency-year after a start reads them instead of formatting
-- thousands of buckets. The worker renders every full run (RUN_BUCKETS hours on the fixed grid)
-- below the 1h level's materialisation watermark, after each rollup refresh; the data module
-- reads a run only at the currency's current revision (sql/0090_rollup_revisions.sql), and a
-- revision bump deletes the currency's texts in the same transaction. See
-- src/data/history/runTexts.ts.
CREATE TABLE history_run_texts (
  currency_code    text        NOT NULL,
  shape            text        NOT NULL CHECK (shape IN ('open', 'candle')),
  interval_seconds integer     NOT NULL CHECK (interval_seconds > 0),
  run_start        timestamptz NOT NULL,
  run_end          timestamptz NOT NULL CHECK (run_end > run_start),
  revision         bigint      NOT NULL,
  empty            boolean     NOT NULL,
  items            text        NOT NULL,
  rendered_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (currency_code, shape, interval_seconds, run_start)
);
-- Kept out of line but uncompressed: a year of hourly candles reads 17 texts of ~75 kB, and
-- decompressing them took longer than reading twice the bytes (3.6 → 2.0 ms p50 measured), as
-- did compressing them when rendering (2.9 → 1.5 s for 50 currency-years).
ALTER TABLE history_run_texts ALTER COLUMN items SET STORAGE EXTERNAL;
