import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { LEVEL_RELATIONS } from '../../src/data/history/levels.ts';

// The storage goal: everything derived from price_observations (every rollup level with
// its indexes; no history text is kept in the database) against the raw table, both with their
// indexes. The ratio does not depend on how many currencies or days were generated.

const sizeRow = z.object({ relation: z.string(), bytes: z.number() });

/** Bytes of the raw table and of each derived relation, and the derived total as a ratio. */
export async function measureStorage(pool: DatabasePool) {
  const rows = await pool.any(sql.type(sizeRow)`
    SELECT relation, (CASE WHEN h.hypertable_name IS NOT NULL
                           THEN hypertable_size(relation::regclass)
                           ELSE pg_total_relation_size(relation::regclass) END)::float8 AS bytes
    FROM unnest(${sql.array(['price_observations', ...LEVEL_RELATIONS], 'text')})
      AS relation
    LEFT JOIN timescaledb_information.hypertables h ON h.hypertable_name = relation
    WHERE to_regclass(relation) IS NOT NULL
  `);
  const raw = rows.find((row) => row.relation === 'price_observations')!.bytes;
  const derived = rows.filter((row) => row.relation !== 'price_observations');
  const total = derived.reduce((sum, row) => sum + row.bytes, 0);
  return { raw, derived, total, ratio: total / raw };
}

export function formatStorage(storage: Awaited<ReturnType<typeof measureStorage>>): string[] {
  const mb = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;
  const share = (bytes: number) => `${(bytes / storage.raw).toFixed(3)}×`;
  return [
    '| relation | size (with indexes) | × raw |',
    '|---|---:|---:|',
    `| price_observations (raw) | ${mb(storage.raw)} | 1× |`,
    ...storage.derived.map((row) => `| ${row.relation} | ${mb(row.bytes)} | ${share(row.bytes)} |`),
    `| **all derived data** | ${mb(storage.total)} | **${share(storage.total)}** |`,
  ];
}
