-- Two more hourly levels, their hours starting a quarter and a half past the UTC hour:
-- candles_1h_at15 and candles_1h_at30 (rollup tables: from candles_15m; continuous aggregates:
-- from the raw rows, see below).
--
-- Why: a day in a zone whose offset is not a whole hour (Asia/Kolkata +05:30, America/St_Johns
-- −03:30, Asia/Kathmandu +05:45, Australia/Eucla +08:45, Pacific/Chatham +12:45) starts at :30
-- or :15 past a UTC hour, so candles_1h cannot serve it and its days were read from candles_15m:
-- 35,040 rows a currency-year, where a whole-hour zone reads 8,760 hourly rows. Every offset in
-- use is a whole hour, or a whole hour and 30 or 45 minutes (a :45 offset starts its days at :15
-- past the UTC hour), so these two levels make every zone's days, weeks and hours read hourly
-- rows. Each costs what candles_1h costs (a few per cent of the raw table, covering primary key
-- included). Assembling such days from whole hours plus 15-minute rows at each day's edges was
-- tried first and was not faster (bench/RESULTS.md).
--
-- Like every level, they start empty and are materialised by the worker's refresh_rollups (or
-- the refresh policies); answers stay exact meanwhile, read from candles_15m.

ALTER TABLE rollup_watermarks DROP CONSTRAINT rollup_watermarks_level_check;
ALTER TABLE rollup_watermarks
  ADD CONSTRAINT rollup_watermarks_level_check
  CHECK (level IN ('5m', '15m', '1h', '1d', '1h_at15', '1h_at30'));

DO $levels$
DECLARE
  batching boolean;
  level text;
  phase interval;
BEGIN
  IF current_setting('timescaledb.license', true) = 'timescale' THEN
    batching := EXISTS (
      SELECT 1 FROM pg_proc
      WHERE proname = 'add_continuous_aggregate_policy'
        AND pg_get_function_arguments(oid) LIKE '%buckets_per_batch%'
    );
    FOR level, phase IN
      VALUES ('candles_1h_at15', INTERVAL '15 minutes'), ('candles_1h_at30', INTERVAL '30 minutes')
    LOOP
      -- From the raw rows: TimescaleDB refuses a continuous aggregate on another whose bucket
      -- offset differs (candles_15m has none). The rollup tables build them from candles_15m;
      -- both give the same candles (first and last by observation time, sums, extremes).
      EXECUTE format($view$
        CREATE MATERIALIZED VIEW %I
          WITH (timescaledb.continuous, timescaledb.materialized_only = false) AS
          SELECT currency_code,
                 time_bucket(INTERVAL '1 hour', time, "offset" => %L::interval) AS bucket,
                 first(open, time) AS open, max(high) AS high, min(low) AS low,
                 last(close, time) AS close, sum(volume) AS volume, count(*) AS count,
                 min(time) AS first_time, max(time) AS last_time
          FROM price_observations
          GROUP BY currency_code, time_bucket(INTERVAL '1 hour', time, "offset" => %L::interval)
          WITH NO DATA
        $view$, level, phase, phase);
      -- As candles_1h (sql/0220_rollup_levels.sql).
      EXECUTE format(
        'SELECT add_continuous_aggregate_policy(%L, start_offset => NULL, '
        'end_offset => INTERVAL ''1 hour'', schedule_interval => INTERVAL ''5 minutes''%s)',
        level, CASE WHEN batching THEN ', buckets_per_batch => 720' ELSE '' END);
    END LOOP;
  ELSE
    -- Covering primary keys, as candles_1h: a currency's hours are read from the index alone.
    CREATE TABLE candles_1h_at15 (LIKE candles_1h INCLUDING ALL);
    CREATE TABLE candles_1h_at30 (LIKE candles_1h INCLUDING ALL);
    PERFORM create_hypertable('candles_1h_at15', by_range('bucket', INTERVAL '365 days'));
    PERFORM create_hypertable('candles_1h_at30', by_range('bucket', INTERVAL '365 days'));
    INSERT INTO rollup_watermarks (level) VALUES ('1h_at15'), ('1h_at30');
  END IF;
END
$levels$;
