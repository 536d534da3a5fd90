import type { Command } from 'commander';
import pg from 'pg';
import { sql } from 'slonik';
import { z } from 'zod';
import { configSchema, type Config } from '../../shared/config.ts';
import type { Check, DoctorCheck, DoctorContext } from '../../shared/diagnostics.ts';
import { pendingMigrations } from '../../shared/db/migrationState.ts';
import { createDatabasePool } from '../../shared/db/pool.ts';
import { checkReplicas } from '../../shared/db/replicaCheck.ts';
import { readTimescaleState } from '../../shared/db/timescale.ts';
import { redactDsn } from '../../shared/logger.ts';
import { printable } from '../../shared/printable.ts';
import { serverExtensionState } from '../../shared/provision.ts';
import { checkRollups } from '../../data/history/doctorChecks.ts';
import { checkGaps } from '../../data/ingest/heal/doctorCheck.ts';
import { checkSimulatedHistory } from '../../data/ingest/simulated/doctorCheck.ts';
import { checkJobQueue, checkWorkers } from '../../worker/diagnostics.ts';
import { workerCheck } from '../../worker/status.ts';
import { configFromCommand, printJson } from '../context.ts';
import { EXIT } from '../exitCodes.ts';

// `platform doctor`, loaded only when the command runs (keeps the CLI's start-up light).

/**
 * The checks modules contribute, run in this order once the database is reachable and migrated.
 * A module adds its own here (rollup mode and lag: `checkRollups` from the rollup module).
 * `workers` counts live worker processes by their heartbeats; `worker` checks that the harvest
 * ticker has exactly one leader among the connected workers.
 */
export const EXTRA_CHECKS: DoctorCheck[] = [
  checkReplicas,
  checkWorkers,
  workerCheck,
  checkJobQueue,
  checkFeed,
  checkRollups,
  checkGaps,
  checkSimulatedHistory,
];

/** PostgreSQL's error code for a database that does not exist. */
const INVALID_CATALOG_NAME = '3D000';

/** The server answers in its `postgres` database; the platform's own may not exist yet. */
async function platformDatabaseCheck(url: string): Promise<Check> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
    return { name: 'database', ok: true, detail: `reachable at ${redactDsn(url)}` };
  } catch (error) {
    const missing = (error as { code?: string }).code === INVALID_CATALOG_NAME;
    return {
      name: 'database',
      ok: false,
      detail: `server reachable, but ${redactDsn(url)}: ${(error as Error).message}`,
      fix: missing
        ? 'run `platform migrate` (or `platform start`): it creates the database when the role may'
        : 'check the user, password and database name in DATABASE_URL',
    };
  } finally {
    await client.end().catch(() => {});
  }
}

async function serverChecks(url: string): Promise<Check[]> {
  try {
    const server = await serverExtensionState(url);
    return [
      await platformDatabaseCheck(url),
      {
        name: 'timescaledb',
        ok: server.available && server.preloaded,
        detail: server.available
          ? server.preloaded
            ? 'installed and preloaded'
            : 'installed but not in shared_preload_libraries'
          : 'not installed on the server',
        fix: 'run `npm run db:provision` (root on Debian) or use `docker compose up`',
      },
    ];
  } catch (error) {
    return [
      {
        name: 'database',
        ok: false,
        detail: `cannot connect to ${redactDsn(url)}: ${(error as Error).message}`,
        fix: 'start PostgreSQL or set DATABASE_URL',
      },
    ];
  }
}

async function schemaChecks({ pool }: DoctorContext): Promise<Check[]> {
  const ts = await readTimescaleState(pool);
  const pending = await pendingMigrations(pool);
  return [
    {
      name: 'edition',
      ok: ts.edition !== 'none',
      detail:
        ts.edition === 'none'
          ? 'extension not created in this database'
          : `TimescaleDB ${ts.installedVersion} (${ts.edition} edition, license ${ts.license})`,
      fix: 'run `platform migrate`',
    },
    {
      name: 'migrations',
      ok: pending.length === 0,
      detail: pending.length ? `pending: ${pending.join(', ')}` : 'all applied',
      fix: 'run `platform migrate` (or restart a `platform start`, which migrates)',
    },
  ];
}

