import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';

export const timeValueRow = z.object({ timestamp: z.date(), value: z.number() });
export type TimeValueRow = z.infer<typeof timeValueRow>;

export interface HistoryWindow {
  code: string;
  from: Date;
  to: Date;
  intervalSeconds: number;
}

/**
 * First price of each epoch-aligned bucket of `intervalSeconds` inside [from, to), oldest first;
 * empty buckets are left out. The origin is pinned to the Unix epoch because time_bucket's
 * default origin (2000-01-03) would shift buckets whose width does not divide a week.
 */
export async function firstPricePerBucket(
  pool: DatabasePool,
  window: HistoryWindow,
): Promise<readonly TimeValueRow[]> {
  return pool.any(sql.type(timeValueRow)`
    SELECT time_bucket(make_interval(secs => ${window.intervalSeconds}), time, TIMESTAMPTZ 'epoch') AS timestamp,
           first(open, time) AS value
    FROM price_observations
    WHERE currency_code = ${window.code}
      AND time >= ${sql.timestamp(window.from)}
      AND time < ${sql.timestamp(window.to)}
    GROUP BY 1
    ORDER BY 1
  `);
}
