import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { assertHoldingWithinBounds, valueOfShares } from '../../shared/amounts.ts';
import { UnprocessableError } from '../../shared/errors.ts';

// Holdings and the timeline of their changes. A change is recorded with its time and the price
// the currency had then; the holding keeps running totals and the cost of the shares it holds.

const portfolioRow = z.object({ id: z.number(), createdAt: z.date() });
export type PortfolioRow = z.infer<typeof portfolioRow>;

const holdingRow = z.object({
  id: z.number(),
  currencyCode: z.string(),
  shares: z.number(),
  walletDollars: z.number(),
  costBasis: z.number(),
  lastPrice: z.number().nullable(),
  updatedAt: z.date(),
});
export type HoldingRow = z.infer<typeof holdingRow>;

const changeRow = z.object({
  currencyCode: z.string(),
  changedAt: z.date(),
  price: z.number(),
  sharesAfter: z.number(),
  dollarsAfter: z.number(),
});
export type HoldingChange = z.infer<typeof changeRow>;

const selectPortfolio = (userId: number) => sql.type(portfolioRow)`
  SELECT id, created_at AS "createdAt" FROM app.portfolios WHERE user_id = ${userId}
`;

/** The user's portfolio, created on first use (sign-up creates it too). */
export async function portfolioOf(pool: DatabasePool, userId: number): Promise<PortfolioRow> {
  const existing = await pool.maybeOne(selectPortfolio(userId));
  if (existing) return existing;
  await pool.query(sql.unsafe`
    INSERT INTO app.portfolios (user_id) VALUES (${userId}) ON CONFLICT (user_id) DO NOTHING
  `);
  // A statement of its own, so it sees the row whichever of two racing requests created it.
  return pool.one(selectPortfolio(userId));
}

export async function holdingsOf(pool: DatabasePool, portfolioId: number) {
  return pool.any(sql.type(holdingRow)`
    SELECT id, currency_code AS "currencyCode", shares, wallet_dollars AS "walletDollars",
           cost_basis AS "costBasis", last_price AS "lastPrice", updated_at AS "updatedAt"
    FROM app.holdings WHERE portfolio_id = ${portfolioId}
    ORDER BY currency_code
  `);
}

export async function holdsAnything(pool: DatabasePool, userId: number): Promise<boolean> {
  return pool.exists(sql.unsafe`
    SELECT 1 FROM app.holdings h JOIN app.portfolios p ON p.id = h.portfolio_id
    WHERE p.user_id = ${userId} AND (h.shares > 0 OR h.wallet_dollars > 0)
  `);
}

/** Changes up to `until`, oldest first. */
export async function changesOf(pool: DatabasePool, portfolioId: number, until: Date) {
  return pool.any(sql.type(changeRow)`
    SELECT currency_code AS "currencyCode", changed_at AS "changedAt", price,
           shares_after AS "sharesAfter", dollars_after AS "dollarsAfter"
    FROM app.holding_changes
    WHERE portfolio_id = ${portfolioId} AND changed_at < ${sql.timestamp(until)}
    ORDER BY changed_at, id
  `);
}

export interface HoldingDelta {
  currencyCode: string;
  shares: number;
  walletDollars: number;
  /** Price of one share at the time of the change. */
  price: number;
}

// Selling "all" of 0.3 bought as 0.1 + 0.2 leaves 5.6e-17 in binary floating point: treat
// what is left below this fraction of the earlier amount as nothing.
const RELATIVE_EPSILON = 1e-9;

function settle(before: number, delta: number, what: string): number {
  const after = before + delta;
  if (Math.abs(after) <= RELATIVE_EPSILON * Math.max(1, Math.abs(before))) return 0;
  if (after < 0) {
    throw new UnprocessableError(
      `Cannot remove ${-delta} ${what}: the holding has only ${before}`,
      `insufficient_${what.replace(/ /g, '_')}`,
      [
        {
          path: what === 'shares' ? 'body.shares' : 'body.walletDollars',
          message: 'more than held',
        },
      ],
    );
  }
  return after;
}

/**
 * Adds to (or creates) a holding and records the change, in one transaction; the row lock
 * serialises concurrent changes of the same holding. Removing more than is held is refused.
 */
export async function applyHoldingDelta(
  pool: DatabasePool,
  portfolioId: number,
  delta: HoldingDelta,
): Promise<void> {
  await pool.transaction(async (tx) => {
    await tx.query(sql.unsafe`
      INSERT INTO app.holdings (portfolio_id, currency_code, shares, wallet_dollars, cost_basis)
      VALUES (${portfolioId}, ${delta.currencyCode}, 0, 0, 0)
      ON CONFLICT (portfolio_id, currency_code) DO NOTHING
    `);
    if (delta.shares === 0 && delta.walletDollars === 0) return;
    const held = await tx.one(sql.type(
      z.object({ shares: z.number(), walletDollars: z.number(), costBasis: z.number() }),
    )`
      SELECT shares, wallet_dollars AS "walletDollars", cost_basis AS "costBasis"
      FROM app.holdings
      WHERE portfolio_id = ${portfolioId} AND currency_code = ${delta.currencyCode}
      FOR UPDATE
    `);
    const shares = settle(held.shares, delta.shares, 'shares');
    const dollars = settle(held.walletDollars, delta.walletDollars, 'wallet dollars');
    assertHoldingWithinBounds(shares, dollars);
    // Bought shares cost what they are worth now; removed ones take their share of the cost.
    const costBasis =
      delta.shares >= 0
        ? held.costBasis + valueOfShares(delta.shares, delta.price)
        : held.shares > 0
          ? held.costBasis * (shares / held.shares)
          : 0;
    await tx.query(sql.unsafe`
      UPDATE app.holdings
      SET shares = ${shares}, wallet_dollars = ${dollars}, cost_basis = ${costBasis},
          last_price = ${delta.price}, updated_at = clock_timestamp()
      WHERE portfolio_id = ${portfolioId} AND currency_code = ${delta.currencyCode}
    `);
    await tx.query(sql.unsafe`
      INSERT INTO app.holding_changes
        (portfolio_id, currency_code, shares_delta, dollars_delta, price, shares_after, dollars_after)
      VALUES (${portfolioId}, ${delta.currencyCode}, ${delta.shares}, ${delta.walletDollars},
              ${delta.price}, ${shares}, ${dollars})
    `);
  });
}
