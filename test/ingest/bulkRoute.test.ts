import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { sql } from 'slonik';
import { z } from 'zod';
import { generateCurrencies } from '../../src/data/currencies/generator.ts';
import { exposeIngestTotals } from '../../src/data/ingest/totalsMetrics.ts';
import { createDataService } from '../../src/data/service.ts';
import { createToken } from '../../src/data/tokens/tokenStore.ts';
import type { RunningServer } from '../../src/shared/http/server.ts';
import { getJson, serve } from '../support/http.ts';
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';

let runtime: TestRuntime;
let server: RunningServer;
let writeToken: string;
let readToken: string;
let stopTotals: () => void;

beforeAll(async () => {
  runtime = await createTestRuntime({
    PRICE_BULK_MAX_ITEMS: '1000',
    PRICE_BULK_MAX_BYTES: '100000',
  });
  await generateCurrencies({ pool: runtime.pool, logger: runtime.logger, loadFromExchange: false });
  writeToken = (await createToken(runtime.pool, 'loader', ['write'])).token;
  readToken = (await createToken(runtime.pool, 'reader', ['read'])).token;
  server = await serve(createDataService(runtime).app);
  // What the data role does at start: the ingest totals in its /metrics.
  stopTotals = exposeIngestTotals(runtime.pool, runtime.logger);
});

afterAll(async () => {
  stopTotals();
  await server.close();
  await runtime.dispose();
});

const post = (body: string, contentType = 'application/json', token = writeToken) =>
  getJson(`${server.url}/data/prices/bulk`, token, {
    method: 'POST',
    body,
    headers: { 'content-type': contentType },
  });

const stored = (code: string) =>
  runtime.pool.any(sql.type(
    z.object({ time: z.date(), open: z.number(), close: z.number(), source: z.string() }),
  )`
    SELECT time, open, close, source FROM price_observations WHERE currency_code = ${code} ORDER BY time`);

