-- Portfolios: one per user, its current holdings, and the timeline of every change of holdings.

CREATE TABLE app.portfolios (
  id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  user_id    bigint      NOT NULL UNIQUE REFERENCES app.users (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- Current position per currency. cost_basis is what the shares held cost (Σ shares × price at
-- acquisition, scaled down proportionally when shares are removed): profit = value − cost_basis.
CREATE TABLE app.holdings (
  id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  portfolio_id   bigint           NOT NULL REFERENCES app.portfolios (id) ON DELETE CASCADE,
  currency_code  text             NOT NULL,
  shares         double precision NOT NULL CHECK (shares >= 0),
  wallet_dollars double precision NOT NULL CHECK (wallet_dollars >= 0),
  cost_basis     double precision NOT NULL CHECK (cost_basis >= 0),
  last_price     double precision CHECK (last_price > 0),
  updated_at     timestamptz      NOT NULL DEFAULT now(),
  UNIQUE (portfolio_id, currency_code)
);

-- Every change of holdings with its time and the price at that time. Portfolio history joins
-- this timeline with the price history at read time, so backfilled prices show up at once. It
-- stays a plain table: it is read per portfolio (the index below), a handful of rows per user,
-- where hypertable chunks would only add planning work.
CREATE TABLE app.holding_changes (
  id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  portfolio_id   bigint           NOT NULL REFERENCES app.portfolios (id) ON DELETE CASCADE,
  currency_code  text             NOT NULL,
  changed_at     timestamptz      NOT NULL DEFAULT clock_timestamp(),
  shares_delta   double precision NOT NULL,
  dollars_delta  double precision NOT NULL,
  price          double precision NOT NULL CHECK (price > 0),
  shares_after   double precision NOT NULL CHECK (shares_after >= 0),
  dollars_after  double precision NOT NULL CHECK (dollars_after >= 0)
);
CREATE INDEX holding_changes_portfolio_time ON app.holding_changes (portfolio_id, changed_at);
