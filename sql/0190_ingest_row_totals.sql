-- Running totals of bulk ingestion per source: rows written, rows already stored, rows refused.
-- The loader adds each unit's counts in the transaction that loads it (src/data/ingest/totals.ts),
-- so a rolled-back load counts nothing and a committed one exactly once, whichever process ran
-- it: `platform backfill` (never scraped), a worker, the data module's bulk route. Every data
-- module serves them as ingest_rows_*_total. They only grow: Prometheus reads them as counters.
CREATE TABLE ingest_row_totals (
  source     text   PRIMARY KEY,
  inserted   bigint NOT NULL DEFAULT 0 CHECK (inserted >= 0),
  duplicates bigint NOT NULL DEFAULT 0 CHECK (duplicates >= 0),
  rejected   bigint NOT NULL DEFAULT 0 CHECK (rejected >= 0)
);

-- What earlier loads recorded (files and closed exchange slices) is where the totals start.
INSERT INTO ingest_row_totals (source, inserted, duplicates, rejected)
SELECT source, sum(rows_inserted), sum(rows_duplicate), sum(rows_rejected)
FROM ingest_units
GROUP BY source;
