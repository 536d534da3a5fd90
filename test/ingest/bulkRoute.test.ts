import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { sql } from 'slonik';
import { z } from 'zod';
import { generateCurrencies } from '../../src/data/currencies/generator.ts';
import { createDataService } from '../../src/data/service.ts';
import { createToken } from '../../src/data/tokens/tokenStore.ts';
import type { RunningServer } from '../../src/shared/http/server.ts';
import { getJson, serve } from '../support/http.ts';
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';

let runtime: TestRuntime;
let server: RunningServer;
let writeToken: string;
let readToken: string;

beforeAll(async () => {
  runtime = await createTestRuntime();
  await generateCurrencies({ pool: runtime.pool, logger: runtime.logger, loadFromExchange: false });
  writeToken = (await createToken(runtime.pool, 'loader', ['write'])).token;
  readToken = (await createToken(runtime.pool, 'reader', ['read'])).token;
  server = await serve(createDataService(runtime).app);
});

afterAll(async () => {
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
    expect(body).toEqual({
      accepted: 3,
      inserted: 3,
      duplicates: 0,
      rejected: [
        { index: 2, reason: "unknown currency 'NOPE'" },
        { index: 3, reason: expect.stringContaining("time 'not a time'") },
        { index: 4, reason: 'high is below low' },
        { index: 5, reason: 'expected a JSON object' },
      ],
    });
    expect((await stored('BTC')).map((r) => [r.time.toISOString(), r.close, r.source])).toEqual([
      ['2024-02-01T00:00:00.000Z', 42050, 'bulk'],
      ['2024-02-01T00:01:00.000Z', 42060.5, 'bulk'],
      ['2024-02-01T00:04:00.000Z', 42070, 'bulk'],
    ]);
  });

  test('sending the same items again adds nothing: they count as duplicates', async () => {
    const items = [
      { code: 'BTC', time: '2024-02-01T00:00:00Z', price: 1 },
      { code: 'BTC', time: '2024-02-01T00:05:00Z', price: 42080 },
    ];
    const { body } = await post(JSON.stringify(items));
    expect(body).toEqual({ accepted: 2, inserted: 1, duplicates: 1, rejected: [] });
    expect((await stored('BTC'))[0]?.open).toBe(42000);
  });

  test('takes NDJSON, reporting lines that are not JSON by index', async () => {
    const ndjson = [
      '{"code":"ETH","time":"2024-02-01T00:00:00Z","price":2300}',
      '{"code":"ETH","time":"2024-02-01T00:01:00Z",',
      '',
      '{"code":"ETH","time":"2024-02-01T00:02:00Z","open":2301,"high":2302,"low":2300,"close":2301.5}',
    ].join('\n');
    const { status, body } = await post(ndjson, 'application/x-ndjson');
    expect(status).toBe(200);
    expect(body).toEqual({
      accepted: 2,
      inserted: 2,
      duplicates: 0,
      rejected: [{ index: 1, reason: 'not valid JSON' }],
    });
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
      accepted: 0,
      inserted: 0,
      duplicates: 0,
      rejected: [],
    });
    const object = await post('{"code":"BTC"}');
    expect(object.status).toBe(400);
    expect(object.body.error.code).toBe('validation_error');
    const text = await post('code,time', 'text/csv');
    expect(text.status).toBe(415);
  });

  test('too large bodies are refused with 413', async () => {
    const big = `${'{"code":"BTC","time":"2024-02-01T00:00:00Z","price":1}\n'.repeat(320_000)}`;
    const ndjson = await post(big, 'application/x-ndjson');
    expect(ndjson.status).toBe(413);
    expect(ndjson.body.error.code).toBe('payload_too_large');
    const json = await post(
      JSON.stringify(Array.from({ length: 40_000 }, () => ({ code: 'BTC', time: 1, price: 1 }))),
    );
    expect(json.status).toBe(413);
    const many = await post(
      '{"code":"BTC","time":1,"price":1}\n'.repeat(100_001),
      'application/x-ndjson',
    );
    expect(many.status).toBe(413);
    expect(many.body.error.message).toMatch(/At most 100000 items/);
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
