import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import { PRICE_TICKS_CHANNEL, priceTickPayloads } from './priceEvents.ts';

export interface HarvestedPrice {
  code: string;
  price: number;
  source: string;
}

export interface HarvestBatch {
  /** The instant the prices stand for: the observations' time and the snapshots' observed_at. */
  at: Date;
  prices: HarvestedPrice[];
  /**
   * The rollups' settle window (ROLLUP_SETTLE_SECONDS): a batch written later than this after
   * its instant (a late slot, a long interval) lands in buckets a refresh may already have
   * materialised, so its rows are marked for recomputation.
   */
  settleSeconds: number;
}

export interface HarvestWrite {
  observations: number;
  /** Observations marked in price_invalidations because they were older than the settle window. */
  marked: number;
  snapshots: number;
  messages: number;
}

const writtenRow = z.object({ written: z.number(), marked: z.number() });

/**
 * Writes one harvest cycle: every price as an observation (a candle of four equal prices, volume
 * 0) in one statement, the snapshots moved forward (never back to an older instant), and the
 * price event. Run it inside a transaction: listeners then hear of exactly the committed prices.
 * The statement that writes the observations also marks those older than the settle window
 * (see src/data/prices/invalidations.ts): the clock is read as the rows are written, so a cycle
 * that waited on a lock is judged by when it really wrote.
 */
export async function recordHarvest(
  db: CommonQueryMethods,
  batch: HarvestBatch,
): Promise<HarvestWrite> {
  if (batch.prices.length === 0) return { observations: 0, marked: 0, snapshots: 0, messages: 0 };
  const at = sql.timestamp(batch.at);
  const rows = sql.unnest(
    batch.prices.map((p) => [p.code, p.price, p.source]),
    ['text', 'float8', 'text'],
  );
  const observations = await db.one(sql.type(writtenRow)`
    WITH written AS (
      INSERT INTO price_observations (currency_code, time, open, high, low, close, volume, source)
      SELECT b.code, ${at}, b.price, b.price, b.price, b.price, 0, b.source
      FROM ${rows} AS b(code, price, source)
      ON CONFLICT (currency_code, time) DO NOTHING
      RETURNING currency_code, time
    ), marked AS (
      INSERT INTO price_invalidations (currency_code, range_start, range_end)
      SELECT currency_code, time, time FROM written
      WHERE time < clock_timestamp() - make_interval(secs => ${batch.settleSeconds}::float8)
      RETURNING 1
    )
    SELECT (SELECT count(*) FROM written)::int AS written,
           (SELECT count(*) FROM marked)::int AS marked
  `);
  // The join drops codes removed from the currency list since the cycle read it.
  const snapshots = await db.query(sql.unsafe`
    INSERT INTO currency_snapshots (currency_code, price, observed_at, source)
    SELECT b.code, b.price, ${at}, b.source
    FROM ${rows} AS b(code, price, source) JOIN currencies c ON c.code = b.code
    ON CONFLICT (currency_code) DO UPDATE
      SET price = EXCLUDED.price, observed_at = EXCLUDED.observed_at, source = EXCLUDED.source
      WHERE currency_snapshots.observed_at < EXCLUDED.observed_at
  `);
  const payloads = priceTickPayloads(
    batch.at,
    batch.prices.map((p) => [p.code, p.price] as const),
  );
  for (const payload of payloads) {
    await db.query(sql.unsafe`SELECT pg_notify(${PRICE_TICKS_CHANNEL}, ${payload})`);
  }
  return {
    observations: observations.written,
    marked: observations.marked,
    snapshots: snapshots.rowCount,
    messages: payloads.length,
  };
}