const freshnessRow = z.object({
  newest: z.date().nullable(),
  currencies: z.number(),
  fresh: z.number(),
});

/** How old a newest price may be before the feed counts as stale. */
export function feedStaleAfterSeconds(config: Config): number {
  return Math.max(120, config.HARVEST_INTERVAL_SECONDS * 10);
}

async function checkFeed({ pool, config }: DoctorContext): Promise<Check[]> {
  const staleAfter = feedStaleAfterSeconds(config);
  const feed = await pool.one(sql.type(freshnessRow)`
    SELECT max(observed_at) AS newest, count(*)::int AS currencies,
           count(*) FILTER (WHERE observed_at > now() - make_interval(secs => ${staleAfter}))::int AS fresh
    FROM currency_snapshots
  `);
  const ageSeconds = feed.newest ? (Date.now() - feed.newest.getTime()) / 1000 : null;
  return [
    {
      name: 'feed',
      ok: ageSeconds !== null && ageSeconds < staleAfter,
      detail:
        ageSeconds === null
          ? 'no prices harvested yet'
          : `newest price ${Math.round(ageSeconds)} s old; ${feed.fresh} of ${feed.currencies} ` +
            `currencies priced in the last ${staleAfter} s`,
      fix:
        'start a worker (`platform start --role worker`) so the harvester runs; if one runs, ' +
        'its log and harvest_source_fetch_errors_total say why the sources fail',
    },
  ];
}

/** Runs every check; module checks run only once the schema they read is in place. */
export async function runDoctor(config: Config): Promise<Check[]> {
  const checks = await serverChecks(config.DATABASE_URL);
  if (!checks.find((c) => c.name === 'database')?.ok) return checks;
  const pool = await createDatabasePool(config.DATABASE_URL, { maxPoolSize: 2 });
  try {
    const ctx: DoctorContext = { pool, config };
    const schema = await schemaChecks(ctx);
    checks.push(...schema);
    if (!schema.every((c) => c.ok)) return checks;
    for (const extra of EXTRA_CHECKS) checks.push(...(await runCheck(extra, ctx)));
    return checks;
  } finally {
    await pool.end();
  }
}

/** A check that throws is a failed check with its message, not a crashed doctor. */
async function runCheck(check: DoctorCheck, ctx: DoctorContext): Promise<Check[]> {
  try {
    return await check(ctx);
  } catch (error) {
    const name = check.name.replace(/^check|Check$/g, '').toLowerCase() || 'check';
    return [{ name, ok: false, detail: `check failed: ${(error as Error).message}` }];
  }
}

function printChecks(checks: Check[]) {
  for (const c of checks) {
    // Details quote what the checks read (error messages of the server, job errors): escaped.
    process.stdout.write(
      `${c.ok ? 'ok  ' : 'FAIL'}  ${c.name.padEnd(12)} ${printable(c.detail)}\n`,
    );
    if (!c.ok && c.fix) process.stdout.write(`      ${''.padEnd(12)} fix: ${c.fix}\n`);
  }
  const failed = checks.filter((c) => !c.ok).map((c) => c.name);
  process.stdout.write(
    failed.length
      ? `\n${failed.length} problem(s): ${failed.join(', ')}\n`
      : `\nhealthy: all ${checks.length} checks passed\n`,
  );
}

/** `platform doctor [--json]`: runs the checks, prints them, exits 1 when any failed. */
export async function runDoctorCommand(options: { json?: boolean }, command: Command) {
  const config = configFromCommand(command, configSchema);
  const checks = await runDoctor(config);
  const healthy = checks.every((c) => c.ok);
  if (options.json) printJson({ healthy, checks });
  else printChecks(checks);
  process.exitCode = healthy ? EXIT.ok : EXIT.failure;
}
