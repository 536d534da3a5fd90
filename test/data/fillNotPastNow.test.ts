import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { startDataModule, type DataModuleHarness } from '../support/dataModule.ts';
import { getJson } from '../support/http.ts';
import { insertCandles } from '../support/prices.ts';

// Filled buckets stop at now: a window reaching into the future gets no invented candles there,
// whatever the fill, the zone, the number of runs or the route (JSON or export).

const MIN = 60_000;
let harness: DataModuleHarness;
const started = Date.now();

beforeAll(async () => {
  harness = await startDataModule();
  await insertCandles(harness.runtime.pool, [
    { code: 'BTC', time: new Date(started - 3 * 60 * MIN), open: 100, close: 101 },
    { code: 'BTC', time: new Date(started - 90 * MIN), open: 110, close: 111 },
  ]);
});

afterAll(async () => {
  await harness.close();
});

const iso = (ms: number) => new Date(ms).toISOString();

async function lastBucket(query: string): Promise<number> {
  const { status, body } = await getJson(
    `${harness.server.url}/data/candles/BTC?${query}`,
    harness.readToken,
  );
  expect(status).toBe(200);
  return Date.parse((body as Array<{ timestamp: string }>).at(-1)!.timestamp);
}

test.each([
  ['previous', ''],
  ['linear', ''],
  ['null', ''],
  ['previous', '&tz=Europe/Berlin'],
])('fill=%s%s with a future `to` ends at the bucket holding now', async (fill, zone) => {
  const query = `interval=1m&fill=${fill}&from=${iso(started - 4 * 60 * MIN)}&to=${iso(started + 5 * 60 * MIN)}${zone}`;
  const last = await lastBucket(query);
  expect(last).toBeLessThanOrEqual(Date.now());
  expect(last).toBeGreaterThanOrEqual(started - MIN);
});

test('a window wholly in the future has nothing to fill', async () => {
  const query = `interval=1m&fill=previous&from=${iso(started + 60 * MIN)}&to=${iso(started + 120 * MIN)}`;
  const { status } = await getJson(
    `${harness.server.url}/data/candles/BTC?${query}`,
    harness.readToken,
  );
  expect(status).toBe(204);
});

test('the export stops at now too', async () => {
  const query = `interval=1m&fill=previous&format=ndjson&from=${iso(started - 60 * MIN)}&to=${iso(started + 24 * 60 * MIN)}`;
  const response = await fetch(`${harness.server.url}/data/candles/BTC/export?${query}`, {
    headers: { authorization: `Bearer ${harness.readToken}` },
  });
  expect(response.status).toBe(200);
  const lines = (await response.text()).trim().split('\n');
  const last = JSON.parse(lines.at(-1)!) as { timestamp: string; close: number };
  expect(Date.parse(last.timestamp)).toBeLessThanOrEqual(Date.now());
  expect(last.close).toBe(111);
  expect(lines.length).toBeLessThanOrEqual(62);
});
