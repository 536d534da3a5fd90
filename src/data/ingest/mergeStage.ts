import type pg from 'pg';
import { STAGE_TABLE, type PassStats } from './copyPass.ts';
import { microsToIso } from './timeParsing.ts';

const COLUMNS = 'currency_code, time, open, high, low, close, volume, source';
const STAGED_COLUMNS = COLUMNS.split(', ')
  .map((column) => `s.${column}`)
  .join(', ');

export interface MergeOptions {
  /**
   * Check every staged row with ON CONFLICT DO NOTHING, which cannot fail on a stored row: the
   * redo of a unit whose first attempt met a unique violation.
   */
  checkEachInsert?: boolean;
}

/**
 * Moves the staged rows into the hypertable; stored rows win. Rows are staged when a held batch's
 * window holds too many stored keys to read them (copyPass.ts) and in the redo after a unique
 * violation. They are matched against the stored rows in one set operation (an anti-join on the
 * key, limited to their codes and time window so chunk exclusion prunes), and the unmatched ones
 * go in with a plain INSERT. Per row, INSERT … ON CONFLICT DO NOTHING costs an index probe plus a
 * speculative insertion for each new row: about 4.6 s of server CPU for 1 M staged rows of which
 * half are stored, against about 3.3 s for the anti-join. A row stored by another writer after
 * the statement's snapshot, or a row repeated within the unit, makes the plain INSERT fail with a
 * unique violation; the loader then redoes the unit, whose staged rows go in with ON CONFLICT
 * (`checkEachInsert`). Either statement returns exactly the rows it inserted: only those are
 * marked for the rollups (added to `stats.directRanges`).
 */
export async function mergeStage(
  client: pg.ClientBase,
  stats: PassStats,
  options: MergeOptions = {},
): Promise<number> {
  const window = stats.stageWindow;
  if (stats.staged === 0 || !window) return 0;
  // The anti-join hashes the stored keys of the window: with the default 4 MB they spill to
  // temporary files in batches (500,000 keys: four batches, ~70 MB written and read back).
  // For this transaction only.
  if (!options.checkEachInsert) await client.query(`SET LOCAL work_mem = '64MB'`);
  const result = await client.query<{ code: string; from_us: string; to_us: string; n: string }>(
    `WITH inserted AS (${options.checkEachInsert ? INSERT_EACH_CHECKED : INSERT_UNMATCHED})
     SELECT currency_code AS code,
            (extract(epoch FROM min(time)) * 1000000)::bigint AS from_us,
            (extract(epoch FROM max(time)) * 1000000)::bigint AS to_us,
            count(*) AS n
     FROM inserted
     GROUP BY currency_code, floor(extract(epoch FROM time) / 86400)`,
    options.checkEachInsert
      ? []
      : [[...window.codes], microsToIso(window.fromUs), microsToIso(window.toUs)],
  );
  let inserted = 0;
  for (const row of result.rows) {
    stats.directRanges.add(row.code, Number(row.from_us), Number(row.to_us));
    inserted += Number(row.n);
  }
  return inserted;
}

/** The staged rows that no stored row matches, inserted without a conflict check. */
const INSERT_UNMATCHED = `
  INSERT INTO price_observations (${COLUMNS})
  SELECT ${STAGED_COLUMNS} FROM ${STAGE_TABLE} s
  WHERE NOT EXISTS (
    SELECT FROM price_observations p
    WHERE p.currency_code = s.currency_code AND p.time = s.time
      AND p.currency_code = ANY($1::text[]) AND p.time >= $2 AND p.time <= $3)
  RETURNING currency_code, time`;

/** The staged rows, each checked as it is inserted. */
const INSERT_EACH_CHECKED = `
  INSERT INTO price_observations (${COLUMNS})
  SELECT ${COLUMNS} FROM ${STAGE_TABLE}
  ON CONFLICT (currency_code, time) DO NOTHING
  RETURNING currency_code, time`;
