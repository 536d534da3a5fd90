import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { sql } from 'slonik';
import { z } from 'zod';
import { refreshRollups } from '../../src/data/history/refresh.ts';
import { markTouchedRanges } from '../../src/data/prices/invalidations.ts';
import { startWorkerRunner } from '../../src/worker/start.ts';
import { createTaskList, crontab } from '../../workers/index.ts';
import { randomCandles } from '../support/candles.ts';
import { insertCandles } from '../support/prices.ts';
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';
import { until } from '../support/wait.ts';

// The Apache edition's refresh: watermarks, catch-up in steps, exact recomputation of marked
// ranges, idempotence and two workers at once. Each level is compared with the same level built
// from scratch out of the raw rows.

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const level = z.object({
  currency_code: z.string(),
  bucket: z.date(),
  open: z.number(),
  high: z.number(),
  low: z.number(),
  close: z.number(),
  volume: z.number(),
  count: z.number(),
  first_time: z.date(),
  last_time: z.date(),
});
const watermarkRow = z.object({ level: z.string(), watermark: z.date().nullable() });

let runtime: TestRuntime;
const now = Date.now();
const start = now - 4 * DAY;

beforeAll(async () => {
  runtime = await createTestRuntime();
  await insertCandles(runtime.pool, randomCandles(11, ['BTC', 'ETH'], start, now - 5 * 60_000));
});

afterAll(async () => {
  await runtime.dispose();
});

const contents = (relation: string) =>
  runtime.pool.any(sql.type(level)`
    SELECT * FROM ${sql.identifier([relation])} ORDER BY currency_code, bucket
  `);

const watermarks = async () =>
  Object.fromEntries(
    (
      await runtime.pool.any(sql.type(watermarkRow)`SELECT level, watermark FROM rollup_watermarks`)
    ).map((row) => [row.level, row.watermark?.getTime() ?? null]),
  );

/** A level recomputed from the raw rows up to its watermark, as the refresh should have it. */
async function fromScratch(seconds: number, before: number, phaseSeconds = 0) {
  return runtime.pool.any(sql.type(level)`
    SELECT currency_code,
           time_bucket(make_interval(secs => ${seconds}::float8), time,
                       "offset" => make_interval(secs => ${phaseSeconds}::float8)) AS bucket,
           first(open, time) AS open, max(high) AS high, min(low) AS low, last(close, time) AS close,
           sum(volume) AS volume, count(*)::int AS count, min(time) AS first_time, max(time) AS last_time
    FROM price_observations
    WHERE time < ${new Date(before).toISOString()}::timestamptz
    GROUP BY 1, 2 ORDER BY 1, 2
  `);
}

async function expectLevelsExact() {
  const marks = await watermarks();
  expect(await contents('candles_5m')).toEqual(await fromScratch(300, marks['5m']!));
  expect(await contents('candles_15m')).toEqual(await fromScratch(900, marks['15m']!));
  expect(await contents('candles_1h')).toEqual(await fromScratch(3600, marks['1h']!));
  expect(await contents('candles_1d')).toEqual(await fromScratch(86_400, marks['1d']!));
  expect(await contents('candles_1h_at15')).toEqual(
    await fromScratch(3600, marks['1h_at15']!, 900),
  );
  expect(await contents('candles_1h_at30')).toEqual(
    await fromScratch(3600, marks['1h_at30']!, 1800),
  );
}

