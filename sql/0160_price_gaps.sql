-- Minutes without any observation that no configured exchange could supply (a delisting, a real
-- trading halt). Gap healing records them so that later passes do not ask the exchanges again.
CREATE TABLE price_gaps (
  currency_code text        NOT NULL,
  minute        timestamptz NOT NULL,
  recorded_at   timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT price_gaps_pkey PRIMARY KEY (currency_code, minute)
);
