import { afterAll, beforeAll, expect, test } from '@jest/globals';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { text } from 'node:stream/consumers';
import { gzipSync } from 'node:zlib';
import { DataClient } from '../../src/api/dataClient.ts';
import { createToken } from '../../src/data/tokens/tokenStore.ts';
import { startApiHarness, type ApiHarness } from '../support/api.ts';
import {
  expectedFirstPerBucket,
  insertCandles,
  setSnapshot,
  type Candle,
} from '../support/prices.ts';

// The API's public history route passes the data module's JSON on as it arrives: the same bytes
// (nothing parsed, validated or encoded again on the API's loop), 204 when the data module has no
// points, and 503 when the data module fails or answers something that is not JSON.

let harness: ApiHarness;
let readToken: string;
const MINUTE = 60_000;
let candles: Candle[];

beforeAll(async () => {
  harness = await startApiHarness();
  ({ token: readToken } = await createToken(harness.runtime.pool, 'pass-through', ['read']));
  // Points 30 to 60 minutes back: a two-hour window holds all of them whenever it is asked.
  const now = Math.floor(Date.now() / MINUTE) * MINUTE;
  candles = Array.from({ length: 31 }, (_, i) => ({
    code: 'BTC',
    time: new Date(now - (60 - i) * MINUTE),
    open: 50_000 + i * 12.345,
  }));
  await insertCandles(harness.runtime.pool, candles);
  await setSnapshot(harness.runtime.pool, 'BTC', 50_400, new Date());
  // A price now, and no history in the window.
  await setSnapshot(harness.runtime.pool, 'ETH', 3_000, new Date());
}, 60_000);

afterAll(async () => {
  await harness?.close();
});

test("the history answer is the data module's, byte for byte", async () => {
  const query = 'hours=2&intervalSeconds=60';
  const fromApi = await fetch(`${harness.url}/api/currency/history/BTC?${query}`);
  const fromData = await fetch(`${harness.dataUrl}/data/currency/history/BTC?${query}`, {
    headers: { authorization: `Bearer ${readToken}` },
  });
  expect(fromApi.status).toBe(200);
  expect(fromData.status).toBe(200);
  expect(fromApi.headers.get('content-type')).toMatch(/^application\/json/);
  const body = Buffer.from(await fromApi.arrayBuffer());
  expect(body.equals(Buffer.from(await fromData.arrayBuffer()))).toBe(true);
  // Still the contract's answer: every point, ISO timestamps, oldest first.
  const to = new Date();
  expect(JSON.parse(body.toString())).toEqual(
    expectedFirstPerBucket(candles, 60, new Date(to.getTime() - 2 * 60 * MINUTE), to),
  );
});

test('no points in the window: 204 without a body', async () => {
  const answer = await fetch(`${harness.url}/api/currency/history/ETH?hours=2&intervalSeconds=60`);
  expect(answer.status).toBe(204);
  expect(await answer.text()).toBe('');
});

/** A stand-in data module answering every request with `status`, `type` and `body`. */
async function upstream(status: number, type: string, body: string | Buffer, encoding?: string) {
  const server = http.createServer((_req, res) => {
    res.writeHead(status, {
      'content-type': type,
      'content-length': Buffer.byteLength(body),
      ...(encoding ? { 'content-encoding': encoding } : {}),
    });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const client = new DataClient({
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    timeoutMs: 10_000,
    cacheMs: 0,
    logger: harness.runtime.logger,
  });
  return {
    client,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

test('a JSON answer is passed on with its length; anything else is a 503', async () => {
  const json = '[{"timestamp":"2026-01-01T00:00:00.000Z","value":1.5}]';
  const cases: Array<{ status: number; type: string; body: string | Buffer; encoding?: string }> = [
    { status: 200, type: 'application/json; charset=utf-8', body: json },
    // Compressed on the way (a proxy before the data module): fetch decodes it, so the length
    // on the wire is not the length passed on.
    { status: 200, type: 'application/json', body: gzipSync(json), encoding: 'gzip' },
    { status: 200, type: 'text/html', body: '<html>a proxy page</html>' },
    { status: 500, type: 'application/json', body: '{"error":{"code":"internal_error"}}' },
    { status: 204, type: 'application/json', body: '' },
    { status: 404, type: 'application/json', body: '{"error":{"code":"unknown_currency"}}' },
  ];
  const outcomes: unknown[] = [];
  for (const { status, type, body, encoding } of cases) {
    const stand = await upstream(status, type, body, encoding);
    try {
      const answer = await stand.client.historyJson('BTC', 1, 60).then(
        async (passed) => passed && { length: passed.length, body: await text(passed.body) },
        (error: { status?: number }) => ({ failed: error.status }),
      );
      outcomes.push(answer);
    } finally {
      await stand.close();
    }
  }
  expect(outcomes).toEqual([
    { length: Buffer.byteLength(json), body: json },
    { length: undefined, body: json },
    { failed: 503 },
    { failed: 503 },
    undefined,
    undefined,
  ]);
});
