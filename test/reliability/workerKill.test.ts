import { afterAll, beforeAll, expect, test } from '@jest/globals';
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
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
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';
import { until } from '../support/wait.ts';
import { writeMinutePricesCsv } from '../support/prices.ts';
import { killWorkerMidImport, startWorkerProcess } from '../support/workerProcess.ts';

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

const loaded = (code: string) =>
  runtime.pool.one(sql.type(z.object({ n: z.number(), distinct_times: z.number() }))`
    SELECT count(*)::int AS n, count(DISTINCT time)::int AS distinct_times
    FROM price_observations WHERE currency_code = ${code} AND time < '2024-01-01'`);

test('a worker killed mid-backfill: a restarted worker releases the job and loads every row once', async () => {
  const rows = 300_000;
  const csv = await writeMinutePricesCsv(join(files.dir, 'kill.csv'), 'ETH', rows, {
    startMs: Date.UTC(2012, 0, 1),
    price: (i) => (50 + (i % 700) / 100).toFixed(2),
  });
  const plan = await planFile(csv);
  await enqueueFileJobs(runtime.pool, [plan], {});
  await killWorkerMidImport(runtime, plan.key);
  // The job stays locked by the dead worker.
  const locked = await runtime.pool.oneFirst(sql.type(
    z.object({ locked_by: z.string().nullable() }),
  )`
    SELECT locked_by FROM graphile_worker.jobs WHERE key = ${`${INGEST_FILE_TASK}:${plan.key}`}`);
  expect(locked).not.toBeNull();
  expect((await loaded('ETH')).n).toBe(0);

  // A new worker process, nothing done by hand: it releases the lock and does the job.
  const second = startWorkerProcess(runtime.config.DATABASE_URL);
  children.push(second.child);
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
