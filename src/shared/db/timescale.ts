import { z } from 'zod';
import { sql, type DatabasePool } from 'slonik';

// TimescaleDB comes in two editions: the Apache build (Debian's source package, some managed
// services) and Timescale's own (TSL: continuous aggregates, compression, policies). The platform
// runs on both and picks its rollup strategy from what it finds here.

export const timescaleStateSchema = z.object({
  installedVersion: z.string().nullable(),
  availableVersion: z.string().nullable(),
  license: z.string().nullable(),
  preloaded: z.boolean(),
});

export type TimescaleState = z.infer<typeof timescaleStateSchema> & {
  edition: 'timescale' | 'apache' | 'none';
};

export async function readTimescaleState(pool: DatabasePool): Promise<TimescaleState> {
  const row = await pool.one(sql.type(timescaleStateSchema)`
    SELECT
      (SELECT extversion FROM pg_extension WHERE extname = 'timescaledb') AS "installedVersion",
      (SELECT default_version FROM pg_available_extensions WHERE name = 'timescaledb') AS "availableVersion",
      current_setting('timescaledb.license', true) AS license,
      coalesce(current_setting('shared_preload_libraries', true), '') LIKE '%timescaledb%' AS preloaded
  `);
  const edition =
    row.installedVersion === null ? 'none' : row.license === 'timescale' ? 'timescale' : 'apache';
  return { ...row, edition };
}