describe('POST /data/prices/bulk', () => {
  test('stores a JSON array of candles and ticks; bad items are rejected by index', async () => {
    const items = [
      {
        code: 'BTC',
        time: '2024-02-01T00:00:00Z',
        open: 42000,
        high: 42100,
        low: 41900,
        close: 42050,
        volume: 3,
      },
      { code: 'btc', time: '2024-02-01T00:01:00Z', price: '42060.5' },
      { code: 'NOPE', time: '2024-02-01T00:02:00Z', price: 1 },
      { code: 'BTC', time: 'not a time', price: 1 },
      { code: 'BTC', time: '2024-02-01T00:03:00Z', open: 1, high: 0.5, low: 0.9, close: 1 },
      'a string',
      { code: 'BTC', time: 1706745840000, price: 42070 },
    ];
    const { status, body } = await post(JSON.stringify(items));
    expect(status).toBe(200);
    const rejection = (index: number, message: unknown, status = 400) => ({
      index,
      status,
      code: status === 422 ? 'unknown_currency' : 'validation_error',
      message,
      details: [{ path: 'body', message }],
    });
    expect(body).toEqual({
      received: 7,
      accepted: 3,
      inserted: 3,
      duplicates: 0,
      rejected: 4,
      rejections: [
        rejection(2, "unknown currency 'NOPE'", 422),
        rejection(3, expect.stringContaining("time 'not a time'")),
        rejection(4, 'high is below low'),
        rejection(5, 'expected a JSON object'),
      ],
    });
    expect((await stored('BTC')).map((r) => [r.time.toISOString(), r.close, r.source])).toEqual([
      ['2024-02-01T00:00:00.000Z', 42050, 'bulk'],
      ['2024-02-01T00:01:00.000Z', 42060.5, 'bulk'],
      ['2024-02-01T00:04:00.000Z', 42070, 'bulk'],
    ]);
  });

  test('a price more than the allowed skew in the future, or out of bounds, is rejected and not stored', async () => {
    const soon = new Date(Date.now() + 10 * 60_000).toISOString();
    const items = [
      { code: 'XLM', time: soon, price: 1 },
      { code: 'XLM', time: '2024-03-01T00:00:00Z', price: 1e307 },
      { code: 'XLM', time: '2024-03-01T00:01:00Z', price: 5, volume: 1e19 },
      { code: 'XLM', time: new Date(Date.now() - 60_000).toISOString(), price: 2 },
    ];
    const { status, body } = await post(JSON.stringify(items));
    expect(status).toBe(200);
    expect(body).toMatchObject({ received: 4, accepted: 1, rejected: 3 });
    const reasons = (body as { rejections: { index: number; message: string }[] }).rejections;
    expect(reasons.map((r) => [r.index, r.message])).toEqual([
      [0, 'time is in the future'],
      [1, 'prices must be ≤ 1000000000000'],
      [2, 'volume must be ≤ 1000000000000000000'],
    ]);
    const since = new Date('2024-03-01T00:00:00Z');
    const rows = (await stored('XLM')).filter((row) => row.time >= since);
    expect(rows.map((row) => row.close)).toEqual([2]);
  });

  test('sending the same items again adds nothing: they count as duplicates', async () => {
    const items = [
      { code: 'BTC', time: '2024-02-01T00:00:00Z', price: 1 },
      { code: 'BTC', time: '2024-02-01T00:05:00Z', price: 42080 },
    ];
    const { body } = await post(JSON.stringify(items));
    expect(body).toEqual({
      received: 2,
      accepted: 1,
      inserted: 1,
      duplicates: 1,
      rejected: 0,
      rejections: [],
    });
    expect((await stored('BTC'))[0]?.open).toBe(42000);
  });

  test('takes NDJSON, one item a line; a line that is not JSON refuses the request', async () => {
    const ndjson = [
      '{"code":"ETH","time":"2024-02-01T00:00:00Z","price":2300}',
      '',
      '{"code":"ETH","time":"2024-02-01T00:02:00Z","open":2301,"high":2302,"low":2300,"close":2301.5}',
    ].join('\n');
    const { status, body } = await post(ndjson, 'application/x-ndjson');
    expect(status).toBe(200);
    expect(body).toEqual({
      received: 2,
      accepted: 2,
      inserted: 2,
      duplicates: 0,
      rejected: 0,
      rejections: [],
    });
    expect(await stored('ETH')).toHaveLength(2);
    const broken = await post(`${ndjson}\n{"code":"ETH",`, 'application/x-ndjson');
    expect(broken.status).toBe(400);
    expect(broken.body.error.code).toBe('invalid_json');
    expect(await stored('ETH')).toHaveLength(2);
  });

  test('marks the written range for the rollups', async () => {
    await post(
      JSON.stringify([
        { code: 'SOL', time: '2023-06-01T10:00:00Z', price: 20 },
        { code: 'SOL', time: '2023-06-01T10:05:00Z', price: 21 },
      ]),
    );
    const marks = await runtime.pool.any(sql.type(
      z.object({ range_start: z.date(), range_end: z.date() }),
    )`
      SELECT range_start, range_end FROM price_invalidations WHERE currency_code = 'SOL'`);
    expect(marks).toEqual([
      {
        range_start: new Date('2023-06-01T10:00:00Z'),
        range_end: new Date('2023-06-01T10:05:00Z'),
      },
    ]);
  });

  test('an empty array is fine; a non-array is 400; other media types 415', async () => {
    expect((await post('[]')).body).toEqual({
      received: 0,
      accepted: 0,
      inserted: 0,
      duplicates: 0,
      rejected: 0,
      rejections: [],
    });
    const object = await post('{"code":"BTC"}');
    expect(object.status).toBe(400);
    expect(object.body.error.code).toBe('validation_error');
    const text = await post('code,time', 'text/csv');
    expect(text.status).toBe(415);
  });

  test('bodies over the byte or item limit are refused with 413 and nothing is stored', async () => {
    const tick = (i: number) => ({ code: 'DOGE', time: 1_600_000_000 + i * 60, price: 0.1 });
    const bytes = await post(
      JSON.stringify(Array.from({ length: 2000 }, (_, i) => ({ ...tick(i), pad: 'x'.repeat(40) }))),
    );
    expect(bytes.status).toBe(413);
    expect(bytes.body.error.code).toBe('payload_too_large');
    const items = await post(
      Array.from({ length: 1001 }, (_, i) => JSON.stringify(tick(i))).join('\n'),
      'application/x-ndjson',
    );
    expect(items.status).toBe(413);
    expect(items.body.error.message).toMatch(/1000 items/);
    expect(await stored('DOGE')).toHaveLength(0);
    const fits = await post(JSON.stringify(Array.from({ length: 1000 }, (_, i) => tick(i))));
    expect(fits.body).toMatchObject({ received: 1000, inserted: 1000 });
  });

  test('counts rows in the ingest metrics, by source, from the database', async () => {
    const { text } = await getJson(`${server.url}/metrics`);
    expect(text).toMatch(/ingest_rows_inserted_total\{source="bulk"\} [1-9]/);
    expect(text).toMatch(/ingest_rows_duplicate_total\{source="bulk"\} [1-9]/);
    expect(text).toMatch(/ingest_rows_rejected_total\{source="bulk"\} [1-9]/);
  });

  test('needs the write scope', async () => {
    expect((await post('[]', 'application/json', '')).status).toBe(401);
    expect((await post('[]', 'application/json', readToken)).status).toBe(403);
  });

  test('is documented in /openapi.json with both media types', async () => {
    const { body } = await getJson(`${server.url}/openapi.json`);
    const op = body.paths['/data/prices/bulk'].post;
    expect(Object.keys(op.requestBody.content).sort()).toEqual([
      'application/json',
      'application/x-ndjson',
    ]);
    expect(Object.keys(op.responses)).toEqual(
      expect.arrayContaining(['200', '400', '401', '403', '413', '415']),
    );
  });
});
