import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { sql } from 'slonik';
import { z } from 'zod';
import { generateCurrencies } from '../../src/data/currencies/generator.ts';
import { INGEST_APPLICATION_NAME } from '../../src/data/ingest/connection.ts';
import { PLATFORM_BIN } from '../support/cli.ts';
import { insertCandles } from '../support/prices.ts';
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';
import { eventually, valueOf } from '../support/wait.ts';
import { tempDir } from './fixtures.ts';

// A `platform backfill` killed with SIGKILL while its merge statement runs must not leave that
// statement running in the database (it held its locks and a core for a minute and more). The
// merge really waits in the database: a test transaction holds an uncommitted row the file also
// holds, as a concurrent writer would. The waiting write is the loader's direct COPY (rows
// outside the stored span or matched against the stored keys) or, when rows were staged, its
// INSERT from the staging table: the test takes either.

const MIN = 60_000;
const T0 = Date.UTC(2024, 4, 1);

describe('a backfill killed during its merge', () => {
  let runtime: TestRuntime;
  let files: Awaited<ReturnType<typeof tempDir>>;

  beforeAll(async () => {
    runtime = await createTestRuntime();
    await generateCurrencies({
      pool: runtime.pool,
      logger: runtime.logger,
      loadFromExchange: false,
    });
    files = await tempDir();
  }, 60_000);
  afterAll(async () => {
    await files?.remove();
    await runtime?.dispose();
  });

  test("every pool of the platform checks its client (graphile-worker's too)", async () => {
    const show = sql.type(z.object({ value: z.string() }))`
      SELECT current_setting('client_connection_check_interval') AS value`;
    expect(await runtime.pool.oneFirst(show)).toBe('2s');
    expect(await runtime.readPool.oneFirst(show)).toBe('2s');
    // The node-postgres pool that graphile-worker runs on, COPY and LISTEN use.
    const { rows } = await runtime.pgPool.query<{ value: string }>(show.sql);
    expect(rows[0]!.value).toBe('2s');
  });

  test('leaves no statement running 2 s after the kill', async () => {
    // A stored row at the file's first minute: the load cannot go straight in and merges.
    await insertCandles(runtime.pool, [{ code: 'BTC', time: new Date(T0), open: 1 }]);
    const lines = Array.from({ length: 100 }, (_, i) => {
      const time = new Date(T0 + i * MIN).toISOString();
      return `${time},BTC,${100 + i},${100 + i},${100 + i},${100 + i},1`;
    });
    const path = await files.file(
      'btc.csv',
      `time,code,open,high,low,close,volume\n${lines.join('\n')}\n`,
    );

    const writer = await runtime.pgPool.connect();
    let child: ReturnType<typeof spawn> | undefined;
    try {
      await writer.query('BEGIN');
      await writer.query(
        `INSERT INTO price_observations (currency_code, time, open, high, low, close, volume, source)
         VALUES ('BTC', $1, 2, 2, 2, 2, 0, 'test')`,
        [new Date(T0 + 50 * MIN)],
      );
      child = spawn(process.execPath, [PLATFORM_BIN, 'backfill', path], {
        env: { ...process.env, DATABASE_URL: runtime.config.DATABASE_URL, LOG_LEVEL: 'warn' },
        stdio: 'ignore',
      });
      const exited = once(child, 'exit');
      const merging = await valueOf(
        () => mergeWaiting(runtime),
        60_000,
        "the backfill's merge statement waiting in the database",
      );
      child.kill('SIGKILL');
      await exited;
      const killed = Date.now();
      await eventually(
        async () => !(await stillThere(runtime, merging)),
        10_000,
        "the killed backfill's statement to end",
      );
      // client_connection_check_interval is 2 s; the rest is slack for a loaded machine.
      expect(Date.now() - killed).toBeLessThan(2_000 + 1_500);
    } finally {
      if (child?.exitCode === null) child.kill('SIGKILL');
      await writer.query('ROLLBACK').catch(() => {});
      writer.release();
    }
  }, 120_000);
});

/** The pid of the ingest session whose write waits on the test's uncommitted row, if any. */
async function mergeWaiting(runtime: TestRuntime): Promise<number | undefined> {
  const pid = await runtime.pool.maybeOneFirst(sql.type(z.object({ pid: z.number() }))`
    SELECT pid FROM pg_stat_activity
    WHERE datname = current_database() AND application_name = ${INGEST_APPLICATION_NAME}
      AND state = 'active' AND wait_event_type = 'Lock'
      AND (query ILIKE '%INSERT INTO price_observations%'
        OR query ILIKE '%COPY price_observations%FROM STDIN%')`);
  return pid ?? undefined;
}

/** Whether that session still runs a statement. */
async function stillThere(runtime: TestRuntime, pid: number): Promise<boolean> {
  const n = await runtime.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = ${pid} AND state = 'active'`);
  return n > 0;
}
