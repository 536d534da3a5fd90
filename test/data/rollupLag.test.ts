import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { sql } from 'slonik';
import { refreshRollups } from '../../src/data/history/refresh.ts';
import { readRollupLag } from '../../src/data/history/rollupLag.ts';
import { markTouchedRanges } from '../../src/data/prices/invalidations.ts';
import { insertCandles } from '../support/prices.ts';
import { createModeRuntime, MODES, type ModeRuntime } from '../support/rollupModes.ts';

const EVERY_LEVEL_UP_TO_DATE = {
  '5m': 0,
  '15m': 0,
  '1h': 0,
  '1d': 0,
  '1h_at15': 0,
  '1h_at30': 0,
};

// rollup_lag_seconds must be a real signal for the RollupLagging alert: 0 while the rollups are
// up to date, the wait of the oldest due data while they are not, in both rollup modes.

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const SETTLE_SECONDS = 60;

describe.each(MODES)('rollup lag, %s mode', (mode) => {
  let runtime: ModeRuntime;
  const first = Math.floor((Date.now() - 3 * HOUR) / MINUTE) * MINUTE;

  beforeAll(async () => {
    runtime = await createModeRuntime(mode);
  }, 120_000);

  afterAll(async () => {
    await runtime?.dispose();
  });

  const lag = async () =>
    Object.fromEntries(
      (await readRollupLag(runtime.pool, SETTLE_SECONDS)).map((s) => [s.labels.level, s.value]),
    );
  const refresh = () =>
    refreshRollups(runtime.pool, { settleSeconds: SETTLE_SECONDS, runPolicies: true });

  test('nothing stored: every level is up to date', async () => {
    expect(await lag()).toEqual(EVERY_LEVEL_UP_TO_DATE);
  });

  test('prices never rolled up: the 5-minute level has waited since their bucket was due', async () => {
    await insertCandles(
      runtime.pool,
      Array.from({ length: 10 }, (_, i) => ({
        code: 'BTC',
        time: new Date(first + i * MINUTE),
        open: 100 + i,
      })),
    );
    const waited = (await lag())['5m']!;
    // Due at the end of the first candle's 5-minute bucket, plus settling and the refresh cadence
    // (or the policy's end offset of 10 minutes and schedule): a quarter of an hour at most.
    expect(waited).toBeGreaterThan((Date.now() - first) / 1000 - 20 * 60);
    expect(waited).toBeLessThan((Date.now() - first) / 1000);
  });

  test('a refresh brings every level back to 0', async () => {
    await refresh();
    expect(await lag()).toEqual(EVERY_LEVEL_UP_TO_DATE);
  });

  test('a backfill below the watermarks waits from when it was marked until a refresh', async () => {
    const at = new Date(first + 20 * MINUTE);
    await insertCandles(runtime.pool, [{ code: 'BTC', time: at, open: 99 }]);
    await markTouchedRanges(runtime.pool, [{ code: 'BTC', from: at, to: at }]);
    await runtime.pool.query(
      sql.unsafe`UPDATE price_invalidations SET created_at = now() - interval '10 minutes'`,
    );
    const waited = await lag();
    expect(waited['5m']).toBeGreaterThanOrEqual(600);
    expect(waited['15m']).toBeGreaterThanOrEqual(600);
    expect(waited['1h']).toBeGreaterThanOrEqual(600);
    await refresh();
    expect(await lag()).toEqual(EVERY_LEVEL_UP_TO_DATE);
  });
});
