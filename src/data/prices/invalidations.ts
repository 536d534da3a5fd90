import type pg from 'pg';
import type { CommonQueryMethods } from 'slonik';

// The rollups (src/data/history/refresh.ts) materialise buckets once they are older than the
// settle window and never look at them again unless a range is marked here. So a raw price
// written older than the settle window must be marked in the transaction that writes it, or
// history answers keep the old values. Two modules write price_observations, and both mark:
// - the bulk loader (src/data/ingest/loader.ts: files, the bulk route, exchange backfills, gap
//   healing, simulated history) marks every range it writes, with markTouchedRangesOnClient;
// - the harvest (src/data/prices/recordHarvest.ts) marks, in its insert statement, the prices
//   older than the settle window (a late slot).
// test/data/settleMarks.test.ts writes through each path and fails on a third writer.

export interface TouchedRange {
  code: string;
  /** Earliest candle time written. */
  from: Date;
  /** Latest candle time written (inclusive). */
  to: Date;
}

/**
 * Records the time ranges a write touched so the rollups recompute them. Call it in the same
 * transaction as the write: then a crash can never leave written rows without their mark.
 */
export async function markTouchedRanges(
  db: CommonQueryMethods,
  ranges: TouchedRange[],
): Promise<void> {
  if (ranges.length === 0) return;
  // Imported here: the bulk loader uses this module's client variant in `platform backfill`,
  // which must not load Slonik (a tenth of a second) before its first row. A caller of this one
  // holds a Slonik connection, so the module is already loaded.
  const { sql } = await import('slonik');
  const rows = jsonRows(ranges);
  await db.query(sql.unsafe`
    INSERT INTO price_invalidations (currency_code, range_start, range_end)
    SELECT code, "from", "to" FROM jsonb_to_recordset(${sql.jsonb(rows)}) AS x(code text, "from" timestamptz, "to" timestamptz)
  `);
}

/**
 * The same mark, on a raw node-postgres client: bulk loads run their COPY and merge on one, and
 * the mark must share that transaction.
 */
export async function markTouchedRangesOnClient(
  client: pg.ClientBase,
  ranges: TouchedRange[],
): Promise<void> {
  if (ranges.length === 0) return;
  const rows = jsonRows(ranges);
  await client.query(
    `INSERT INTO price_invalidations (currency_code, range_start, range_end)
     SELECT code, "from", "to" FROM jsonb_to_recordset($1::jsonb) AS x(code text, "from" timestamptz, "to" timestamptz)`,
    [JSON.stringify(rows)],
  );
}

/** The ranges as the JSON records both statements read with jsonb_to_recordset. */
function jsonRows(ranges: TouchedRange[]) {
  return ranges.map((r) => ({ code: r.code, from: r.from.toISOString(), to: r.to.toISOString() }));
}
