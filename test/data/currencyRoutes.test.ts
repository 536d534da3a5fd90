import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { sql } from 'slonik';
import { generateCurrencies } from '../../src/data/currencies/generator.ts';
import { createDataService } from '../../src/data/service.ts';
import { createToken, listTokens } from '../../src/data/tokens/tokenStore.ts';
import type { RunningServer } from '../../src/shared/http/server.ts';
import { getJson, serve } from '../support/http.ts';
import {
  expectedFirstPerBucket,
  insertCandles,
  setSnapshot,
  type Candle,
} from '../support/prices.ts';
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';
import { eventually } from '../support/wait.ts';

let runtime: TestRuntime;
let server: RunningServer;
let readToken: string;
let writeToken: string;

const HOUR = 3_600_000;
const now = Date.now();
// Two hours of 10-second prices ending three hours ago: well inside a 24-hour window, whatever
// the few milliseconds between writing and asking.
const seriesStart = Math.floor((now - 5 * HOUR) / 1000) * 1000 + 123;
const series: Candle[] = Array.from({ length: 720 }, (_, i) => ({
  code: 'ETH',
  time: new Date(seriesStart + i * 10_000),
  open: 2000 + Math.sin(i / 7) * 50 + i / 10,
}));

beforeAll(async () => {
  runtime = await createTestRuntime();
  await generateCurrencies({ pool: runtime.pool, logger: runtime.logger, loadFromExchange: false });
  readToken = (await createToken(runtime.pool, 'reader', ['read'])).token;
  writeToken = (await createToken(runtime.pool, 'writer', ['write'])).token;
  await insertCandles(runtime.pool, series);
  server = await serve(createDataService(runtime).app);
});

afterAll(async () => {
  await server.close();
  await runtime.dispose();
});

const history = (query: string, token = readToken, code = 'ETH') =>
  getJson(`${server.url}/data/currency/history/${code}?${query}`, token);

