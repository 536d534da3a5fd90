import type { Command } from 'commander';
import { sql } from 'slonik';
import { z } from 'zod';
import { pendingMigrations } from '../../shared/db/migrationState.ts';
import { createDatabasePool } from '../../shared/db/pool.ts';
import { readTimescaleState } from '../../shared/db/timescale.ts';
import { redactDsn } from '../../shared/logger.ts';
import { serverExtensionState } from '../../shared/provision.ts';
import { workerCheck } from '../../worker/status.ts';
import { configFromCommand, printJson } from '../context.ts';

export interface Check {
  name: string;
  ok: boolean;
  detail: string;
  fix?: string;
}

export type DoctorCheck = (ctx: DoctorContext) => Promise<Check[]>;
export interface DoctorContext {
  pool: Awaited<ReturnType<typeof createDatabasePool>>;
}

/** Further checks registered by other modules (rollups, worker, feeds). */
export const EXTRA_CHECKS: DoctorCheck[] = [workerCheck];

const freshnessRow = z.object({ newest: z.date().nullable(), currencies: z.number() });

async function coreChecks(url: string): Promise<{ checks: Check[]; pool?: DoctorContext['pool'] }> {
  const checks: Check[] = [];
  try {
    const server = await serverExtensionState(url);
    checks.push({ name: 'database', ok: true, detail: `reachable at ${redactDsn(url)}` });
    checks.push({
      name: 'timescaledb',
      ok: server.available && server.preloaded,
      detail: server.available
        ? server.preloaded
          ? 'installed and preloaded'
          : 'installed but not in shared_preload_libraries'
        : 'not installed on the server',
      fix: 'run `npm run db:provision` (root on Debian) or use `docker compose up`',
    });
  } catch (error) {
    checks.push({
      name: 'database',
      ok: false,
      detail: `cannot connect to ${redactDsn(url)}: ${(error as Error).message}`,
      fix: 'start PostgreSQL or set DATABASE_URL',
    });
    return { checks };
  }
  const pool = await createDatabasePool(url, { maxPoolSize: 2 });
  try {
    const ts = await readTimescaleState(pool);
    checks.push({
      name: 'edition',
      ok: ts.edition !== 'none',
      detail:
        ts.edition === 'none'
          ? 'extension not created in this database'
          : `TimescaleDB ${ts.installedVersion} (${ts.edition} edition, license ${ts.license})`,
      fix: 'run `platform migrate`',
    });
    const pending = await pendingMigrations(pool);
    checks.push({
      name: 'migrations',
      ok: pending.length === 0,
      detail: pending.length ? `pending: ${pending.join(', ')}` : 'all applied',
      fix: 'run `platform migrate`',
    });
    if (pending.length === 0) {
      const fresh = await pool.one(sql.type(freshnessRow)`
        SELECT max(observed_at) AS newest, count(*)::int AS currencies FROM currency_snapshots
      `);
      const ageSeconds = fresh.newest ? (Date.now() - fresh.newest.getTime()) / 1000 : null;
      checks.push({
        name: 'feed',
        ok: ageSeconds !== null && ageSeconds < 120,
        detail:
          ageSeconds === null
            ? 'no prices harvested yet'
            : `${fresh.currencies} currencies, newest price ${Math.round(ageSeconds)} s old`,
        fix: 'start the worker (`platform start --role worker`) so the harvester runs',
      });
    }
    return { checks, pool };
  } catch (error) {
    await pool.end();
    throw error;
  }
}

export function registerDoctorCommand(program: Command) {
  program
    .command('doctor')
    .description('Check database, extension, edition, migrations, worker and feed; say what to fix')
    .option('--json', 'print the checks as JSON')
    .action(async (options: { json?: boolean }, command: Command) => {
      const config = configFromCommand(command);
      const { checks, pool } = await coreChecks(config.DATABASE_URL);
      if (pool) {
        try {
          for (const extra of EXTRA_CHECKS) checks.push(...(await extra({ pool })));
        } finally {
          await pool.end();
        }
      }
      const healthy = checks.every((c) => c.ok);
      if (options.json) {
        printJson({ healthy, checks });
      } else {
        for (const c of checks) {
          process.stdout.write(`${c.ok ? 'ok  ' : 'FAIL'}  ${c.name.padEnd(12)} ${c.detail}\n`);
          if (!c.ok && c.fix) process.stdout.write(`      ${''.padEnd(12)} fix: ${c.fix}\n`);
        }
      }
      process.exitCode = healthy ? 0 : 1;
    });
}
