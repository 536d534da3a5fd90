import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { sql } from 'slonik';
import { z } from 'zod';
import { createToken } from '../../src/data/tokens/tokenStore.ts';
import { MAX_DOLLARS, MAX_PRICE, MAX_SHARES } from '../../src/shared/amounts.ts';
import { startApiHarness, type ApiHarness } from '../support/api.ts';
import type { ApiClient } from '../support/apiClient.ts';
import { setSnapshot } from '../support/prices.ts';
import { post, predictionRequest } from '../support/signals.ts';

// Prices and amounts are bounded (src/shared/amounts.ts) so that price × shares and every sum
// stays finite: no answer may carry null where a number belongs. Checked on a single write, on
// the bulk writes and on the holdings.

let harness: ApiHarness;
let writeToken: string;
let me: ApiClient;

beforeAll(async () => {
  harness = await startApiHarness();
  writeToken = (await createToken(harness.runtime.pool, 'loader', ['write'])).token;
  me = (await harness.signedInClient()).client;
});

afterAll(async () => {
  await harness.close();
});

const data = (path: string, body: unknown) => post(`${harness.dataUrl}${path}`, writeToken, body);

/** Every number in an answer, recursively: none may be null where the schema says number. */
function numbersIn(value: unknown): unknown[] {
  if (Array.isArray(value)) return value.flatMap(numbersIn);
  if (value && typeof value === 'object') {
    return Object.entries(value).flatMap(([key, v]) =>
      /(shares|dollars|balance|worth|value|price)/i.test(key) && typeof v !== 'object'
        ? [v]
        : numbersIn(v),
    );
  }
  return [];
}

describe('price bounds on writes', () => {
  test('single write: a prediction price of 1e307 is a 400 naming the field', async () => {
    const answer = await data(
      '/data/predictions/add',
      predictionRequest({ predictedPrice: 1e307 }),
    );
    expect(answer.status).toBe(400);
    expect(answer.body.error.message).toMatch(/'predictedPrice'/);
    const fine = await data(
      '/data/predictions/add',
      predictionRequest({ predictedPrice: MAX_PRICE }),
    );
    expect(fine.status).toBe(202);
  });

  test('bulk writes: a price of 1e307 is rejected by index, the rest stored', async () => {
    const prices = await data('/data/prices/bulk', [
      { code: 'BTC', time: '2024-02-01T00:00:00Z', price: 1e307 },
      { code: 'BTC', time: '2024-02-01T00:01:00Z', price: 42000 },
    ]);
    expect(prices.status).toBe(200);
    expect(prices.body).toMatchObject({ accepted: 1, rejected: 1 });
    expect(prices.body.rejections[0]).toMatchObject({
      index: 0,
      status: 400,
      message: `prices must be ≤ ${MAX_PRICE}`,
    });
    const predictions = await data('/data/predictions/add/bulk', [
      predictionRequest({ actualPrice: -1e307 }),
      predictionRequest(),
    ]);
    expect(predictions.status).toBe(200);
    expect(predictions.body).toMatchObject({ accepted: 1, rejected: 1 });
    expect(predictions.body.rejections[0].message).toMatch(/'actualPrice'/);
  });
});

describe('amount bounds on holdings', () => {
  const add = (currencyCode: string, shares: number, walletDollars: number) =>
    me.post('/api/portfolio/add', { currencyCode, shares, walletDollars });

  test('the largest holding at the largest price is valued with finite numbers', async () => {
    await setSnapshot(harness.runtime.pool, 'BTC', MAX_PRICE, new Date());
    expect((await add('BTC', MAX_SHARES, MAX_DOLLARS)).status).toBe(200);
    const portfolio = await me.get('/api/portfolio/get');
    expect(portfolio.status).toBe(200);
    const numbers = numbersIn(portfolio.body);
    expect(numbers.length).toBeGreaterThan(0);
    for (const n of numbers) expect(Number.isFinite(n)).toBe(true);
    expect(portfolio.body.totalWorth).toBe(MAX_SHARES * MAX_PRICE + MAX_DOLLARS);
  });

  test('an amount past the bound is a 400; a holding growing past it a 422, unchanged', async () => {
    const tooMany = await add('BTC', MAX_SHARES * 10, 0);
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.error.message).toMatch(/'shares'/);
    const more = await add('BTC', 1e6, 0);
    expect(more.status).toBe(422);
    expect(more.body.error.code).toBe('holding_too_large');
    const richer = await add('BTC', 0, 1e6);
    expect(richer.status).toBe(422);
    expect(richer.body.error.details[0].path).toBe('body.walletDollars');
    const held = await harness.runtime.pool.one(sql.type(
      z.object({ shares: z.number(), dollars: z.number() }),
    )`
      SELECT sum(shares) AS shares, sum(wallet_dollars) AS dollars FROM app.holdings
      WHERE currency_code = 'BTC'`);
    expect(held).toEqual({ shares: MAX_SHARES, dollars: MAX_DOLLARS });
  });

  test('shares × a price stored before the bound is a 422, never a null value', async () => {
    await setSnapshot(harness.runtime.pool, 'ETH', 1e300, new Date());
    const value = await me.get(`/api/currency/value?currencyCode=ETH&shares=${MAX_SHARES}`);
    expect(value.status).toBe(422);
    expect(value.body.error.code).toBe('value_out_of_range');
    const bought = await add('ETH', MAX_SHARES, 0);
    expect(bought.status).toBe(422);
    expect(bought.body.error.code).toBe('value_out_of_range');
    const tooMany = await me.get(`/api/currency/value?currencyCode=BTC&shares=1e16`);
    expect(tooMany.status).toBe(400);
  });
});