describe('GET /data/currency/all', () => {
  test('lists snapshots highest value first with the contract fields', async () => {
    const at = new Date('2026-03-01T12:00:00.000Z');
    await setSnapshot(runtime.pool, 'BTC', 65000.5, at);
    await setSnapshot(runtime.pool, 'ETH', 3200.25, at);
    await setSnapshot(runtime.pool, 'DOGE', 0.12, at);
    const { status, body } = await getJson(`${server.url}/data/currency/all`, readToken);
    expect(status).toBe(200);
    expect(body.currencies.map((c: { currencyCode: string }) => c.currencyCode)).toEqual([
      'BTC',
      'ETH',
      'DOGE',
    ]);
    expect(body.currencies[0]).toEqual({
      currencyName: 'Bitcoin',
      currencyCode: 'BTC',
      value: 65000.5,
      logoUrl: '/assets/cryptofont/btc.svg',
      lastUpdated: '2026-03-01T12:00:00.000Z',
      open24h: null,
      high24h: null,
      low24h: null,
      volume24h: null,
      change24h: null,
    });
    // ETH has prices in the last 24 hours: its statistics come from them.
    const opens = series.map((c) => c.open);
    expect(body.currencies[1]).toMatchObject({
      currencyCode: 'ETH',
      value: 3200.25,
      open24h: series[0]!.open,
      high24h: Math.max(...opens),
      low24h: Math.min(...opens),
      volume24h: 0,
    });
    expect(body.currencies[1].change24h).toBeCloseTo(
      ((3200.25 - series[0]!.open) / series[0]!.open) * 100,
      10,
    );
  });

  test('pages with limit and offset', async () => {
    const { body } = await getJson(`${server.url}/data/currency/all?limit=1&offset=1`, readToken);
    expect(body.currencies.map((c: { currencyCode: string }) => c.currencyCode)).toEqual(['ETH']);
    const bad = await getJson(`${server.url}/data/currency/all?limit=0`, readToken);
    expect(bad.status).toBe(400);
    expect(bad.body.error.details[0].path).toBe('query.limit');
  });

  test('needs a bearer token with the read scope', async () => {
    const missing = await getJson(`${server.url}/data/currency/all`);
    expect(missing.status).toBe(401);
    expect(missing.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect(missing.body.error.code).toBe('unauthorized');

    const unknown = await getJson(`${server.url}/data/currency/all`, 'pdt_not-a-real-token');
    expect(unknown.status).toBe(401);

    const wrongScope = await getJson(`${server.url}/data/currency/all`, writeToken);
    expect(wrongScope.status).toBe(403);
    expect(wrongScope.body.error.code).toBe('insufficient_scope');
  });

  test('a token revoked by any writer stops working within a second', async () => {
    const { token } = await createToken(runtime.pool, 'short-lived', ['read']);
    expect((await getJson(`${server.url}/data/currency/all`, token)).status).toBe(200);
    await runtime.pool.query(
      sql.unsafe`UPDATE service_tokens SET revoked_at = now() WHERE name = 'short-lived'`,
    );
    const revokedAt = Date.now();
    await eventually(
      async () => (await getJson(`${server.url}/data/currency/all`, token)).status === 401,
      5_000,
      'the revoked token to be refused',
    );
    expect(Date.now() - revokedAt).toBeLessThan(1_000 + 500); // the guard's second, + a request
  });

  test('a token records when it was last used, at most once a minute', async () => {
    const lastUsed = async () =>
      (await listTokens(runtime.pool)).find((t) => t.name === 'tracked')?.lastUsedAt ?? null;
    const { token } = await createToken(runtime.pool, 'tracked', ['read']);
    expect(await lastUsed()).toBeNull();
    expect((await getJson(`${server.url}/data/currency/all`, token)).status).toBe(200);
    const first = await lastUsed();
    expect(first).not.toBeNull();
    // Within the minute a second use leaves it alone; after it, the use is recorded again.
    expect((await getJson(`${server.url}/data/currency/all`, token)).status).toBe(200);
    expect(await lastUsed()).toEqual(first);
    await runtime.pool.query(sql.unsafe`
      UPDATE service_tokens SET last_used_at = now() - interval '2 minutes' WHERE name = 'tracked'
    `);
    const backdated = await lastUsed();
    // The guard believes a verified token for a second before reading it (and touching it) again.
    await eventually(
      async () => {
        expect((await getJson(`${server.url}/data/currency/all`, token)).status).toBe(200);
        return (await lastUsed())!.getTime() > backdated!.getTime();
      },
      10_000,
      'the use to be recorded',
    );
  });
});

describe('GET /data/currency/history/{code}', () => {
  test.each([60, 7, 90, 3599, 300, 1])(
    'buckets of %i s match a brute-force computation',
    async (interval) => {
      const hours = interval === 1 ? 6 : 24;
      const { status, body } = await history(`hours=${hours}&intervalSeconds=${interval}`);
      expect(status).toBe(200);
      expect(body).toEqual(expectedFirstPerBucket(series, interval, new Date(0), new Date(now)));
    },
  );

  test('defaults to 24 hours at 60-second spacing; codes are case-insensitive', async () => {
    const { status, body } = await history('', readToken, 'eth');
    expect(status).toBe(200);
    expect(body).toEqual(expectedFirstPerBucket(series, 60, new Date(0), new Date(now)));
  });

  test('buckets are epoch-aligned and stamped with their start', async () => {
    const { body } = await history('hours=24&intervalSeconds=3599');
    for (const point of body as Array<{ timestamp: string }>) {
      expect(Date.parse(point.timestamp) % 3_599_000).toBe(0);
      expect(point.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    }
  });

  test('only the window is read: data older than `hours` is left out', async () => {
    // Points far from the window's edge, so a slow machine cannot move one across it.
    const at = (hoursAgo: number) =>
      new Date(Math.floor((Date.now() - hoursAgo * HOUR) / HOUR) * HOUR + 60_000);
    await insertCandles(runtime.pool, [
      { code: 'XRP', time: at(7), open: 1.5 },
      { code: 'XRP', time: at(2), open: 2.5 },
    ]);
    const { status, body } = await history('hours=4&intervalSeconds=3600', readToken, 'XRP');
    expect(status).toBe(200);
    expect(body).toEqual([
      { timestamp: new Date(at(2).getTime() - 60_000).toISOString(), value: 2.5 },
    ]);
  });

  test('a window crossing a chunk boundary is answered from both chunks', async () => {
    const week = 7 * 24 * HOUR;
    const boundary = Math.floor((now - 2 * HOUR) / week) * week; // newest 7-day chunk edge in the past
    const around: Candle[] = Array.from({ length: 24 }, (_, i) => ({
      code: 'SOL',
      time: new Date(boundary - 2 * HOUR + i * 600_000),
      open: 100 + i,
    }));
    await insertCandles(runtime.pool, around);
    const chunks = await runtime.pool.anyFirst(sql.unsafe`
      SELECT DISTINCT tableoid::regclass::text FROM price_observations WHERE currency_code = 'SOL'
    `);
    expect(chunks.length).toBe(2);
    const hours = Math.ceil((now - boundary) / HOUR) + 3;
    const { status, body } = await history(`hours=${hours}&intervalSeconds=1800`, readToken, 'SOL');
    expect(status).toBe(200);
    expect(body).toEqual(expectedFirstPerBucket(around, 1800, new Date(0), new Date(now)));
  });

  test('204 with no body when the window holds no data', async () => {
    const response = await history('hours=1&intervalSeconds=60', readToken, 'ADA');
    expect(response.status).toBe(204);
    expect(response.text).toBe('');
  });

  test('404 for an unknown currency', async () => {
    const { status, body } = await history('hours=1', readToken, 'NOPE');
    expect(status).toBe(404);
    expect(body.error.code).toBe('unknown_currency');
  });

  test.each([
    ['hours=0', 'hours'],
    ['hours=87601', 'hours'],
    ['hours=abc', 'hours'],
    ['hours=1.5', 'hours'],
    ['hours=-3', 'hours'],
    ['intervalSeconds=0', 'intervalSeconds'],
    ['intervalSeconds=2.5', 'intervalSeconds'],
    ['intervalSeconds=', 'intervalSeconds'],
    ['hours=1&intervalSeconds=3601', 'intervalSeconds'],
  ])('400 naming the parameter for %s', async (query, parameter) => {
    const { status, body } = await history(query);
    expect(status).toBe(400);
    expect(body.error.code).toBe('validation_error');
    expect(body.error.message).toContain(`'${parameter}'`);
    expect(body.error.details[0].path).toBe(`query.${parameter}`);
  });

  test('400 that points to the export route when the answer would exceed the point cap', async () => {
    const { status, body } = await history('hours=24&intervalSeconds=1');
    expect(status).toBe(400);
    expect(body.error.code).toBe('too_many_points');
    expect(body.error.message).toMatch(/export/);
  });

  test('400 for a malformed code, 401/403 without the right token', async () => {
    expect((await history('hours=1', readToken, 'BT%24C')).status).toBe(400);
    expect((await history('hours=1', '')).status).toBe(401);
    expect((await history('hours=1', writeToken)).status).toBe(403);
  });
});

describe('service endpoints', () => {
  test('health, readiness and actuator', async () => {
    expect((await getJson(`${server.url}/health/live`)).status).toBe(200);
    const ready = await getJson(`${server.url}/health/ready`);
    expect(ready.status).toBe(200);
    expect(ready.body.checks).toEqual({ database: 'ok', migrations: 'ok' });
    expect((await getJson(`${server.url}/actuator/health`)).body).toEqual({ status: 'UP' });
  });

  test('/openapi.json describes every route with its error responses', async () => {
    const { status, body } = await getJson(`${server.url}/openapi.json`);
    expect(status).toBe(200);
    expect(body.openapi).toBe('3.1.0');
    const historyOp = body.paths['/data/currency/history/{code}'].get;
    expect(Object.keys(historyOp.responses).sort()).toEqual([
      '200',
      '204',
      '400',
      '401',
      '403',
      '404',
      '503',
    ]);
    expect(historyOp.parameters.map((p: { name: string }) => p.name).sort()).toEqual([
      'code',
      'hours',
      'intervalSeconds',
    ]);
    expect(body.paths['/data/currency/all'].get.responses['200']).toBeDefined();
    expect(body.components.schemas.TimeValue).toBeDefined();
  });

  test('/docs serves an interactive reference page and its assets', async () => {
    const page = await fetch(`${server.url}/docs`);
    expect(page.headers.get('content-type')).toMatch(/html/);
    expect(await page.text()).toContain('/docs/assets/init.js');
    const init = await fetch(`${server.url}/docs/assets/init.js`);
    expect(init.status).toBe(200);
    expect(await init.text()).toContain('/openapi.json');
    const bundle = await fetch(`${server.url}/docs/assets/swagger-ui-bundle.js`);
    expect(bundle.status).toBe(200);
  });

  test('/metrics exposes the request histogram by route template and process metrics', async () => {
    const { text } = await getJson(`${server.url}/metrics`);
    expect(text).toMatch(
      /http_server_request_duration_seconds_bucket\{[^}]*route="\/data\/currency\/history\/:code"/,
    );
    expect(text).toContain('process_cpu_user_seconds_total');
  });

  test('every response carries a request id, echoing a sane incoming one', async () => {
    const echoed = await getJson(`${server.url}/health/live`, undefined, {
      headers: { 'x-request-id': 'abc-123' },
    });
    expect(echoed.headers.get('x-request-id')).toBe('abc-123');
    const generated = await getJson(`${server.url}/health/live`, undefined, {
      headers: { 'x-request-id': 'bad id\n' },
    });
    expect(generated.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  test('unknown routes answer 404 in the error shape', async () => {
    const { status, body } = await getJson(`${server.url}/data/nothing-here`, readToken);
    expect(status).toBe(404);
    expect(body.error.code).toBe('not_found');
  });
});
