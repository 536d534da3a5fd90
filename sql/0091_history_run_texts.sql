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
