import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { Logger as WorkerLogger, runMigrations as runWorkerMigrations } from 'graphile-worker';
import { runner } from 'node-pg-migrate';
import type { Logger } from '../logger.ts';
import { SESSION_OPTIONS } from './sessionSettings.ts';

export const MIGRATIONS_DIR = fileURLToPath(new URL('../../../sql', import.meta.url));
export const MIGRATIONS_TABLE = 'schema_migrations';
// Any fixed key works; it only has to be the same for every process of the platform.
const MIGRATION_LOCK_KEY = 727_100_001;

/** Migration names (file names without .sql), in the order they apply. */
export function migrationNames(): string[] {
  return readdirSync(MIGRATIONS_DIR)
    .filter((file) => /^\d+_.+\.sql$/.test(file))
    .sort()
    .map((file) => file.replace(/\.sql$/, ''));
}

export interface MigrationResult {
  applied: string[];
}

/**
 * Applies the numbered .sql files in sql/ in order, each in its own transaction. A blocking
 * advisory lock serialises concurrent starters (several workers booting at once): the second
 * waits for the first and then finds nothing left to do.
 */
export async function migrate(url: string, logger?: Logger): Promise<MigrationResult> {
  const client = new pg.Client({ connectionString: url, options: SESSION_OPTIONS });
  await client.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    const ran = await runner({
      dbClient: client,
      dir: MIGRATIONS_DIR,
      migrationsTable: MIGRATIONS_TABLE,
      direction: 'up',
      count: Infinity,
      singleTransaction: false,
      checkOrder: true,
      noLock: true,
      logger: migrationLogger(logger),
    });
    // The job queue's own schema, so jobs can be enqueued before any worker has started.
    await runWorkerMigrations({ connectionString: url, logger: quietWorkerLogger });
    return { applied: ran.map((m) => m.name) };
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => {});
    await client.end();
  }
}

const quietWorkerLogger = new WorkerLogger(() => () => {});

function migrationLogger(logger?: Logger) {
  return {
    debug: () => {},
    info: (msg: string) => logger?.debug({ migration: msg.trim() }, 'migration'),
    warn: (msg: string) => logger?.warn(msg),
    error: (msg: string) => logger?.error(msg),
  };
}
