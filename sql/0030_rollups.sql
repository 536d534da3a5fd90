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
    -- aggregation serves it (and everything newer) from the level below.
    PERFORM add_continuous_aggregate_policy('candles_1m', start_offset => NULL,
      end_offset => INTERVAL '2 minutes', schedule_interval => INTERVAL '1 minute');
    PERFORM add_continuous_aggregate_policy('candles_1h', start_offset => NULL,
      end_offset => INTERVAL '1 hour', schedule_interval => INTERVAL '5 minutes');
    PERFORM add_continuous_aggregate_policy('candles_1d', start_offset => NULL,
      end_offset => INTERVAL '1 day', schedule_interval => INTERVAL '1 hour');
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
      PRIMARY KEY (currency_code, bucket)
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
