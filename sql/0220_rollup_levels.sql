-- The rollup levels become 5 minutes (from the raw rows), 15 minutes (from 5 minutes), 1 hour
-- (from 15 minutes) and 1 day (from 1 hour), replacing 1 minute → 1 hour → 1 day.
--
-- Why: a 1-minute level copied one-minute candle data row for row (with its covering index it
-- was 2.2× the raw table) and saved nothing: 1-minute and other odd intervals read the raw rows
-- with time_bucket instead. Every UTC offset in use is a multiple of 15 minutes (Asia/Kolkata
-- +05:30, Asia/Kathmandu +05:45, America/St_Johns −03:30), so the 15-minute level serves a day,
-- a week or a 30-minute bucket in any zone; the 5-minute level serves the 5/10/20-minute charts.
-- Only the coarse levels keep a covering primary key (index-only range reads of one currency):
-- on 1h and 1d it costs a few per cent of the raw table's size; on 5m it would cost a fifth.
--
-- The levels are derived data: the old ones go, the new ones start empty and are materialised
-- again (the worker's refresh_rollups from the watermarks, or the refresh policies); answers
-- stay exact meanwhile, read from finer data.

ALTER TABLE rollup_watermarks DROP CONSTRAINT rollup_watermarks_level_check;
DELETE FROM rollup_watermarks;
ALTER TABLE rollup_watermarks
  ADD CONSTRAINT rollup_watermarks_level_check CHECK (level IN ('5m', '15m', '1h', '1d'));

DO $levels$
DECLARE
  batching boolean;
  level text;
  lag interval;
  cadence interval;
  batch int;
BEGIN
  IF current_setting('timescaledb.license', true) = 'timescale' THEN
    DROP MATERIALIZED VIEW candles_1d;
    DROP MATERIALIZED VIEW candles_1h;
    DROP MATERIALIZED VIEW candles_1m;

    CREATE MATERIALIZED VIEW candles_5m
      WITH (timescaledb.continuous, timescaledb.materialized_only = false) AS
      SELECT currency_code,
             time_bucket(INTERVAL '5 minutes', time) AS bucket,
             first(open, time) AS open, max(high) AS high, min(low) AS low,
             last(close, time) AS close, sum(volume) AS volume, count(*) AS count,
             min(time) AS first_time, max(time) AS last_time
      FROM price_observations
      GROUP BY currency_code, time_bucket(INTERVAL '5 minutes', time)
      WITH NO DATA;

    CREATE MATERIALIZED VIEW candles_15m
      WITH (timescaledb.continuous, timescaledb.materialized_only = false) AS
      SELECT currency_code,
             time_bucket(INTERVAL '15 minutes', bucket) AS bucket,
             first(open, first_time) AS open, max(high) AS high, min(low) AS low,
             last(close, last_time) AS close, sum(volume) AS volume, sum(count)::bigint AS count,
             min(first_time) AS first_time, max(last_time) AS last_time
      FROM candles_5m
      GROUP BY currency_code, time_bucket(INTERVAL '15 minutes', bucket)
      WITH NO DATA;

    CREATE MATERIALIZED VIEW candles_1h
      WITH (timescaledb.continuous, timescaledb.materialized_only = false) AS
      SELECT currency_code,
             time_bucket(INTERVAL '1 hour', bucket) AS bucket,
             first(open, first_time) AS open, max(high) AS high, min(low) AS low,
             last(close, last_time) AS close, sum(volume) AS volume, sum(count)::bigint AS count,
             min(first_time) AS first_time, max(last_time) AS last_time
      FROM candles_15m
      GROUP BY currency_code, time_bucket(INTERVAL '1 hour', bucket)
      WITH NO DATA;

    CREATE MATERIALIZED VIEW candles_1d
      WITH (timescaledb.continuous, timescaledb.materialized_only = false) AS
      SELECT currency_code,
             time_bucket(INTERVAL '1 day', bucket) AS bucket,
             first(open, first_time) AS open, max(high) AS high, min(low) AS low,
             last(close, last_time) AS close, sum(volume) AS volume, sum(count)::bigint AS count,
             min(first_time) AS first_time, max(last_time) AS last_time
      FROM candles_1h
      GROUP BY currency_code, time_bucket(INTERVAL '1 day', bucket)
      WITH NO DATA;

    -- As in 0030: end_offset keeps the still-filling buckets to real-time aggregation, and
    -- batches of about a week (a day for 1h) keep a first refresh to a few hundred transactions.
    batching := EXISTS (
      SELECT 1 FROM pg_proc
      WHERE proname = 'add_continuous_aggregate_policy'
        AND pg_get_function_arguments(oid) LIKE '%buckets_per_batch%'
    );
    FOR level, lag, cadence, batch IN
      VALUES ('candles_5m', INTERVAL '10 minutes', INTERVAL '1 minute', 2016),
             ('candles_15m', INTERVAL '15 minutes', INTERVAL '5 minutes', 672),
             ('candles_1h', INTERVAL '1 hour', INTERVAL '5 minutes', 720),
             ('candles_1d', INTERVAL '1 day', INTERVAL '1 hour', 0)
    LOOP
      EXECUTE format(
        'SELECT add_continuous_aggregate_policy(%L, start_offset => NULL, end_offset => %L::interval, '
        'schedule_interval => %L::interval%s)',
        level, lag, cadence,
        CASE WHEN batching THEN format(', buckets_per_batch => %s', batch) ELSE '' END);
    END LOOP;
  ELSE
    DROP TABLE candles_1d;
    DROP TABLE candles_1h;
    DROP TABLE candles_1m;
    CREATE TABLE candles_5m (
      currency_code text             NOT NULL,
      bucket        timestamptz      NOT NULL,
      open          double precision NOT NULL,
      high          double precision NOT NULL,
      low           double precision NOT NULL,
      close         double precision NOT NULL,
      volume        double precision NOT NULL,
      count         bigint           NOT NULL,
      first_time    timestamptz      NOT NULL,
      last_time     timestamptz      NOT NULL,
      PRIMARY KEY (currency_code, bucket)
    );
    CREATE TABLE candles_15m (LIKE candles_5m INCLUDING DEFAULTS INCLUDING CONSTRAINTS);
    ALTER TABLE candles_15m ADD PRIMARY KEY (currency_code, bucket);
    CREATE TABLE candles_1h (LIKE candles_5m INCLUDING DEFAULTS INCLUDING CONSTRAINTS);
    -- Covering: one currency's year of hours or days is read from the index alone, not from
    -- heap pages where every currency's buckets of the same time sit side by side.
    ALTER TABLE candles_1h ADD PRIMARY KEY (currency_code, bucket)
      INCLUDE (open, high, low, close, volume, count, first_time, last_time);
    CREATE TABLE candles_1d (LIKE candles_1h INCLUDING ALL);
    -- Chunks of roughly half a million rows for 50 currencies, as for the raw table.
    PERFORM create_hypertable('candles_5m', by_range('bucket', INTERVAL '30 days'));
    PERFORM create_hypertable('candles_15m', by_range('bucket', INTERVAL '90 days'));
    PERFORM create_hypertable('candles_1h', by_range('bucket', INTERVAL '365 days'));
    PERFORM create_hypertable('candles_1d', by_range('bucket', INTERVAL '3650 days'));
    INSERT INTO rollup_watermarks (level) VALUES ('5m'), ('15m'), ('1h'), ('1d');
  END IF;
END
$levels$;
