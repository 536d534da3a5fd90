import { afterAll, beforeAll, expect, test } from '@jest/globals';
import type { Counter } from 'prom-client';
import { sql } from 'slonik';
import { metricsRegistry } from '../../src/shared/metrics.ts';
import { startApiHarness, type ApiHarness } from '../support/api.ts';
import { setSnapshot } from '../support/prices.ts';
import { eventually } from '../support/wait.ts';

let harness: ApiHarness;

beforeAll(async () => {
  harness = await startApiHarness();
  await setSnapshot(harness.runtime.pool, 'BTC', 64000.5, new Date());
});

afterAll(async () => {
  await harness.close();
});

test('POST: shares × current price, no session needed', async () => {
  const response = await harness
    .client()
    .post('/api/currency/value', { currencyCode: 'BTC', shares: 0.5 });
  expect(response.status).toBe(200);
  expect(response.body).toEqual({ value: 32000.25 });
  const lower = await harness
    .client()
    .post('/api/currency/value', { currencyCode: 'btc', shares: 2 });
  expect(lower.body).toEqual({ value: 128001 });
});

test('GET with the same fields in the query', async () => {
  const response = await harness.client().get('/api/currency/value?currencyCode=BTC&shares=3');
  expect(response.status).toBe(200);
  expect(response.body).toEqual({ value: 192001.5 });
});

test('404 for a currency without a price', async () => {
  for (const code of ['NOPE', 'DOGE']) {
    const response = await harness
      .client()
      .post('/api/currency/value', { currencyCode: code, shares: 1 });
    expect(response.status).toBe(404);
    expect(response.body.error.code).toBe('unknown_currency');
  }
  expect(
    (await harness.client().get('/api/currency/value?currencyCode=NOPE&shares=1')).status,
  ).toBe(404);
});

test.each([
  [{ currencyCode: 'BTC' }, 'body.shares'],
  [{ currencyCode: 'BTC', shares: -1 }, 'body.shares'],
  [{ currencyCode: 'BTC', shares: 'many' }, 'body.shares'],
  [{ shares: 1 }, 'body.currencyCode'],
])('400 for %j', async (body, path) => {
  const response = await harness.client().post('/api/currency/value', body);
  expect(response.status).toBe(400);
  expect(response.body.error.details[0].path).toBe(path);
});

test('GET: 400 for a missing or non-numeric shares', async () => {
  for (const query of ['currencyCode=BTC', 'currencyCode=BTC&shares=abc', 'shares=1']) {
    const response = await harness.client().get(`/api/currency/value?${query}`);
    expect(response.status).toBe(400);
  }
});

test('the data client reuses its snapshot until it hears of a change, then reads the new one', async () => {
  const cached = await startApiHarness({ DATA_CACHE_MS: '60000' });
  const listFetches = async () => {
    const metric = metricsRegistry.getSingleMetric('api_data_module_requests_total') as Counter;
    const { values } = await metric.get();
    return values
      .filter((v) => v.labels.route === 'all' && v.labels.outcome === 'ok')
      .reduce((sum, v) => sum + v.value, 0);
  };
  const valueOfEth = async () =>
    (await cached.client().post('/api/currency/value', { currencyCode: 'ETH', shares: 1 })).body
      .value as number;
  try {
    await eventually(() => cached.runtime.changeEvents()!.isListening, 30_000, 'the listener');
    await setSnapshot(cached.runtime.pool, 'ETH', 10, new Date());
    // The change is heard before the first read: otherwise a read may fetch the new list first
    // and the change, heard after it, make the next read fetch it again.
    await cached.runtime.changeEvents()!.sync();
    await eventually(async () => (await valueOfEth()) === 10, 10_000, 'the first price');
    const before = await listFetches();
    for (let i = 0; i < 5; i += 1) expect(await valueOfEth()).toBe(10);
    expect(await listFetches()).toBe(before);
    await setSnapshot(cached.runtime.pool, 'ETH', 20, new Date());
    await eventually(async () => (await valueOfEth()) === 20, 10_000, 'the changed price');
  } finally {
    await cached.close();
  }
});

test('currencies beyond the first page of the data module are priced too', async () => {
  const paged = await startApiHarness();
  try {
    // 1200 priced currencies; the cheapest ones come last in the data module's list.
    await paged.runtime.pool.query(sql.unsafe`
      INSERT INTO currencies (code, name)
      SELECT 'Z' || lpad(i::text, 4, '0'), 'Test coin ' || i FROM generate_series(1, 1200) AS i
    `);
    await paged.runtime.pool.query(sql.unsafe`
      INSERT INTO currency_snapshots (currency_code, price, observed_at, source)
      SELECT 'Z' || lpad(i::text, 4, '0'), 10000 - i, now(), 'test' FROM generate_series(1, 1200) AS i
    `);
    const last = await paged
      .client()
      .post('/api/currency/value', { currencyCode: 'Z1200', shares: 2 });
    expect(last.body).toEqual({ value: 2 * 8800 });
  } finally {
    await paged.close();
  }
});
