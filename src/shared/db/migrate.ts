import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
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
 * waits for the first and then finds nothing left to do. Runs on `connection` when given (a
 * short command that goes on using it saves a connection before its real work), which it leaves
 * open; otherwise on a connection of its own.
 */
export async function migrate(
  url: string,
  logger?: Logger | (() => Promise<Logger>),
  connection?: pg.Client,
): Promise<MigrationResult> {
  const client = connection ?? new pg.Client({ connectionString: url, options: SESSION_OPTIONS });
  if (!connection) await client.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    if (await upToDate(client)) return { applied: [] };
    // Loaded only when there is something to do: they are most of a short command's start-up.
    const [{ runner }, worker] = await Promise.all([
      import('node-pg-migrate'),
      import('graphile-worker'),
    ]);
    // A logger given as a function is made only now, for the same reason.
    const log = typeof logger === 'function' ? await logger() : logger;
    const ran = await runner({
      dbClient: client,
      dir: MIGRATIONS_DIR,
      migrationsTable: MIGRATIONS_TABLE,
      direction: 'up',
      count: Infinity,
      singleTransaction: false,
      checkOrder: true,
      noLock: true,
      logger: migrationLogger(log),
    });
    // The job queue's own schema, so jobs can be enqueued before any worker has started.
    const quiet = new worker.Logger(() => () => {});
    await worker.runMigrations({ connectionString: url, logger: quiet });
    await client.query(
      `INSERT INTO schema_components (name, version) VALUES ('graphile-worker', $1)
       ON CONFLICT (name) DO UPDATE SET version = EXCLUDED.version`,
      [installedWorkerVersion()],
    );
    return { applied: ran.map((m) => m.name) };
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => {});
    if (!connection) await client.end();
  }
}

/**
 * Whether a run would do nothing: exactly the files of sql/ are applied, and this version of
 * graphile-worker installed the job queue's schema (sql/0250_schema_components.sql).
 */
async function upToDate(client: pg.Client): Promise<boolean> {
  const ready = await client.query<{ ready: boolean }>(
    `SELECT to_regclass('schema_components') IS NOT NULL AS ready`,
  );
  if (!ready.rows[0]?.ready) return false;
  const { rows } = await client.query<{ applied: string[] | null; worker: string | null }>(
    `SELECT (SELECT array_agg(name) FROM ${MIGRATIONS_TABLE}) AS applied,
            (SELECT version FROM schema_components WHERE name = 'graphile-worker') AS worker`,
  );
  const applied = new Set(rows[0]?.applied ?? []);
  const files = migrationNames();
  return (
    rows[0]?.worker === installedWorkerVersion() &&
    applied.size === files.length &&
    files.every((name) => applied.has(name))
  );
}

/** The version of graphile-worker installed here (its package exports no package.json). */
function installedWorkerVersion(): string {
  const entry = createRequire(import.meta.url).resolve('graphile-worker');
  const manifest = JSON.parse(readFileSync(join(dirname(entry), '..', 'package.json'), 'utf8')) as {
    version: string;
  };
  return manifest.version;
}

function migrationLogger(logger?: Logger) {
  return {
    debug: () => {},
    info: (msg: string) => logger?.debug({ migration: msg.trim() }, 'migration'),
    warn: (msg: string) => logger?.warn(msg),
    error: (msg: string) => logger?.error(msg),
  };
}
