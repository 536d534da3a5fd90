-- Rollups of price_observations at 1 minute, 1 hour and 1 day, each built from the level below,
-- all aligned to the Unix epoch. Every level keeps what merging needs to stay exact: open (first
-- price), high, low, close (last price), volume (sum), count, and the first and last observation
-- times (the open of a coarse bucket is the open of its earliest non-empty sub-bucket).
--
-- Timescale's own edition (licence `timescale`): hierarchical continuous aggregates with refresh
-- policies and real-time aggregation. Apache edition: plain hypertables of the same name and
-- columns, kept fresh by the worker task `refresh_rollups` from the watermarks below. The code
-- finds out which of the two this database has (src/data/history/rollups.ts).

CREATE TABLE rollup_watermarks (
  level        text PRIMARY KEY CHECK (level IN ('1m', '1h', '1d')),
  -- Every bucket of the level that starts before this instant is materialised; NULL: none yet.
  watermark    timestamptz,
  refreshed_at timestamptz
);

-- The planner looks up pending invalidations of one currency on every history request.
CREATE INDEX price_invalidations_code ON price_invalidations (currency_code, range_start);

DO $rollups$
DECLARE
  batching boolean;
  level text;
  lag interval;
  cadence interval;
  batch int;
BEGIN
  IF current_setting('timescaledb.license', true) = 'timescale' THEN
    CREATE MATERIALIZED VIEW candles_1m
      WITH (timescaledb.continuous, timescaledb.materialized_only = false) AS
      SELECT currency_code,
             time_bucket(INTERVAL '1 minute', time) AS bucket,
             first(open, time) AS open, max(high) AS high, min(low) AS low,
             last(close, time) AS close, sum(volume) AS volume, count(*) AS count,
             min(time) AS first_time, max(time) AS last_time
      FROM price_observations
      GROUP BY currency_code, time_bucket(INTERVAL '1 minute', time)
      WITH NO DATA;

    CREATE MATERIALIZED VIEW candles_1h
      WITH (timescaledb.continuous, timescaledb.materialized_only = false) AS
      SELECT currency_code,
             time_bucket(INTERVAL '1 hour', bucket) AS bucket,
             first(open, first_time) AS open, max(high) AS high, min(low) AS low,
             last(close, last_time) AS close, sum(volume) AS volume, sum(count)::bigint AS count,
             min(first_time) AS first_time, max(last_time) AS last_time
      FROM candles_1m
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

    -- end_offset keeps the still-filling bucket out of the materialisation; real-time
    -- aggregation serves it (and everything newer) from the level below. Since 2.19 policies
    -- refresh in batches of `buckets_per_batch` buckets, one bucket by default: a first refresh
    -- of a year of minutes would take half a million transactions, so batches span days instead.
    batching := EXISTS (
      SELECT 1 FROM pg_proc
      WHERE proname = 'add_continuous_aggregate_policy'
        AND pg_get_function_arguments(oid) LIKE '%buckets_per_batch%'
    );
    FOR level, lag, cadence, batch IN
      VALUES ('candles_1m', INTERVAL '2 minutes', INTERVAL '1 minute', 10080),
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
    CREATE TABLE candles_1m (
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
      -- Covering: one currency's range is read from the index alone (index-only scan), not from
      -- heap pages where every currency's buckets of the same time sit side by side.
      PRIMARY KEY (currency_code, bucket)
        INCLUDE (open, high, low, close, volume, count, first_time, last_time)
    );
    CREATE TABLE candles_1h (LIKE candles_1m INCLUDING ALL);
    CREATE TABLE candles_1d (LIKE candles_1m INCLUDING ALL);
    -- Chunks of roughly half a million rows for 50 currencies, as for the raw table.
    PERFORM create_hypertable('candles_1m', by_range('bucket', INTERVAL '7 days'));
    PERFORM create_hypertable('candles_1h', by_range('bucket', INTERVAL '365 days'));
    PERFORM create_hypertable('candles_1d', by_range('bucket', INTERVAL '3650 days'));
    INSERT INTO rollup_watermarks (level) VALUES ('1m'), ('1h'), ('1d');
  END IF;
END
$rollups$;
