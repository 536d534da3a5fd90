import type pg from 'pg';
import type { TouchedRange } from '../prices/invalidations.ts';
import { STAGE_TABLE, type PassStats } from './copyPass.ts';

const COLUMNS = 'currency_code, time, open, high, low, close, volume, source';

/**
 * Moves staged rows into the hypertable; stored rows win. Rows flagged certainly new go in with
 * a plain INSERT: it skips the conflict check (a speculative insertion per row, about half the
 * cost of an insert on a hypertable), and if another writer stored one of them meanwhile it
 * fails with a unique violation, on which the loader redoes the unit with every row checked.
 * The others go through ON CONFLICT DO NOTHING, which reports exactly the rows it inserted: only
 * those are marked for the rollups.
 */
export async function mergeStage(
  client: pg.ClientBase,
  stats: PassStats,
): Promise<{ inserted: number; ranges: TouchedRange[] }> {
  if (stats.stagedCertain > 0) {
    await client.query(
      `INSERT INTO price_observations (${COLUMNS}) SELECT ${COLUMNS} FROM ${STAGE_TABLE} WHERE certain`,
    );
  }
  const tracker = stats.certainRanges;
  let inserted = stats.direct + stats.stagedCertain;
  if (stats.stagedMaybe > 0) {
    const result = await client.query<{ code: string; from_us: string; to_us: string; n: string }>(`
      WITH inserted AS (
        INSERT INTO price_observations (${COLUMNS})
        SELECT ${COLUMNS} FROM ${STAGE_TABLE} WHERE NOT certain
        ON CONFLICT (currency_code, time) DO NOTHING
        RETURNING currency_code, time
      )
      SELECT currency_code AS code,
             (extract(epoch FROM min(time)) * 1000000)::bigint AS from_us,
             (extract(epoch FROM max(time)) * 1000000)::bigint AS to_us,
             count(*) AS n
      FROM inserted
      GROUP BY currency_code, floor(extract(epoch FROM time) / 86400)`);
    for (const row of result.rows) {
      tracker.add(row.code, Number(row.from_us), Number(row.to_us));
      inserted += Number(row.n);
    }
  }
  return { inserted, ranges: tracker.ranges() };
}
