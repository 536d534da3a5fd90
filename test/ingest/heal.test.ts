import { afterAll, beforeAll, beforeEach, describe, expect, test } from '@jest/globals';
import { sql } from 'slonik';
import { z } from 'zod';
import { generateCurrencies } from '../../src/data/currencies/generator.ts';
import { dedicatedConnection } from '../../src/data/ingest/connection.ts';
import { BinanceKlineClient } from '../../src/data/ingest/exchange/binanceKlines.ts';
import { checkGaps } from '../../src/data/ingest/heal/doctorCheck.ts';
import { healAll, healCurrency } from '../../src/data/ingest/heal/heal.ts';
import { metricsRegistry } from '../../src/shared/metrics.ts';
import { exposeOpenGaps } from '../../src/worker/operations.ts';
import { healGapsTask } from '../../workers/healGaps.ts';
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';
import { FakeBinance } from './fakeBinance.ts';
import { MINUTE } from './fixtures.ts';

const HOUR = 60 * MINUTE;
/** A fixed "now" so the windows do not move while the test runs. */
const NOW = Date.UTC(2024, 2, 1, 12, 0);

let runtime: TestRuntime;
let fake: FakeBinance;

beforeAll(async () => {
  runtime = await createTestRuntime();
  await generateCurrencies({ pool: runtime.pool, logger: runtime.logger, loadFromExchange: false });
  fake = await new FakeBinance().start();
}, 120_000);

afterAll(async () => {
  await fake.stop();
  await runtime.dispose();
});

beforeEach(() => {
  fake.requests.length = 0;
  fake.faults.length = 0;
  fake.until = Date.now();
});

const client = () =>
  new BinanceKlineClient({
    baseUrl: fake.url,
    timeoutMs: 5000,
    backoffMs: 10,
    sleep: async () => {},
  });

const heal = (code: string) =>
  healCurrency(dedicatedConnection(runtime.config.DATABASE_URL), [client()], code, {
    lookbackHours: 6,
    now: NOW,
  });

/** One observation a minute over [from, to) except the minutes of the outage [holeFrom, holeTo). */
async function observe(code: string, from: number, to: number, holeFrom: number, holeTo: number) {
  await runtime.pool.query(sql.unsafe`
    INSERT INTO price_observations (currency_code, time, open, high, low, close, volume, source)
    SELECT ${code}, m, 1, 1, 1, 1, 0, 'harvest'
      FROM generate_series(to_timestamp(${from / 1000}), to_timestamp(${to / 1000 - 60}),
                           interval '1 minute') AS m
     WHERE m < to_timestamp(${holeFrom / 1000}) OR m >= to_timestamp(${holeTo / 1000})`);
}

const rowsBySource = (code: string) =>
  runtime.pool.any(sql.type(z.object({ source: z.string(), n: z.number() }))`
    SELECT source, count(*)::int AS n FROM price_observations
     WHERE currency_code = ${code} GROUP BY source ORDER BY source`);

