import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { join } from 'node:path';
import { makeWorkerUtils } from 'graphile-worker';
import { sql } from 'slonik';
import { z } from 'zod';
import { generateCurrencies } from '../../src/data/currencies/generator.ts';
import { planFile } from '../../src/data/ingest/files.ts';
import {
  enqueueFileJobs,
  INGEST_FILE_TASK,
  pendingIngestJobs,
} from '../../src/data/ingest/jobs.ts';
import { startWorkerRunner } from '../../src/worker/start.ts';
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';
import { until } from '../support/wait.ts';
import { writeMinutePricesCsv } from '../support/prices.ts';
import { killWorkerMidImport } from '../support/workerProcess.ts';
import { tempDir } from './fixtures.ts';

let runtime: TestRuntime;
let files: Awaited<ReturnType<typeof tempDir>>;

beforeAll(async () => {
  runtime = await createTestRuntime();
  await generateCurrencies({ pool: runtime.pool, logger: runtime.logger, loadFromExchange: false });
  files = await tempDir();
});

afterAll(async () => {
  await files.remove();
  await runtime.dispose();
});

/** Rows loaded from the test files (all before 2024; a worker's live harvest writes "now"). */
const countOf = (code: string) =>
  runtime.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int AS n FROM price_observations
    WHERE currency_code = ${code} AND time < '2024-01-01'`);

describe('--enqueue: files as jobs for the worker', () => {
  test('two workers share the jobs and load each file exactly once', async () => {
    const paths = [];
    for (const [i, code] of ['ADA', 'DOT', 'LTC', 'UNI'].entries()) {
      paths.push(
        await files.file(
          `part-${i}.csv`,
          `time,code,price\n2021-01-01T00:00:00Z,${code},1\n2021-01-01T00:01:00Z,${code},2\n`,
        ),
      );
    }
    const plans = await Promise.all(paths.map((p) => planFile(p)));
    expect(await enqueueFileJobs(runtime.pool, plans, {})).toBe(4);
    // Enqueuing the same files again while they wait does not add jobs (one key per file).
    await enqueueFileJobs(runtime.pool, plans, {});
    expect(await pendingIngestJobs(runtime.pool)).toBe(4);
    const workers = [await startWorkerRunner(runtime), await startWorkerRunner(runtime)];
    try {
      await until(async () => (await pendingIngestJobs(runtime.pool)) === 0, 30_000, 'the jobs');
    } finally {
      await Promise.all(workers.map((w) => w.stop()));
    }
    for (const code of ['ADA', 'DOT', 'LTC', 'UNI']) expect(await countOf(code)).toBe(2);
    const units = await runtime.pool.anyFirst(
      sql.type(
        z.object({ rows_inserted: z.number() }),
      )`SELECT rows_inserted FROM ingest_units ORDER BY label`,
    );
    expect(units).toEqual([2, 2, 2, 2]);
  });

  test('a worker killed mid-import leaves nothing behind; the rerun ends with the exact count', async () => {
    const rows = 600_000;
    const path = await writeMinutePricesCsv(join(files.dir, 'big.csv'), 'BTC', rows, {
      startMs: Date.UTC(2010, 0, 1),
      price: (i) => (100 + (i % 1000) / 100).toFixed(2),
    });
    const plan = await planFile(path);
    await enqueueFileJobs(runtime.pool, [plan], {});
    await killWorkerMidImport(runtime, plan.key);
    // The server rolls the dead session's transaction back: no row and no completion record.
    await until(
      async () =>
        !(await runtime.pool.exists(sql.unsafe`
      SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'platform-ingest'`)),
      20_000,
      'the killed session to end',
    );
    expect(await countOf('BTC')).toBe(0);
    expect(
      await runtime.pool.exists(sql.unsafe`SELECT 1 FROM ingest_units WHERE label = ${path}`),
    ).toBe(false);

    // graphile-worker keeps a job locked by a dead worker for 4 hours; release it as graphile's
    // own tests do (forceUnlockWorkers), then let a fresh worker run it again.
    const lockedBy = await runtime.pool.oneFirst(sql.type(z.object({ locked_by: z.string() }))`
      SELECT locked_by FROM graphile_worker.jobs WHERE task_identifier = ${INGEST_FILE_TASK}`);
    const utils = await makeWorkerUtils({ pgPool: runtime.pgPool });
    await utils.forceUnlockWorkers([lockedBy]);
    await utils.release();
    const worker = await startWorkerRunner(runtime);
    try {
      await until(async () => (await pendingIngestJobs(runtime.pool)) === 0, 90_000, 'the rerun');
    } finally {
      await worker.stop();
    }
    expect(await countOf('BTC')).toBe(rows);
    const record = await runtime.pool.one(sql.type(
      z.object({ rows_read: z.number(), rows_inserted: z.number() }),
    )`
      SELECT rows_read, rows_inserted FROM ingest_units WHERE label = ${path}`);
    expect(record).toEqual({ rows_read: rows, rows_inserted: rows });
  }, 180_000);
});