describe('refresh_rollups on rollup tables', () => {
  test('catches up in bounded steps and stops short of the settle time', async () => {
    const result = await refreshRollups(runtime.pool, {
      settleSeconds: 3 * 3600,
      maxStepSeconds: DAY / 1000,
    });
    expect(result).toMatchObject({ mode: 'tables', caughtUp: true, skipped: false });
    expect(result.steps).toBeGreaterThanOrEqual(4);
    const marks = await watermarks();
    // The refresh read the clock between the test's start and now: a busy machine may cross a minute.
    const FIVE = 5 * 60_000;
    const settleLimit = Math.floor((now - 3 * HOUR) / FIVE) * FIVE;
    expect(marks['5m']).toBeLessThanOrEqual(Math.floor((Date.now() - 3 * HOUR) / FIVE) * FIVE);
    expect(marks['5m']).toBeGreaterThan(settleLimit - 2 * FIVE);
    expect(marks['15m']).toBe(Math.floor(marks['5m']! / (3 * FIVE)) * 3 * FIVE);
    expect(marks['1h']).toBe(Math.floor(marks['15m']! / HOUR) * HOUR);
    expect(marks['1d']).toBe(Math.floor(marks['1h']! / DAY) * DAY);
    // The offset hours end at the last :15 or :30 past an hour that candles_15m covers.
    const QUARTER = 3 * FIVE;
    expect(marks['1h_at15']).toBe(Math.floor((marks['15m']! - QUARTER) / HOUR) * HOUR + QUARTER);
    expect(marks['1h_at30']).toBe(
      Math.floor((marks['15m']! - 2 * QUARTER) / HOUR) * HOUR + 2 * QUARTER,
    );
    await expectLevelsExact();
  });

  test('is idempotent: running again changes nothing but moves with time', async () => {
    const before = await contents('candles_1h');
    await refreshRollups(runtime.pool, { settleSeconds: 3 * 3600 });
    expect(await contents('candles_1h')).toEqual(before);
    await refreshRollups(runtime.pool, { settleSeconds: 0 });
    await expectLevelsExact();
  });

  test('recomputes exactly the marked ranges, then deletes the marks', async () => {
    const from = start + DAY + 3 * HOUR;
    const backfill = randomCandles(12, ['BTC', 'SOL'], from, from + 2 * HOUR).map((c) => ({
      ...c,
      time: new Date(c.time.getTime() + 3),
    }));
    await runtime.pool.transaction(async (tx) => {
      await insertCandles(tx, backfill, 'backfill');
      await markTouchedRanges(tx, [
        { code: 'BTC', from: new Date(from), to: new Date(from + 2 * HOUR) },
        { code: 'SOL', from: new Date(from), to: new Date(from + 2 * HOUR) },
      ]);
    });
    const result = await refreshRollups(runtime.pool, { settleSeconds: 0 });
    expect(result.invalidationsConsumed).toBe(2);
    expect(
      await runtime.pool.oneFirst(
        sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM price_invalidations`,
      ),
    ).toBe(0);
    await expectLevelsExact();
  });

  test('two workers at once: one refreshes, the other skips, the result is exact', async () => {
    await runtime.pool.query(sql.unsafe`UPDATE rollup_watermarks SET watermark = NULL`);
    await runtime.pool.query(
      sql.unsafe`TRUNCATE candles_5m, candles_15m, candles_1h, candles_1d, candles_1h_at15, candles_1h_at30`,
    );
    const results = await Promise.all([
      refreshRollups(runtime.pool, { settleSeconds: 0, maxStepSeconds: DAY / 1000 }),
      refreshRollups(runtime.pool, { settleSeconds: 0, maxStepSeconds: DAY / 1000 }),
    ]);
    expect(results.some((r) => r.caughtUp)).toBe(true);
    // Whoever lost the lock returned without touching anything; finish in case it was cut short.
    await refreshRollups(runtime.pool, { settleSeconds: 0 });
    await expectLevelsExact();
  });

  test('the worker runs the task from its task list and crontab', async () => {
    expect(crontab.some((line) => / refresh_rollups /.test(line))).toBe(true);
    await runtime.pool.query(sql.unsafe`UPDATE rollup_watermarks SET watermark = NULL`);
    await runtime.pool.query(
      sql.unsafe`TRUNCATE candles_5m, candles_15m, candles_1h, candles_1d, candles_1h_at15, candles_1h_at30`,
    );
    const runner = await startWorkerRunner(runtime, {
      taskList: createTaskList(runtime),
      concurrency: 1,
    });
    try {
      await runner.addJob('refresh_rollups', {});
      await until(async () => (await watermarks())['1d'] !== null, 60_000, 'the daily rollup');
    } finally {
      await runner.stop();
    }
    const marks = await watermarks();
    expect(marks['1d']).not.toBeNull();
    await expectLevelsExact();
  });
});
