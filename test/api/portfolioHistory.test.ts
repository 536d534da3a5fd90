import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { sql } from 'slonik';
import { startApiHarness, type ApiHarness } from '../support/api.ts';
import type { ApiClient } from '../support/apiClient.ts';
import { insertCandles, setSnapshot } from '../support/prices.ts';

// Hand-computed portfolio history. Times are laid out from H, an hour boundary 4 to 5 hours ago,
// in 30-minute buckets b0 = [H, H+30m), b1, b2, …, up to the bucket holding "now":
//   BTC: 2 shares bought at H+10m (snapshot 100) with 50 wallet dollars.
//   ETH: 10 shares bought at H+70m (snapshot 10).
//   BTC prices: H 90, H+20m 95, H+30m 105, H+50m 110, H+90m 130 → first per bucket: b0 90,
//   b1 105, b3 130 (none in b2).  ETH prices: H+80m 12 → b2 12.
// Expected (shares × bucket price, else the latest earlier price, + 50 dollars):
//   b0 2×90 + 50 = 230 (trade)        b1 2×105 + 50 = 260
//   b2 2×105 + 10×12 + 50 = 380 (trade)   b3 2×130 + 120 + 50 = 430   b4… 430

const MIN = 60_000;
const HOUR = 60 * MIN;
let harness: ApiHarness;
let client: ApiClient;
let H: number;

beforeAll(async () => {
  harness = await startApiHarness();
  ({ client } = await harness.signedInClient());
  H = Math.floor(Date.now() / HOUR) * HOUR - 4 * HOUR;
  const pool = harness.runtime.pool;
  await setSnapshot(pool, 'BTC', 100, new Date());
  await setSnapshot(pool, 'ETH', 10, new Date());
  await client.post('/api/portfolio/add', { currencyCode: 'BTC', shares: 2, walletDollars: 50 });
  await client.post('/api/portfolio/add', { currencyCode: 'ETH', shares: 10, walletDollars: 0 });
  // The trades happened earlier than the requests: move them to their places on the timeline.
  for (const [code, at] of [
    ['BTC', H + 10 * MIN],
    ['ETH', H + 70 * MIN],
  ] as const) {
    await pool.query(sql.unsafe`
      UPDATE app.holding_changes SET changed_at = ${sql.timestamp(new Date(at))}
      WHERE currency_code = ${code}
    `);
  }
  const at = (minutes: number) => new Date(H + minutes * MIN);
  await insertCandles(pool, [
    { code: 'BTC', time: at(0), open: 90 },
    { code: 'BTC', time: at(20), open: 95 },
    { code: 'BTC', time: at(30), open: 105 },
    { code: 'BTC', time: at(50), open: 110 },
    { code: 'BTC', time: at(90), open: 130 },
    { code: 'ETH', time: at(80), open: 12 },
  ]);
});

afterAll(async () => {
  await harness.close();
});

let asked = { before: 0, after: 0 };

async function history(query: string) {
  const before = Date.now();
  const response = await client.get(`/api/portfolio/history/get?${query}`);
  asked = { before, after: Date.now() };
  expect(response.status).toBe(200);
  return response.body as Array<Record<string, any>>;
}

/** Buckets of `width` from `first` to the one holding "now" (which may tick over mid-request). */
function expectBucketCount(points: unknown[], first: number, width: number) {
  const count = (now: number) => Math.floor((now - first) / width) + 1;
  expect(points.length).toBeGreaterThanOrEqual(count(asked.before));
  expect(points.length).toBeLessThanOrEqual(count(asked.after));
}

function expectPoints(points: Array<Record<string, any>>, totals: number[], trades: number[]) {
  expectBucketCount(points, H, 30 * MIN);
  points.forEach((point, i) => {
    const total = totals[Math.min(i, totals.length - 1)]!;
    const previous = i === 0 ? total : totals[Math.min(i - 1, totals.length - 1)]!;
    const timestamp = new Date(H + i * 30 * MIN).toISOString();
    expect(point).toEqual({
      id: (H + i * 30 * MIN) / (30 * MIN),
      timestamp,
      lastUpdated: timestamp,
      dollarBalance: 50,
      shareBalance: total - 50,
      totalWorth: total,
      valueChange: total - previous,
      tradeOccurred: trades.includes(i),
    });
  });
}

describe('portfolio history', () => {
  test('joins the holdings timeline with the price history', async () => {
    expectPoints(await history('hours=6&intervalSeconds=1800'), [230, 260, 380, 430], [0, 2]);
  });

  test('is right after prices are backfilled', async () => {
    // A late batch brings BTC's price for b2 (H+61m: 120) and ETH's for b4 (H+125m: 15):
    // b2 = 2×120 + 120 + 50 = 410, b3 = 430, b4… = 2×130 + 10×15 + 50 = 460.
    await insertCandles(harness.runtime.pool, [
      { code: 'BTC', time: new Date(H + 61 * MIN), open: 120 },
      { code: 'ETH', time: new Date(H + 125 * MIN), open: 15 },
    ]);
    expectPoints(await history('hours=6&intervalSeconds=1800'), [230, 260, 410, 430, 460], [0, 2]);
  });

  test('a window that starts after the trades begins from the holdings held then', async () => {
    const points = await history('hours=1&intervalSeconds=1800');
    const firstBucket = (now: number) => Math.floor((now - HOUR) / (30 * MIN)) * 30 * MIN;
    expect([firstBucket(asked.before), firstBucket(asked.after)]).toContain(
      Date.parse(points[0]!.timestamp),
    );
    for (const point of points) {
      expect(point).toMatchObject({ totalWorth: 460, tradeOccurred: false, valueChange: 0 });
    }
  });

  test('a later trade shows in its bucket, valued at the bucket price', async () => {
    const { client: other } = await harness.signedInClient();
    await other.post('/api/portfolio/add', { currencyCode: 'BTC', shares: 1, walletDollars: 0 });
    await harness.runtime.pool.query(sql.unsafe`
      UPDATE app.holding_changes SET changed_at = ${sql.timestamp(new Date(H + 100 * MIN))}
      WHERE portfolio_id = (SELECT max(id) FROM app.portfolios)
    `);
    const response = await other.get('/api/portfolio/history/get?hours=6&intervalSeconds=1800');
    const points = response.body as Array<Record<string, any>>;
    // Bought in b3 (H+90m..H+120m) whose first BTC price is 130; no later BTC price.
    expect(points[0]).toMatchObject({
      timestamp: new Date(H + 90 * MIN).toISOString(),
      shareBalance: 130,
      dollarBalance: 0,
      valueChange: 0,
      tradeOccurred: true,
    });
    expect(points.slice(1).every((p) => p.totalWorth === 130 && !p.tradeOccurred)).toBe(true);
  });

  test('defaults to 24 hours at one-minute spacing', async () => {
    const points = await history('');
    expectBucketCount(points, H + 10 * MIN, MIN);
    expect(points[0]!.timestamp).toBe(new Date(H + 10 * MIN).toISOString());
    // No BTC price in [H+10m, H+11m): the latest before it is the trade's own, 100 (H+10m).
    expect(points[0]!.totalWorth).toBe(2 * 100 + 50);
  });
});
