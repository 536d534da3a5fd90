-- Prices and volumes are finite numbers. The existing checks (open > 0, volume >= 0, …) let
-- 'Infinity' and 'NaN' through, as PostgreSQL orders NaN above every number; comparing with
-- 'Infinity' refuses both. The ingest paths already refuse them; this makes it a guarantee the
-- history routes rely on: they write stored values straight into JSON, which has no spelling
-- for either. Rollups only take first/last/min/max/sums of these (float8 sums raise an error
-- rather than overflow), so they are finite too.
ALTER TABLE price_observations ADD CONSTRAINT price_observations_finite CHECK (
  open < 'Infinity' AND high < 'Infinity' AND low < 'Infinity' AND close < 'Infinity'
  AND volume < 'Infinity'
);

ALTER TABLE currency_snapshots ADD CONSTRAINT currency_snapshots_finite CHECK (price < 'Infinity');
