import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { sql } from 'slonik';
import { startApiHarness, type ApiHarness } from '../support/api.ts';
import type { ApiClient } from '../support/apiClient.ts';
import { setSnapshot } from '../support/prices.ts';

let harness: ApiHarness;

beforeAll(async () => {
  harness = await startApiHarness();
});

afterAll(async () => {
  await harness.close();
});

const price = (code: string, value: number) =>
  setSnapshot(harness.runtime.pool, code, value, new Date());
const add = (client: ApiClient, currencyCode: string, shares: number, walletDollars: number) =>
  client.post('/api/portfolio/add', { currencyCode, shares, walletDollars });

describe('a new portfolio', () => {
  test('is empty: zero balances, no assets, no profit, no history', async () => {
    const { client } = await harness.signedInClient();
    const portfolio = await client.get('/api/portfolio/get');
    expect(portfolio.status).toBe(200);
    expect(portfolio.body).toEqual({
      id: expect.any(Number),
      dollarBalance: 0,
      shareBalance: 0,
      totalWorth: 0,
      lastUpdated: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      assets: [],
    });
    expect((await client.get('/api/portfolio/empty')).body).toEqual({ hasPortfolio: false });
    expect((await client.get('/api/portfolio/history/profit')).body).toEqual({ value: 0 });
    const notHeld = await client.get('/api/portfolio/history/profit/BTC');
    expect(notHeld.status).toBe(404);
    expect(notHeld.body.error.code).toBe('not_held');
    const history = await client.get('/api/portfolio/history/get');
    expect(history.status).toBe(204);
    expect(history.text).toBe('');
  });
});

describe('adding, valuing and profit', () => {
  let client: ApiClient;

  beforeAll(async () => {
    ({ client } = await harness.signedInClient());
    await price('BTC', 100);
    await price('ETH', 10);
    expect((await add(client, 'BTC', 2, 50)).body).toEqual({ successful: true });
    await price('BTC', 120);
    expect((await add(client, 'btc', 1, 0)).status).toBe(200);
    expect((await add(client, 'ETH', 10, 25)).status).toBe(200);
    await price('BTC', 150);
    await price('ETH', 8);
  });

  test('the portfolio at current prices, largest asset first', async () => {
    const { status, body } = await client.get('/api/portfolio/get');
    expect(status).toBe(200);
    expect(body).toMatchObject({ dollarBalance: 75, shareBalance: 530, totalWorth: 605 });
    expect(body.assets).toEqual([
      {
        id: expect.any(Number),
        currencyName: 'Bitcoin',
        currencyCode: 'BTC',
        shares: 3,
        sharesValueInDollars: 450,
        assetWalletDollars: 50,
        totalValueInDollars: 500,
        lastUpdated: expect.any(String),
      },
      {
        id: expect.any(Number),
        currencyName: 'Ethereum',
        currencyCode: 'ETH',
        shares: 10,
        sharesValueInDollars: 80,
        assetWalletDollars: 25,
        totalValueInDollars: 105,
        lastUpdated: expect.any(String),
      },
    ]);
    expect(Date.parse(body.lastUpdated)).toBe(
      Math.max(...body.assets.map((a: any) => Date.parse(a.lastUpdated))),
    );
    expect((await client.get('/api/portfolio/empty')).body).toEqual({ hasPortfolio: true });
  });

  test('profit is Σ shares × (current price − price when acquired)', async () => {
    // BTC: 3 × 150 − (2 × 100 + 1 × 120) = 130; ETH: 10 × 8 − 10 × 10 = −20.
    expect((await client.get('/api/portfolio/history/profit')).body).toEqual({ value: 110 });
    expect((await client.get('/api/portfolio/history/profit/BTC')).body).toEqual({ value: 130 });
    expect((await client.get('/api/portfolio/history/profit/eth')).body).toEqual({ value: -20 });
    expect((await client.get('/api/portfolio/history/profit/DOGE')).status).toBe(404);
  });

  test('every change is recorded with its time and the price at that time', async () => {
    const portfolioId = (await client.get('/api/portfolio/get')).body.id;
    const rows = (await harness.runtime.pool.any(sql.unsafe`
      SELECT currency_code AS code, shares_delta AS shares, dollars_delta AS dollars,
             price, shares_after AS "sharesAfter", changed_at AS "changedAt"
      FROM app.holding_changes WHERE portfolio_id = ${portfolioId}
      ORDER BY id
    `)) as Array<Record<string, any>>;
    expect(rows.map(({ changedAt: _, ...row }) => row)).toEqual([
      { code: 'BTC', shares: 2, dollars: 50, price: 100, sharesAfter: 2 },
      { code: 'BTC', shares: 1, dollars: 0, price: 120, sharesAfter: 3 },
      { code: 'ETH', shares: 10, dollars: 25, price: 10, sharesAfter: 10 },
    ]);
    const times = rows.map((r) => (r.changedAt as Date).getTime());
    expect([...times].sort((a, b) => a - b)).toEqual(times);
    expect(Date.now() - times[0]!).toBeLessThan(60_000);
  });

  test('negative amounts remove; removed shares take their share of the cost', async () => {
    expect((await add(client, 'BTC', -1.5, -50)).status).toBe(200);
    const { body } = await client.get('/api/portfolio/get');
    const btc = body.assets.find((a: any) => a.currencyCode === 'BTC');
    expect(btc).toMatchObject({ shares: 1.5, sharesValueInDollars: 225, assetWalletDollars: 0 });
    // Cost of the 1.5 left: 320 × 1.5 / 3 = 160; profit 1.5 × 150 − 160 = 65.
    expect((await client.get('/api/portfolio/history/profit/BTC')).body).toEqual({ value: 65 });
  });

  test('removing more than is held is refused (422) and changes nothing', async () => {
    const before = (await client.get('/api/portfolio/get')).body;
    const tooMany = await add(client, 'BTC', -2, 0);
    expect(tooMany.status).toBe(422);
    expect(tooMany.body.error.code).toBe('insufficient_shares');
    const tooMuch = await add(client, 'ETH', 0, -26);
    expect(tooMuch.status).toBe(422);
    expect(tooMuch.body.error.code).toBe('insufficient_wallet_dollars');
    expect((await client.get('/api/portfolio/get')).body).toEqual(before);
  });

  test('selling everything removes the asset; 0.1 + 0.2 − 0.3 counts as nothing left', async () => {
    const { client: trader } = await harness.signedInClient();
    await add(trader, 'ETH', 0.1, 0);
    await add(trader, 'ETH', 0.2, 0);
    expect((await add(trader, 'ETH', -0.3, 0)).status).toBe(200);
    const { body } = await trader.get('/api/portfolio/get');
    expect(body.assets).toEqual([]);
    expect((await trader.get('/api/portfolio/empty')).body).toEqual({ hasPortfolio: false });
    expect((await trader.get('/api/portfolio/history/profit/ETH')).status).toBe(404);
  });
});

