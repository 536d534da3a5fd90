import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';
import { migrationNames, MIGRATIONS_TABLE } from './migrate.ts';

/** Migrations shipped with this build that the database has not applied yet. */
export async function pendingMigrations(pool: DatabasePool): Promise<string[]> {
  const tableExists = await pool.oneFirst(
    sql.type(
      z.object({ exists: z.boolean() }),
    )`SELECT to_regclass(${MIGRATIONS_TABLE}) IS NOT NULL AS exists`,
  );
  if (!tableExists) return migrationNames();
  const applied = new Set(
    await pool.anyFirst(
      sql.type(
        z.object({ name: z.string() }),
      )`SELECT name FROM ${sql.identifier([MIGRATIONS_TABLE])}`,
    ),
  );
  return migrationNames().filter((name) => !applied.has(name));
}
