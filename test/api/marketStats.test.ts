import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { startApiHarness, type ApiHarness } from '../support/api.ts';
import { insertCandles, setSnapshot } from '../support/prices.ts';

// The 24-hour statistics as the API passes them on from the data module.

const HOUR = 3_600_000;
let harness: ApiHarness;
const now = Date.now();

beforeAll(async () => {
  harness = await startApiHarness();
  const pool = harness.runtime.pool;
  await insertCandles(pool, [
    // Older than the window: not counted.
    { code: 'BTC', time: new Date(now - 30 * HOUR), open: 1, volume: 5 },
    { code: 'BTC', time: new Date(now - 20 * HOUR), open: 50_000, high: 51_000, volume: 2 },
    { code: 'BTC', time: new Date(now - 10 * HOUR), open: 52_000, low: 49_500, volume: 3 },
    { code: 'BTC', time: new Date(now - HOUR), open: 55_000, volume: 1 },
    { code: 'ETH', time: new Date(now - 5 * HOUR), open: 4000 },
  ]);
  await setSnapshot(pool, 'BTC', 55_000, new Date(now - HOUR));
  await setSnapshot(pool, 'ETH', 3000, new Date(now - 5 * HOUR));
  await setSnapshot(pool, 'DOGE', 0.2, new Date(now - 40 * HOUR));
});

afterAll(async () => {
  await harness.close();
});

test('GET /api/currency/all: every item carries the 24-hour statistics', async () => {
  const response = await harness.client().get('/api/currency/all');
  expect(response.status).toBe(200);
  const byCode = Object.fromEntries(
    response.body.currencies.map((c: { currencyCode: string }) => [c.currencyCode, c]),
  );
  expect(byCode.BTC).toMatchObject({
    value: 55_000,
    open24h: 50_000,
    high24h: 55_000,
    low24h: 49_500,
    volume24h: 6,
    change24h: 10,
  });
  expect(byCode.ETH).toMatchObject({ open24h: 4000, high24h: 4000, low24h: 4000, change24h: -25 });
  expect(byCode.DOGE).toMatchObject({
    value: 0.2,
    open24h: null,
    high24h: null,
    low24h: null,
    volume24h: null,
    change24h: null,
  });
});
