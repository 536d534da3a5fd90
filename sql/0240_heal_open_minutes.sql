-- What gap healing fills, as one rule that the heal job, `platform doctor` and the
-- heal_open_gap_candles metric all read (src/data/ingest/heal/openGaps.ts): the minutes of a
-- window, from the currency's first observation on, with no observation and not recorded as a
-- known gap (no exchange has them).
CREATE FUNCTION heal_open_minutes(currency text, window_start timestamptz, window_end timestamptz)
RETURNS SETOF timestamptz
LANGUAGE sql STABLE
AS $$
  SELECT m
    FROM (SELECT min(time) AS t FROM price_observations WHERE currency_code = $1) AS first,
         generate_series(greatest(date_trunc('minute', first.t), $2),
                         $3 - interval '1 minute', interval '1 minute') AS m
   WHERE first.t IS NOT NULL
     AND NOT EXISTS (SELECT 1 FROM price_observations o
                      WHERE o.currency_code = $1 AND o.time >= m AND o.time < m + interval '1 minute')
     AND NOT EXISTS (SELECT 1 FROM price_gaps g WHERE g.currency_code = $1 AND g.minute = m)
$$;

-- Minutes gap healing filled, by the exchange that had them: added in the transaction that loads
-- them, so the count is exact whichever process healed and however often it restarted.
CREATE TABLE heal_totals (
  source         text   PRIMARY KEY,
  filled_minutes bigint NOT NULL CHECK (filled_minutes >= 0)
);

-- The minutes each currency still had open after the last heal pass over it, by the rule above:
-- the heal_open_gap_candles metric sums them at scrape time without counting again (a count over
-- every currency costs seconds; each pass has it at hand).
CREATE TABLE heal_open_gaps (
  currency_code text        PRIMARY KEY REFERENCES currencies (code) ON DELETE CASCADE,
  open_minutes  integer     NOT NULL CHECK (open_minutes >= 0),
  counted_at    timestamptz NOT NULL
);
