import { execFile } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { sql } from 'slonik';
import { z } from 'zod';
import { enqueueJob } from '../../src/worker/jobs.ts';
import { startWorkerPresence } from '../../src/worker/presence.ts';
import { startWorkerRunner } from '../../src/worker/start.ts';
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';
import { until } from '../support/wait.ts';

// The worker presence connection (src/worker/presence.ts) gets worker ids in bursts (graphile-worker
// creates its concurrency's workers at once) and sweeps beside them. pg warns once per process when
// a client is handed a query while it still executes one (an error from pg 9 on), so the path runs
// in a fresh process of its own, whose every 'warning' event is reported back: in jest's shared
// worker processes a warning emitted earlier by another file would hide this one.

const run = promisify(execFile);
let runtime: TestRuntime;

beforeAll(async () => {
  runtime = await createTestRuntime();
});

afterAll(async () => {
  await runtime.dispose();
});

const moduleUrl = (path: string) => pathToFileURL(new URL(path, import.meta.url).pathname).href;

const BURST_SCRIPT = `
const { startWorkerPresence, PRESENCE_LOCK_CLASS } = await import(${JSON.stringify(moduleUrl('../../src/worker/presence.ts'))});
const { createLogger } = await import(${JSON.stringify(moduleUrl('../../src/shared/logger.ts'))});
const { default: pg } = await import('pg');
const warnings = [];
process.on('warning', (w) => warnings.push(w.name + ': ' + w.message));
const connectionString = process.env.PRESENCE_DATABASE_URL;
const presence = await startWorkerPresence({ connectionString, logger: createLogger('silent') });
const workers = Array.from({ length: 24 }, (_, i) => ({ workerId: 'burst-' + i }));
const sweeps = [];
for (const worker of workers) {
  presence.events.emit('worker:create', { worker });
  sweeps.push(presence.sweep());
}
await Promise.all(sweeps);
const observer = new pg.Client({ connectionString });
await observer.connect();
const held = async () => (await observer.query(
  "SELECT count(*)::int AS n FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid " +
  "WHERE l.locktype = 'advisory' AND l.classid = $1 AND a.application_name = 'worker:presence' " +
  "AND a.datname = current_database()", [PRESENCE_LOCK_CLASS])).rows[0].n;
const heldAfterCreate = await held();
for (const worker of workers) {
  presence.events.emit('worker:release', { worker });
  sweeps.push(presence.sweep());
}
await Promise.all(sweeps);
const heldAfterRelease = await held();
await observer.end();
await presence.stop();
// A warning reaches its listeners on a later tick than the call that raised it.
await new Promise((resolve) => setImmediate(resolve));
process.stdout.write(JSON.stringify({ warnings, heldAfterCreate, heldAfterRelease }));
`;

test('a burst of worker ids and sweeps uses the presence connection one query at a time', async () => {
  const { stdout } = await run(process.execPath, ['--input-type=module', '--eval', BURST_SCRIPT], {
    // Nothing silences warnings in the child (jest's NODE_OPTIONS only hides experimental ones).
    env: { ...process.env, NODE_OPTIONS: '', PRESENCE_DATABASE_URL: runtime.database.url },
    timeout: 60_000,
  });
  const result = JSON.parse(stdout) as {
    warnings: string[];
    heldAfterCreate: number;
    heldAfterRelease: number;
  };
  expect(result.warnings).toEqual([]);
  // Serialised, not dropped: every id got its lock, and every release gave it back.
  expect(result.heldAfterCreate).toBe(24);
  expect(result.heldAfterRelease).toBe(0);
}, 90_000);

test('a job running past the sweep grace belongs to a live worker: no sweep releases it', async () => {
  let finish = () => {};
  const finished = new Promise<void>((resolve) => (finish = resolve));
  let runs = 0;
  const runner = await startWorkerRunner(runtime, {
    taskList: {
      long_job: async () => {
        runs++;
        await finished;
      },
    },
  });
  const other = await startWorkerPresence({
    connectionString: runtime.database.url,
    logger: runtime.logger,
  });
  try {
    await enqueueJob(runtime.pool, 'long_job', {});
    // Locked longer than the sweep's grace (5 s), as a long load is: fair game if nobody held it.
    await until(
      () =>
        runtime.pool.exists(sql.unsafe`
          SELECT 1 FROM graphile_worker.jobs
           WHERE task_identifier = 'long_job' AND locked_at < now() - interval '6 seconds'`),
      60_000,
      'the job to run for a while',
    );
    // Another process's sweep finds the lock of the pool that runs it held.
    expect(await other.sweep()).toEqual([]);
    finish();
    await until(
      async () =>
        !(await runtime.pool.exists(
          sql.unsafe`SELECT 1 FROM graphile_worker.jobs WHERE task_identifier = 'long_job'`,
        )),
      30_000,
      'the job to complete',
    );
    expect(runs).toBe(1);
  } finally {
    finish();
    await other.stop();
    await runner.stop();
  }
  const attempts = await runtime.pool.anyFirst(sql.type(z.object({ attempts: z.number() }))`
    SELECT attempts FROM graphile_worker.jobs WHERE task_identifier = 'long_job'`);
  expect(attempts).toEqual([]);
}, 90_000);
