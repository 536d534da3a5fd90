import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { DAY_MS, DayStatsCache, readDayStats } from '../../src/data/history/dayStats.ts';
import { refreshRollups } from '../../src/data/history/refresh.ts';
import { markTouchedRanges } from '../../src/data/prices/invalidations.ts';
import { random } from '../support/candles.ts';
import { insertCandles, type Candle } from '../support/prices.ts';
import { createModeRuntime, MODES, type ModeRuntime } from '../support/rollupModes.ts';

// The 24-hour statistics of every currency, read from the rollups, against a brute-force
// computation over the raw candles, in both rollup modes.

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/** Candles every 7 minutes and some seconds, with highs and lows around the open. */
function candlesOf(code: string, seed: number, from: number, to: number, base: number): Candle[] {
  const next = random(seed);
  const out: Candle[] = [];
  for (let t = from; t < to; t += 7 * MINUTE + Math.floor(next() * 50_000)) {
    const open = Math.round(base * (1 + (next() - 0.5) / 5) * 100) / 100;
    const close = Math.round(base * (1 + (next() - 0.5) / 5) * 100) / 100;
    out.push({
      code,
      time: new Date(t),
      open,
      close,
      high: Math.max(open, close) + Math.round(next() * 1000) / 100,
      low: Math.round(Math.min(open, close) * (50 + next() * 50)) / 100,
      // Whole numbers, so the sum is exact whatever order the database adds them in.
      volume: Math.floor(next() * 1000),
    });
  }
  return out;
}

function bruteForce(candles: Candle[], code: string, to: number) {
  const inside = candles
    .filter((c) => c.code === code && c.time.getTime() >= to - DAY_MS && c.time.getTime() < to)
    .sort((a, b) => a.time.getTime() - b.time.getTime());
  if (inside.length === 0) return undefined;
  return {
    open: inside[0]!.open,
    high: Math.max(...inside.map((c) => c.high!)),
    low: Math.min(...inside.map((c) => c.low!)),
    volume: inside.reduce((sum, c) => sum + c.volume!, 0),
  };
}

describe.each(MODES)('24-hour statistics, %s mode', (mode) => {
  let runtime: ModeRuntime;
  const now = Date.now();
  // An instant on no grid: the window's edges fall inside minutes and hours.
  const to = now - 3 * MINUTE + 17_531;
  let candles: Candle[] = [];

  beforeAll(async () => {
    runtime = await createModeRuntime(mode);
    candles = [
      ...candlesOf('BTC', 1, now - 27 * HOUR + 4321, now - MINUTE, 60_000),
      ...candlesOf('ETH', 2, now - 30 * HOUR + 999, now - 20 * HOUR, 3_000),
      // Only older than the window: no statistics.
      ...candlesOf('XRP', 3, now - 40 * HOUR, now - 25 * HOUR, 0.5),
    ];
    await insertCandles(runtime.pool, candles);
    // Rollup tables: the last six hours stay unmaterialised, so the tail comes from raw rows.
    await refreshRollups(runtime.pool, { settleSeconds: 6 * 3600, runPolicies: true });
  }, 120_000);

  afterAll(async () => {
    await runtime?.dispose();
  });

  test('match a brute-force computation over the raw candles', async () => {
    const stats = await readDayStats(runtime.pool, new Date(to));
    expect(stats.get('BTC')).toEqual(bruteForce(candles, 'BTC', to));
    expect(stats.get('ETH')).toEqual(bruteForce(candles, 'ETH', to));
    expect(stats.has('XRP')).toBe(false);
    expect([...stats.keys()].sort()).toEqual(['BTC', 'ETH']);
  });

  test('a backfill into rolled-up hours counts at once, and after the refresh', async () => {
    const backfill: Candle[] = [
      { code: 'ETH', time: new Date(to - 22 * HOUR - 1234), open: 2500, high: 9999, low: 1 },
      { code: 'BTC', time: new Date(to - DAY_MS + 5), open: 12345, volume: 77 },
    ];
    await runtime.pool.transaction(async (tx) => {
      await insertCandles(tx, backfill, 'backfill');
      await markTouchedRanges(
        tx,
        backfill.map((c) => ({ code: c.code, from: c.time, to: c.time })),
      );
    });
    candles.push(...backfill.map((c) => ({ ...c, high: c.high ?? c.open, low: c.low ?? c.open })));
    candles.at(-1)!.volume = 77;
    candles.at(-2)!.volume = 0;
    const expected = {
      BTC: bruteForce(candles, 'BTC', to),
      ETH: bruteForce(candles, 'ETH', to),
    };
    expect(expected.BTC!.open).toBe(12345);
    expect(expected.ETH!.high).toBe(9999);
    expect(Object.fromEntries(await readDayStats(runtime.pool, new Date(to)))).toEqual(expected);
    await refreshRollups(runtime.pool, { settleSeconds: 6 * 3600, runPolicies: true });
    expect(Object.fromEntries(await readDayStats(runtime.pool, new Date(to)))).toEqual(expected);
  });

  test('the cache computes once per harvest instant', async () => {
    const cache = new DayStatsCache(runtime.pool);
    const first = await cache.get(1000);
    expect(await cache.get(1000)).toBe(first);
    const [a, b] = await Promise.all([cache.get(2000), cache.get(2000)]);
    expect(a).toBe(b);
    expect(a).not.toBe(first);
    expect(a.get('BTC')).toEqual(first.get('BTC'));
  });
});
