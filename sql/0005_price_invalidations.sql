-- Ranges of price history rewritten after the fact (backfills, late candles). The rollup layer
-- recomputes exactly these ranges and deletes the rows it has consumed.
CREATE TABLE price_invalidations (
  id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  currency_code text        NOT NULL,
  range_start   timestamptz NOT NULL,
  range_end     timestamptz NOT NULL CHECK (range_end >= range_start),
  created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX price_invalidations_created ON price_invalidations (created_at);
