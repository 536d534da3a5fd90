-- Market data: the currency list, every price observation, and the current snapshot.

CREATE TABLE currencies (
  code        text PRIMARY KEY CHECK (code ~ '^[A-Z0-9]{1,15}$'),
  name        text NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
  -- Position in the shipped list (by market capitalisation when it was made); lower is larger.
  rank        integer,
  updated_at  timestamptz NOT NULL DEFAULT now()
);

-- One row per currency and instant. A harvested price is a candle whose four prices are equal;
-- backfilled history brings real OHLCV candles. No foreign key to currencies: bulk loads check
-- codes once per batch instead of once per row, which keeps COPY near its ceiling.
CREATE TABLE price_observations (
  currency_code text             NOT NULL,
  time          timestamptz      NOT NULL,
  open          double precision NOT NULL,
  high          double precision NOT NULL,
  low           double precision NOT NULL,
  close         double precision NOT NULL,
  volume        double precision NOT NULL DEFAULT 0,
  source        text             NOT NULL,
  CONSTRAINT price_observations_pkey PRIMARY KEY (currency_code, time),
  CONSTRAINT price_observations_prices CHECK (
    open > 0 AND close > 0 AND low > 0 AND high >= low AND volume >= 0
  )
);

-- Seven-day chunks: a year of one-minute candles for 50 currencies is ~0.5 M rows a week, and a
-- harvest of 100+ currencies every 5 s ~12 M; either way the chunk being written and its index
-- stay far below a quarter of memory, and a year spans ~52 chunks, few enough to plan quickly.
-- The primary key (currency_code, time) is the index for both hot reads: "one currency, a time
-- range" (range scan) and "latest price of a currency" (backward scan, newest chunk first).
SELECT create_hypertable('price_observations', by_range('time', INTERVAL '7 days'));

CREATE TABLE currency_snapshots (
  currency_code text PRIMARY KEY REFERENCES currencies (code) ON DELETE CASCADE,
  price         double precision NOT NULL CHECK (price > 0),
  observed_at   timestamptz      NOT NULL,
  source        text             NOT NULL
);