describe('bad input', () => {
  let client: ApiClient;
  beforeAll(async () => {
    ({ client } = await harness.signedInClient());
  });

  test('422 for a currency the data module does not price (unknown, or no price yet)', async () => {
    const unknown = await add(client, 'NOPE', 1, 0);
    expect(unknown.status).toBe(422);
    expect(unknown.body.error.code).toBe('unknown_currency');
    expect((await add(client, 'DOGE', 1, 0)).status).toBe(422);
    expect((await client.get('/api/portfolio/empty')).body).toEqual({ hasPortfolio: false });
  });

  test.each([
    [{ shares: 1, walletDollars: 0 }, 'body.currencyCode'],
    [{ currencyCode: 'BTC', shares: 'one', walletDollars: 0 }, 'body.shares'],
    [{ currencyCode: 'BTC', shares: 1 }, 'body.walletDollars'],
    [{ currencyCode: 'B TC', shares: 1, walletDollars: 0 }, 'body.currencyCode'],
    [{ currencyCode: 'BTC', shares: 1e300, walletDollars: 0 }, 'body.shares'],
  ])('400 for %j', async (body, path) => {
    const response = await client.post('/api/portfolio/add', body);
    expect(response.status).toBe(400);
    expect(response.body.error.details[0].path).toBe(path);
  });

  test('404 for a profit path naming neither a code nor a currency name', async () => {
    const response = await client.get('/api/portfolio/history/profit/B-TC');
    expect(response.status).toBe(404);
    expect(response.body.error.code).toBe('unknown_currency');
  });

  test('a portfolio missing for an existing user is created on first use', async () => {
    const { client: fresh, userId } = await harness.signedInClient();
    await harness.runtime.pool.query(
      sql.unsafe`DELETE FROM app.portfolios WHERE user_id = ${userId}`,
    );
    const responses = await Promise.all([
      fresh.get('/api/portfolio/get'),
      fresh.get('/api/portfolio/get'),
    ]);
    expect(responses.map((r) => r.status)).toEqual([200, 200]);
    expect(responses[0].body.id).toBe(responses[1].body.id);
  });

  test('400 for broken JSON', async () => {
    const response = await client.request('POST', '/api/portfolio/add', {
      body: '{"currencyCode": "BTC",',
      headers: { 'content-type': 'application/json' },
    });
    expect(response.status).toBe(400);
  });

  test.each([
    ['hours=0', 'query.hours'],
    ['hours=87601', 'query.hours'],
    ['hours=1.5', 'query.hours'],
    ['intervalSeconds=0', 'query.intervalSeconds'],
    ['hours=1&intervalSeconds=3601', 'query.intervalSeconds'],
    ['hours=87600&intervalSeconds=60', 'query.intervalSeconds'],
  ])('history: 400 for %s', async (query, path) => {
    const response = await client.get(`/api/portfolio/history/get?${query}`);
    expect(response.status).toBe(400);
    expect(response.body.error.details[0].path).toBe(path);
  });

  test('every portfolio route needs a session', async () => {
    const anonymous = harness.client();
    for (const path of [
      '/api/portfolio/get',
      '/api/portfolio/empty',
      '/api/portfolio/history/get',
      '/api/portfolio/history/profit',
      '/api/portfolio/history/profit/BTC',
    ]) {
      const response = await anonymous.get(path);
      expect(response.status).toBe(401);
      expect(response.body.error.code).toBe('not_signed_in');
    }
    expect(
      (
        await anonymous.post('/api/portfolio/add', {
          currencyCode: 'BTC',
          shares: 1,
          walletDollars: 0,
        })
      ).status,
    ).toBe(401);
  });
});
