import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { carriesValues, type CandleRequest } from './request.ts';

// The 'previous' and 'linear' fills carry values into the window from the nearest observations
// outside it. Looked up on their own, before the answer's statement, so that statement does not
// hold an unbounded look-up into the past: planning `time < from` over a year of hypertable
// chunks took longer than running the whole fill (7 ms against 4 ms for a month at 4 h).

/** An observation just outside a window; `time` keeps the microseconds the table holds. */
export interface SeedPoint {
  time: string;
  close: number;
}

/** The last observation before the window and the first at or after its end, as a fill needs. */
export interface FillSeeds {
  before: SeedPoint | null;
  after: SeedPoint | null;
}

const NO_SEEDS: FillSeeds = { before: null, after: null };

/** Most gaps are shorter than this; the first look-up back reads only the chunks it spans. */
const NEAR = sql.fragment`interval '7 days'`;

const seedRow = z.object({
  side: z.enum(['before', 'after']),
  time: z.string(),
  close: z.number(),
});

type Reach = 'near' | 'all';

export async function readFillSeeds(
  pool: DatabasePool,
  request: Pick<CandleRequest, 'code' | 'from' | 'to' | 'fill'>,
): Promise<FillSeeds> {
  if (!carriesValues(request)) return NO_SEEDS;
  // Looking forward is cheap to plan whatever the reach (chunks past the window's end are few).
  const seeds = await lookUp(pool, request, 'near', request.fill === 'linear');
  if (seeds.before) return seeds;
  // Nothing in the week before the window: look over every older chunk (rare, and then needed).
  return { ...seeds, before: (await lookUp(pool, request, 'all', false)).before };
}

async function lookUp(
  pool: DatabasePool,
  request: Pick<CandleRequest, 'code' | 'from' | 'to'>,
  back: Reach,
  forward: boolean,
): Promise<FillSeeds> {
  const from = sql.fragment`${request.from.toISOString()}::timestamptz`;
  const to = sql.fragment`${request.to.toISOString()}::timestamptz`;
  const before = sql.fragment`
    SELECT 'before' AS side, time, close FROM price_observations
    WHERE currency_code = ${request.code} AND time < ${from}
      ${back === 'near' ? sql.fragment`AND time >= ${from} - ${NEAR}` : sql.fragment``}
    ORDER BY time DESC LIMIT 1`;
  const after = sql.fragment`
    SELECT 'after' AS side, time, close FROM price_observations
    WHERE currency_code = ${request.code} AND time >= ${to}
    ORDER BY time LIMIT 1`;
  const rows = await pool.any(sql.type(seedRow)`
    SELECT side, to_char(time AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS time, close
    FROM ((${before}) ${forward ? sql.fragment`UNION ALL (${after})` : sql.fragment``}) AS seeds
  `);
  const point = (side: 'before' | 'after') => {
    const row = rows.find((r) => r.side === side);
    return row ? { time: row.time, close: row.close } : null;
  };
  return { before: point('before'), after: point('after') };
}
