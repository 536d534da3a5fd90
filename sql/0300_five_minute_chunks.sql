-- candles_5m gets chunks of 7 days, as the raw table has (was 30 days on the rollup tables, 70 on
-- the continuous aggregates, TimescaleDB's default of ten times the raw table's). Chunks already
-- made keep their range; new ones are 7 days.
--
-- Why: candles_5m is the one level read through its heap (its key does not cover the row: a
-- covering one would cost a fifth of the raw table). The refresh writes every currency of a
-- 5-minute bucket together, so in the open chunk one currency's rows lie a heap page apart, and
-- reorder_chunks puts a chunk in currency order only once it has closed: a month at 5 min read
-- 8,640 rows a page each, a year at 55 min the same besides its 105,120 rows. With 7-day chunks
-- at most 8 days of a currency's 5-minute rows are still in write order. Measured on 50
-- currencies × a year of minutes (bench:history's data, first requests, 40 each): a month at
-- 5 min 14.1 / 19.5 → 8.8 / 14.9 ms p50 / p95, a year at 55 min 35.2 / 45.7 → 30.4 / 44.9 ms, a
-- year at 1 h (candles_1h) unchanged.
DO $chunks$
DECLARE
  level regclass;
BEGIN
  IF current_setting('timescaledb.license', true) = 'timescale' THEN
    SELECT format('%I.%I', materialization_hypertable_schema, materialization_hypertable_name)::regclass
      INTO level
      FROM timescaledb_information.continuous_aggregates
      WHERE view_name = 'candles_5m';
  ELSE
    level := 'candles_5m'::regclass;
  END IF;
  PERFORM set_chunk_time_interval(level, INTERVAL '7 days');
END
$chunks$;
