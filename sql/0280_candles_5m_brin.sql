-- candles_5m's index on bucket alone becomes a BRIN index (rollup tables only; the continuous
-- aggregates of the Timescale edition keep their own indexes).
--
-- Why: a history answer reads one currency's 5-minute rows run by run, with the run's bounds
-- known only when the statement runs. With a B-tree on bucket alone beside the primary key
-- (currency_code, bucket), plain bounds on bucket made both look alike to the planner, which took
-- the bucket index and read every currency's rows of the run; bounds on (currency_code, bucket)
-- rows, the way round that, let no chunk be skipped and probed all of them in every run. A BRIN
-- index still serves what needs bucket alone (the refresh's DELETE and re-aggregation of a time
-- range across currencies, in insertion order) and never wins against the key for one
-- currency's rows. Measured on 50 currencies × a year of minutes, 5 runs of a year at 55 min in
-- one statement: 49 ms with the row bounds, 17–28 ms with plain bounds and this index; the
-- B-tree is 49 MB there, the BRIN index a few kB.
DO $brin$
BEGIN
  IF current_setting('timescaledb.license', true) <> 'timescale' THEN
    DROP INDEX IF EXISTS candles_5m_bucket_idx;
    CREATE INDEX candles_5m_bucket_brin ON candles_5m USING brin (bucket);
  END IF;
END
$brin$;
