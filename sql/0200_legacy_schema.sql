-- The compatibility schema of the old system's analysis service, which reads PostgreSQL directly
-- (shared/spec/original-clients.md, section 1). Its connection sets `search_path=legacy` and its
-- own SQL runs unchanged: `currencies` and `predictions` are views over the platform's tables;
-- `market_snapshots` is a real wide table, one row per minute with one `<code>_price` column per
-- currency, kept by the worker job `refresh_legacy` (src/data/legacy/refresh.ts), because the
-- pivot of a year of minutes for 136 currencies is far too slow to compute per query.
CREATE SCHEMA legacy;

COMMENT ON SCHEMA legacy IS
  'Compatibility schema of the old analysis service (search_path=legacy); read-only role: platform legacy-role create';

CREATE VIEW legacy.currencies AS
SELECT c.code                AS currency_code,
       c.name                AS currency_name,
       s.price::numeric      AS currency_value,
       s.observed_at         AS last_updated
FROM currencies c
LEFT JOIN currency_snapshots s ON s.currency_code = c.code;

CREATE VIEW legacy.predictions AS
SELECT id, currency_code, predicted_price, actual_price, price_difference, percent_difference,
       model_type, num_rows, last_updated, received_at
FROM predictions;

-- id: the minute's number since the Unix epoch, so ids are dense (one per minute, no holes, as
-- the client's "spaced" query steps through them) and increase with time. last_updated: the
-- minute's start; each price the last one observed in that minute (NULL: none). The price
-- columns are added by the refresh job as currencies appear (ALTER TABLE … ADD COLUMN).
CREATE TABLE legacy.market_snapshots (
  id           bigint      PRIMARY KEY,
  last_updated timestamptz NOT NULL UNIQUE
);

-- Ranges of history rewritten after the fact (backfills, healing: every write that marks
-- price_invalidations), for the refresh job to recompute. The rollup layer deletes its marks once
-- consumed, so the legacy table gets its own copy from a trigger, in the writer's transaction.
CREATE TABLE legacy.stale_ranges (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  range_start timestamptz NOT NULL,
  range_end   timestamptz NOT NULL CHECK (range_end >= range_start)
);

CREATE FUNCTION legacy.copy_invalidations() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  -- One range per statement: a load marks many small ranges, recomputed together anyway.
  INSERT INTO legacy.stale_ranges (range_start, range_end)
  SELECT min(range_start), max(range_end) FROM new_marks HAVING count(*) > 0;
  RETURN NULL;
END
$$;

CREATE TRIGGER price_invalidations_to_legacy
AFTER INSERT ON price_invalidations
REFERENCING NEW TABLE AS new_marks
FOR EACH STATEMENT EXECUTE FUNCTION legacy.copy_invalidations();
