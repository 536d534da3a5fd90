import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { join } from 'node:path';
import pg from 'pg';
import { sql } from 'slonik';
import { z } from 'zod';
import { generateCurrencies } from '../../src/data/currencies/generator.ts';
import { planFile } from '../../src/data/ingest/files.ts';
import {
  enqueueFileJobs,
  INGEST_FILE_TASK,
  pendingIngestJobs,
} from '../../src/data/ingest/jobs.ts';
import { tempDir } from '../ingest/fixtures.ts';
import { PLATFORM_BIN } from '../support/cli.ts';
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';
import { until } from './wait.ts';

// A worker PROCESS killed with SIGKILL in the middle of a backfill job, then a new worker process
// started as an operator would: the new one releases the dead worker's job lock by itself
// (src/worker/presence.ts; graphile-worker alone would keep it for 4 hours) and every row ends up
// stored exactly once. test/ingest/worker.test.ts covers the same kill with a manual unlock.

let runtime: TestRuntime;
let files: Awaited<ReturnType<typeof tempDir>>;
const children: ChildProcess[] = [];

beforeAll(async () => {
  runtime = await createTestRuntime();
  await generateCurrencies({ pool: runtime.pool, logger: runtime.logger, loadFromExchange: false });
  files = await tempDir();
});

afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  await files.remove();
  await runtime.dispose();
});

function startWorkerProcess(): { child: ChildProcess; exited: Promise<unknown> } {
  const child = spawn(process.execPath, [PLATFORM_BIN, 'start', '--role', 'worker'], {
    env: {
      ...process.env,
      DATABASE_URL: runtime.config.DATABASE_URL,
      LOG_LEVEL: 'silent',
      PLATFORM_LOAD_CURRENCIES: 'false',
    },
    stdio: 'ignore',
  });
  children.push(child);
  return { child, exited: once(child, 'exit') };
}

async function bigCsv(name: string, code: string, rows: number): Promise<string> {
  const path = join(files.dir, name);
  const out = createWriteStream(path);
  out.write('time,code,open,high,low,close,volume\n');
  const start = Date.UTC(2012, 0, 1);
  let chunk = '';
  for (let i = 0; i < rows; i++) {
    const p = (50 + (i % 700) / 100).toFixed(2);
    chunk += `${new Date(start + i * 60_000).toISOString()},${code},${p},${p},${p},${p},1\n`;
    if (chunk.length > 1 << 20) {
      if (!out.write(chunk)) await once(out, 'drain');
      chunk = '';
    }
  }
  out.end(chunk);
  await once(out, 'finish');
  return path;
}

const loaded = (code: string) =>
  runtime.pool.one(sql.type(z.object({ n: z.number(), distinct_times: z.number() }))`
    SELECT count(*)::int AS n, count(DISTINCT time)::int AS distinct_times
    FROM price_observations WHERE currency_code = ${code} AND time < '2024-01-01'`);

test('a worker killed mid-backfill: a restarted worker releases the job and loads every row once', async () => {
  const rows = 300_000;
  const plan = await planFile(await bigCsv('kill.csv', 'ETH', rows));
  await enqueueFileJobs(runtime.pool, [plan], {});

  // The unit's completion record is held in an open transaction, so the import streams its rows
  // but cannot commit: the kill always lands mid-import, however fast the machine.
  const blocker = new pg.Client({ connectionString: runtime.config.DATABASE_URL });
  await blocker.connect();
  await blocker.query('BEGIN');
  await blocker.query(
    `INSERT INTO ingest_units (unit_key, kind, source, label, rows_read, rows_inserted, rows_duplicate, rows_rejected, load_path)
     VALUES ($1, 'file', 'test', 'blocker', 0, 0, 0, 0, 'direct')`,
    [plan.key],
  );
  const first = startWorkerProcess();
  try {
    await until(
      () =>
        runtime.pool.exists(sql.unsafe`
          SELECT 1 FROM pg_stat_activity
          WHERE datname = current_database() AND application_name = 'platform-ingest'
            AND ((query LIKE 'COPY%' AND state = 'active' AND now() - query_start > interval '300 ms')
                 OR wait_event_type = 'Lock')`),
      60_000,
      'the worker to be mid-import',
    );
  } finally {
    first.child.kill('SIGKILL');
    await first.exited;
    await blocker.query('ROLLBACK');
    await blocker.end();
  }
  // The job stays locked by the dead worker.
  const locked = await runtime.pool.oneFirst(sql.type(
    z.object({ locked_by: z.string().nullable() }),
  )`
    SELECT locked_by FROM graphile_worker.jobs WHERE key = ${`${INGEST_FILE_TASK}:${plan.key}`}`);
  expect(locked).not.toBeNull();
  expect((await loaded('ETH')).n).toBe(0);

  // A new worker process, nothing done by hand: it releases the lock and does the job.
  const second = startWorkerProcess();
  await until(async () => (await pendingIngestJobs(runtime.pool)) === 0, 120_000, 'the restart');
  second.child.kill('SIGTERM');
  await second.exited;

  expect(await loaded('ETH')).toEqual({ n: rows, distinct_times: rows });
  const record = await runtime.pool.one(
    sql.type(
      z.object({ rows_read: z.number(), rows_inserted: z.number() }),
    )`SELECT rows_read, rows_inserted FROM ingest_units WHERE unit_key = ${plan.key}`,
  );
  expect(record).toEqual({ rows_read: rows, rows_inserted: rows });
}, 240_000);