const knownGaps = (code: string) =>
  runtime.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int AS n FROM price_gaps WHERE currency_code = ${code}`);

describe('gap healing', () => {
  test('a pass with nothing to heal makes the exchange series exist at 0', async () => {
    const idle = await heal('XRP');
    expect(idle).toMatchObject({ missing: 0, filled: 0 });
    const filled = await metricsRegistry.getSingleMetric('heal_filled_candles_total')?.get();
    expect(filled?.values).toEqual([{ labels: { source: 'binance' }, value: 0 }]);
  });

  test('the holes of an outage are filled exactly, from the exchange, once', async () => {
    await observe('BTC', NOW - 4 * HOUR, NOW, NOW - 3 * HOUR, NOW - 3 * HOUR + 30 * MINUTE);
    const first = await heal('BTC');
    expect(first).toMatchObject({ missing: 30, filled: 30, knownGaps: 0, skipped: false });
    expect(fake.requests).toHaveLength(1);
    expect(Number(fake.requests[0]?.searchParams.get('startTime'))).toBe(NOW - 3 * HOUR);
    // Stored rows stay as they were; exactly the 30 minutes came from the exchange.
    expect(await rowsBySource('BTC')).toEqual([
      { source: 'binance', n: 30 },
      { source: 'harvest', n: 240 - 30 },
    ]);

    fake.requests.length = 0;
    const again = await heal('BTC');
    expect(again).toMatchObject({ missing: 0, filled: 0 });
    expect(fake.requests).toHaveLength(0);
  }, 60_000);

  test('minutes the exchange lacks become known gaps and are not asked for again', async () => {
    const holeFrom = NOW - 2 * HOUR;
    await observe('ETH', NOW - 3 * HOUR, NOW, holeFrom, holeFrom + 30 * MINUTE);
    fake.until = holeFrom + 9 * MINUTE; // the exchange has only the hole's first ten minutes
    fake.faults.push({ status: 429, retryAfter: 1 });
    const first = await heal('ETH');
    expect(first).toMatchObject({ missing: 30, filled: 10, knownGaps: 20 });
    expect(await knownGaps('ETH')).toBe(20);
    const doctorLines = await checkGaps({ pool: runtime.pool, config: runtime.config });
    const known = doctorLines.find((line) => line.name === 'known-gaps');
    expect(known).toMatchObject({ ok: true });
    expect(known?.detail).toMatch(/^20 known gap minute\(s\) in 1 currency/);

    fake.requests.length = 0;
    fake.until = Date.now();
    const again = await heal('ETH');
    expect(again).toMatchObject({ missing: 0, filled: 0, knownGaps: 0 });
    expect(fake.requests).toHaveLength(0);
  }, 60_000);

  test('concurrent passes over one currency load every minute once', async () => {
    await observe('SOL', NOW - 2 * HOUR, NOW, NOW - HOUR, NOW - HOUR + 45 * MINUTE);
    const results = await Promise.all([heal('SOL'), heal('SOL'), heal('SOL')]);
    expect(results.reduce((sum, r) => sum + r.filled, 0)).toBe(45);
    expect(await rowsBySource('SOL')).toEqual([
      { source: 'binance', n: 45 },
      { source: 'harvest', n: 120 - 45 },
    ]);
  }, 60_000);

  test('the worker job heals with the configured look-back, and does nothing at 0', async () => {
    const end = Math.floor(Date.now() / MINUTE) * MINUTE - MINUTE;
    await observe('XRP', end - 2 * HOUR, end, end - 90 * MINUTE, end - 70 * MINUTE);
    // Should the clock pass a minute before the job runs, that newest minute is not the exchange's.
    fake.until = end - MINUTE;
    const job = (hours: number) =>
      healGapsTask({
        ...runtime,
        config: { ...runtime.config, HEAL_LOOKBACK_HOURS: hours, BINANCE_API_URL: fake.url },
      })({}, {} as never);
    await job(0);
    expect(fake.requests).toHaveLength(0);
    await job(3);
    expect(await rowsBySource('XRP')).toEqual([
      { source: 'binance', n: 20 },
      { source: 'harvest', n: 120 - 20 },
    ]);
  }, 60_000);

  test('doctor counts the open minutes; a pass records what it left open, which the metric shows', async () => {
    // Only this test's currencies, so that the counts over every currency are theirs.
    await runtime.pool.query(
      sql.unsafe`TRUNCATE price_observations, price_gaps, heal_open_gaps, heal_totals`,
    );
    const end = Math.floor(Date.now() / MINUTE) * MINUTE;
    // Observed until half an hour from now, so that no minute opens at the end during the test.
    await observe('ADA', end - 2 * HOUR, end + 30 * MINUTE, end - 50 * MINUTE, end - 30 * MINUTE);
    await observe('LTC', end - 2 * HOUR, end + 30 * MINUTE, end - 90 * MINUTE, end - 85 * MINUTE);
    const config = { ...runtime.config, HEAL_LOOKBACK_HOURS: 3 };
    const doctor = async (name: string) =>
      (await checkGaps({ pool: runtime.pool, config })).find((line) => line.name === name)?.detail;
    const metric = async () =>
      (await metricsRegistry.getSingleMetric('heal_open_gap_candles')?.get())?.values[0]?.value;
    const stopMetric = exposeOpenGaps({ ...runtime, config });
    try {
      expect(await doctor('gaps')).toMatch(
        /^25 open gap minute\(s\) in 2 currencies in the last 3 h/,
      );
      expect(await doctor('healed')).toBe('no minute healed yet');
      expect(await metric()).toBe(0); // no pass has counted yet

      // ADA heals; every request for LTC fails, so its minutes stay open.
      fake.until = end + HOUR;
      const [ada] = await healAll(
        dedicatedConnection(runtime.config.DATABASE_URL),
        [client()],
        ['ADA'],
        {
          lookbackHours: 3,
        },
      );
      expect(ada).toMatchObject({ missing: 20, filled: 20 });
      fake.failAlwaysFrom = fake.requests.length + 1;
      const [ltc] = await healAll(
        dedicatedConnection(runtime.config.DATABASE_URL),
        [client()],
        ['LTC'],
        {
          lookbackHours: 3,
        },
      );
      expect(ltc).toMatchObject({ missing: 5, filled: 0, knownGaps: 0 });
      expect(ltc?.errors.length).toBeGreaterThan(0);

      expect(await doctor('gaps')).toMatch(/^5 open gap minute\(s\) in 1 currency in the last 3 h/);
      expect(await doctor('healed')).toBe('20 gap minute(s) healed (20 from binance)');
      expect(await metric()).toBe(5);
    } finally {
      fake.failAlwaysFrom = null;
      stopMetric();
    }
  }, 60_000);
});
