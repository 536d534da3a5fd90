import type { DatabasePool } from 'slonik';
import { queryOpens, type QueryOptions } from './candleQuery.ts';

export interface TimeValueRow {
  timestamp: Date;
  value: number;
}

export interface HistoryWindow {
  code: string;
  from: Date;
  to: Date;
  intervalSeconds: number;
}

/**
 * First price of each epoch-aligned bucket of `intervalSeconds` inside [from, to), oldest first;
 * empty buckets are left out. That is the open of the bucket's candle, so the rollup planner
 * answers it (coarsest level that nests, the unmaterialised tail from below, raw otherwise).
 */
export async function firstPricePerBucket(
  pool: DatabasePool,
  window: HistoryWindow,
  options: QueryOptions = {},
): Promise<TimeValueRow[]> {
  const opens = await queryOpens(pool, window, options);
  return opens.map((c) => ({ timestamp: c.timestamp, value: c.open }));
}
