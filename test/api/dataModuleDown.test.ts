import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { startApiHarness, type ApiHarness } from '../support/api.ts';
import type { ApiClient } from '../support/apiClient.ts';
import { setSnapshot } from '../support/prices.ts';

let harness: ApiHarness;
let holder: ApiClient;
let empty: ApiClient;

beforeAll(async () => {
  harness = await startApiHarness({ DATA_TIMEOUT_MS: '2000' });
  await setSnapshot(harness.runtime.pool, 'BTC', 100, new Date());
  ({ client: holder } = await harness.signedInClient());
  ({ client: empty } = await harness.signedInClient());
  await holder.post('/api/portfolio/add', { currencyCode: 'BTC', shares: 1, walletDollars: 5 });
});

afterAll(async () => {
  await harness.close();
});

function expectUnavailable(response: { status: number; body: any }) {
  expect(response.status).toBe(503);
  expect(response.body.error.code).toBe('dependency_unavailable');
  expect(response.body.error.message).toMatch(/market-data module is unavailable/);
}

test('with the data module stopped: a clear 503 where market data is needed, the rest works', async () => {
  await harness.stopData();
  try {
    expectUnavailable(await holder.get('/api/portfolio/get'));
    expectUnavailable(await holder.get('/api/portfolio/history/profit'));
    expectUnavailable(await holder.get('/api/portfolio/history/profit/BTC'));
    expectUnavailable(await holder.get('/api/portfolio/history/get'));
    expectUnavailable(
      await holder.post('/api/portfolio/add', { currencyCode: 'BTC', shares: 1, walletDollars: 0 }),
    );
    expectUnavailable(
      await harness.client().post('/api/currency/value', { currencyCode: 'BTC', shares: 2 }),
    );

    // Sign-in, sessions and answers that need no prices carry on.
    expect((await holder.get('/api/authorize/isloggedin')).status).toBe(200);
    expect((await holder.get('/api/portfolio/empty')).body).toEqual({ hasPortfolio: true });
    expect((await empty.get('/api/portfolio/get')).status).toBe(200);
    expect((await empty.get('/api/portfolio/history/profit')).body).toEqual({ value: 0 });

    const ready = await harness.client().get('/health/ready');
    expect(ready.status).toBe(503);
    expect(ready.body.checks.dataModule).not.toBe('ok');
    expect(ready.body.checks.database).toBe('ok');
    expect((await harness.client().get('/health/live')).status).toBe(200);
  } finally {
    await harness.startData();
  }
  // The failed add recorded nothing.
  const portfolio = await holder.get('/api/portfolio/get');
  expect(portfolio.status).toBe(200);
  expect(portfolio.body).toMatchObject({ shareBalance: 100, dollarBalance: 5, totalWorth: 105 });
  expect((await harness.client().get('/health/ready')).status).toBe(200);
});

test('a data module that refuses our token is a 503 too (and readiness says so)', async () => {
  const { DataClient } = await import('../../src/api/dataClient.ts');
  const client = new DataClient({
    baseUrl: harness.dataUrl,
    token: 'pdt_not-a-real-token',
    timeoutMs: 2000,
    cacheMs: 0,
    logger: harness.runtime.logger,
  });
  await expect(client.currentPrices()).rejects.toMatchObject({ status: 503 });
  await expect(client.ping()).rejects.toMatchObject({ status: 503 });
});

test('a data module that does not answer in time is a 503 after the time-out', async () => {
  const http = await import('node:http');
  const silent = http.createServer(() => {});
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  const { port } = silent.address() as { port: number };
  const { DataClient } = await import('../../src/api/dataClient.ts');
  const client = new DataClient({
    baseUrl: `http://127.0.0.1:${port}`,
    timeoutMs: 300,
    cacheMs: 0,
    logger: harness.runtime.logger,
  });
  try {
    await expect(client.history('BTC', 1, 60)).rejects.toMatchObject({ status: 503 });
  } finally {
    silent.closeAllConnections();
    await new Promise((resolve) => silent.close(resolve));
  }
});
