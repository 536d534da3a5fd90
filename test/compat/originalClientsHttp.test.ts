import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { sql } from 'slonik';
import { z } from 'zod';
import { startApiHarness, type ApiHarness } from '../support/api.ts';
import { insertCandles, setSnapshot } from '../support/prices.ts';
import { angularRequest, pythonPost, replay } from '../support/rawHttp.ts';

// The requests of the deployed clients (shared/spec/original-clients.md), replayed byte for
// byte against a real data module and API, and the fields those clients read from the answers.

const HOUR = 3_600_000;
let harness: ApiHarness;
const now = Date.now();
const hostOf = (url: string) => new URL(url).host;

beforeAll(async () => {
  // The analysis service runs on a host whose clock shows New York time, and is let in by network.
  harness = await startApiHarness({
    DATA_TRUSTED_NETWORKS: '127.0.0.1/32',
    DATA_NAIVE_TIME_ZONE: 'America/New_York',
  });
  const pool = harness.runtime.pool;
  await insertCandles(pool, [
    { code: 'BTC', time: new Date(now - 20 * HOUR), open: 50_000, volume: 2 },
    { code: 'BTC', time: new Date(now - HOUR), open: 55_000, volume: 1 },
    { code: 'ETH', time: new Date(now - 5 * HOUR), open: 4000 },
  ]);
  await setSnapshot(pool, 'BTC', 55_000, new Date(now - HOUR));
  await setSnapshot(pool, 'ETH', 3000, new Date(now - 5 * HOUR));
  await setSnapshot(pool, 'DOGE', 0.2, new Date(now - 40 * HOUR));
});

afterAll(async () => {
  await harness.close();
});

describe('the analysis service', () => {
  let predictionId: number;

  test('POST /data/predictions/add: reads predictionId from the 202', async () => {
    const answer = await replay(
      harness.dataUrl,
      pythonPost(
        hostOf(harness.dataUrl),
        '/data/predictions/add',
        '{"currencyCode": "BTC", "predictedPrice": 56123.45, "actualPrice": 55000.0, ' +
          '"priceDifference": 1123.45, "percentDifference": 2.04, "modelType": "lstm", ' +
          '"numRows": 40000, "lastUpdated": "2026-03-01T09:30:00"}',
      ),
    );
    expect(answer.status).toBe(202);
    expect(Number.isInteger(answer.body.predictionId)).toBe(true);
    predictionId = answer.body.predictionId;
  });

  test('POST /data/training-session/add: 200, naive local times read in DATA_NAIVE_TIME_ZONE', async () => {
    const answer = await replay(
      harness.dataUrl,
      pythonPost(
        hostOf(harness.dataUrl),
        '/data/training-session/add',
        `{"currency": "BTC", "prediction": ${predictionId}, "numRows": 40000, ` +
          '"epochsTrained": 12, "maxEpochs": 50, "startingLoss": 0.0931, "finalLoss": 0.0012, ' +
          '"modelType": "lstm", "queryType": "historical_price", ' +
          '"trainingStartTime": "2026-03-01T09:30:00", "trainingEndTime": "2026-03-01T09:41:07", ' +
          '"queryStartTime": "2026-03-01T09:29:58", "queryEndTime": "2026-03-01T09:29:59", ' +
          '"sequenceLength": 60, "batchSize": 32, "dimensionWidth": 136, ' +
          '"queryLoad": ["batches"], "queryBatchSize": 5000, "trainingDevice": "gpu_0", ' +
          '"shortSequenceLength": null, "mediumSequenceLength": null, "longSequenceLength": null}',
      ),
    );
    expect(answer.status).toBe(200);
    const stored = await harness.runtime.pool.one(sql.type(
      z.object({ start: z.date(), end: z.date() }),
    )`
      SELECT training_start_time AS start, training_end_time AS "end"
      FROM training_sessions WHERE prediction_id = ${predictionId}
    `);
    // 09:30 in New York on 1 March (EST, UTC−5) is 14:30 UTC.
    expect(stored.start.toISOString()).toBe('2026-03-01T14:30:00.000Z');
    expect(stored.end.toISOString()).toBe('2026-03-01T14:41:07.000Z');
  });

  test('POST :8080/api/news-sentiment/add: the API passes it on with its own token', async () => {
    const answer = await replay(
      harness.url,
      pythonPost(
        hostOf(harness.url),
        '/api/news-sentiment/add',
        '{"articleId": 918273, "title": "Bitcoin ETF inflows hit record", ' +
          '"publishDate": "2026-07-01 08:00:00", "source": "CoinDesk", ' +
          '"url": "https://www.coindesk.com/markets/2026/07/01/etf-inflows", ' +
          '"positiveScore": 0.81, "neutralScore": 0.15, "negativeScore": 0.04, ' +
          '"compositeScore": 0.77, "cryptoRelevance": 0.9}',
      ),
    );
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ successful: true });
    const stored = await harness.runtime.pool.one(sql.type(
      z.object({ publishDate: z.date(), weighted: z.number() }),
    )`
      SELECT publish_date AS "publishDate", weighted_score AS weighted
      FROM news_sentiment WHERE article_id = 918273
    `);
    // 08:00 in New York on 1 July (EDT, UTC−4).
    expect(stored.publishDate.toISOString()).toBe('2026-07-01T12:00:00.000Z');
    expect(stored.weighted).toBeCloseTo(0.693, 9);
  });

  test('a bad news item gets a 400 naming the field', async () => {
    const answer = await replay(
      harness.url,
      pythonPost(hostOf(harness.url), '/api/news-sentiment/add', '{"articleId": "x"}'),
    );
    expect(answer.status).toBe(400);
    expect(answer.body.error.details.map((d: { path: string }) => d.path)).toContain(
      'body.articleId',
    );
  });
});

test('POST /api/news-sentiment/add honours Idempotency-Key as the data module does', async () => {
  const post = (articleId: number) =>
    fetch(`${harness.url}/api/news-sentiment/add`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': 'scorer-retry-1' },
      body: JSON.stringify({
        articleId,
        title: 't',
        publishDate: '2026-07-02 08:00:00',
        source: 's',
        url: 'https://example.com/retry',
        positiveScore: 0.1,
        neutralScore: 0.8,
        negativeScore: 0.1,
        compositeScore: 0.2,
        cryptoRelevance: 0.5,
      }),
    });
  expect((await post(424_242)).status).toBe(200);
  const retry = await post(424_242);
  expect(retry.status).toBe(200);
  expect(retry.headers.get('idempotent-replayed')).toBe('true');
  const reused = await post(424_243);
  expect(reused.status).toBe(422);
  expect(((await reused.json()) as { error: { code: string } }).error.code).toBe(
    'idempotency_key_reused',
  );
  const stored = await harness.runtime.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int AS n FROM news_sentiment WHERE article_id IN (424242, 424243)
  `);
  expect(stored).toBe(1);
});

describe('the web front end (dev server at http://localhost:4200)', () => {
  let cookie: string;
  const api = (method: 'GET' | 'POST', path: string, body?: string) =>
    replay(harness.url, angularRequest(method, hostOf(harness.url), path, cookie, body));

  beforeAll(async () => {
    const { client } = await harness.signedInClient();
    cookie = client.cookieHeader();
  });

  test('its origin may call with credentials by default (CORS preflight)', async () => {
    const answer = await replay(
      harness.url,
      'OPTIONS /api/portfolio/add HTTP/1.1\r\n' +
        `Host: ${hostOf(harness.url)}\r\nConnection: keep-alive\r\nAccept: */*\r\n` +
        'Access-Control-Request-Method: POST\r\nAccess-Control-Request-Headers: content-type\r\n' +
        'Origin: http://localhost:4200\r\nSec-Fetch-Mode: cors\r\nSec-Fetch-Site: same-site\r\n' +
        'Sec-Fetch-Dest: empty\r\nReferer: http://localhost:4200/\r\n\r\n',
    );
    expect(answer.status).toBe(204);
    expect(answer.headers['access-control-allow-origin']).toBe('http://localhost:4200');
    expect(answer.headers['access-control-allow-credentials']).toBe('true');
  });

  test('currency cards: GET /api/currency/performance/{code}', async () => {
    const rating = async (code: string) =>
      (await api('GET', `/api/currency/performance/${code}`)).body;
    expect(await rating('BTC')).toEqual({ rating: 'up', changePercent: '+10.00%' });
    expect(await rating('ETH')).toEqual({ rating: 'down', changePercent: '-25.00%' });
    expect(await rating('DOGE')).toEqual({ rating: 'neutral', changePercent: '0.00%' });
    // The same 24-hour numbers as the snapshot.
    const all = (await api('GET', '/api/currency/all')).body.currencies;
    expect(all.find((c: { currencyCode: string }) => c.currencyCode === 'BTC').change24h).toBe(10);
    expect((await api('GET', '/api/currency/performance/NOPE')).status).toBe(404);
  });

  test('portfolio: adds by currency name with amounts as strings, reads it back by name', async () => {
    const added = await api(
      'POST',
      '/api/portfolio/add',
      '{"currencyName":"Bitcoin","shares":"2","walletDollars":"100"}',
    );
    expect(added.status).toBe(200);
    expect(added.body).toEqual({ successful: true });
    expect(
      (
        await api(
          'POST',
          '/api/portfolio/add',
          '{"currencyName":"Ethereum","shares":1.5,"walletDollars":0}',
        )
      ).status,
    ).toBe(200);
    const portfolio = (await api('GET', '/api/portfolio/get')).body;
    expect(
      portfolio.assets.map((a: { currencyCode: string; shares: number }) => [
        a.currencyCode,
        a.shares,
      ]),
    ).toEqual([
      ['BTC', 2],
      ['ETH', 1.5],
    ]);
    const profit = await api('GET', '/api/portfolio/history/profit/Bitcoin');
    expect(profit.status).toBe(200);
    expect(profit.body).toEqual({ value: 0 });
    expect((await api('GET', '/api/portfolio/history/profit/USD%20Coin')).status).toBe(404);
    const unknown = await api(
      'POST',
      '/api/portfolio/add',
      '{"currencyName":"Nocoin","shares":"1","walletDollars":"0"}',
    );
    expect(unknown.status).toBe(422);
    expect(unknown.body.error.details[0].path).toBe('body.currencyName');
    const notNumber = await api(
      'POST',
      '/api/portfolio/add',
      '{"currencyName":"Bitcoin","shares":"two","walletDollars":"0"}',
    );
    expect(notNumber.status).toBe(400);
  });

  test('portfolio history items carry lastUpdated (ISO) and id', async () => {
    const history = await api('GET', '/api/portfolio/history/get');
    expect(history.status).toBe(200);
    // The bucket of the last trade: with the default 60 s buckets a minute may have begun since.
    const last = history.body.findLast((p: { tradeOccurred: boolean }) => p.tradeOccurred);
    expect(last).toMatchObject({ totalWorth: 2 * 55_000 + 100 + 1.5 * 3000, tradeOccurred: true });
    expect(last.lastUpdated).toBe(last.timestamp);
    expect(new Date(last.lastUpdated).toISOString()).toBe(last.lastUpdated);
    expect(Number.isInteger(last.id)).toBe(true);
    const ids = history.body.map((p: { id: number }) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
  });

  test('asset history: a list per asset per point, never 204; one asset by name', async () => {
    const all = await api('GET', '/api/portfolio/history/get/asset');
    expect(all.status).toBe(200);
    type AssetPoint = { currencyCode: string; tradeOccurred: boolean };
    // Each asset's point of its last trade: a minute may have begun since (60 s buckets).
    const lastTrade = (points: AssetPoint[], code: string) =>
      points.findLast((p) => p.currencyCode === code && p.tradeOccurred);
    const latest = (code: string) => lastTrade(all.body, code);
    expect(latest('BTC')).toEqual({
      currencyCode: 'BTC',
      currencyName: 'Bitcoin',
      shares: 2,
      sharesValueInDollars: 110_000,
      assetWalletDollars: 100,
      valueChange: expect.any(Number),
      sharesChange: expect.any(Number),
      tradeOccurred: true,
      lastUpdated: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
    });
    expect(latest('ETH')).toMatchObject({ shares: 1.5, sharesValueInDollars: 4500 });
    const one = await api('GET', '/api/portfolio/history/get/asset/Ethereum');
    expect(one.status).toBe(200);
    expect(one.body.every((p: { currencyCode: string }) => p.currencyCode === 'ETH')).toBe(true);
    expect(lastTrade(one.body, 'ETH')).toEqual(latest('ETH'));
    const notHeld = await api('GET', '/api/portfolio/history/get/asset/Dogecoin');
    expect(notHeld.status).toBe(200);
    expect(notHeld.body).toEqual([]);
  });

  test('asset history of a new portfolio is an empty list', async () => {
    const { client } = await harness.signedInClient();
    const answer = await replay(
      harness.url,
      angularRequest(
        'GET',
        hostOf(harness.url),
        '/api/portfolio/history/get/asset',
        client.cookieHeader(),
      ),
    );
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual([]);
  });
});

describe('the news route without a trusted network', () => {
  let closed: ApiHarness;

  beforeAll(async () => {
    closed = await startApiHarness();
  });

  afterAll(async () => {
    await closed.close();
  });

  test('401 without a token; with a data token the caller’s own token is passed on', async () => {
    const body =
      '{"articleId": 5, "title": "t", "publishDate": "2026-07-01 08:00:00", "source": "s", ' +
      '"url": "https://example.com/a", "positiveScore": 0.1, "neutralScore": 0.8, ' +
      '"negativeScore": 0.1, "compositeScore": 0.0, "cryptoRelevance": 0.5}';
    const request = pythonPost(hostOf(closed.url), '/api/news-sentiment/add', body);
    const refused = await replay(closed.url, request);
    expect(refused.status).toBe(401);
    const withToken = (token: string) =>
      request.replace(
        'Connection: keep-alive\r\n',
        `Connection: keep-alive\r\nAuthorization: Bearer ${token}\r\n`,
      );
    expect((await replay(closed.url, withToken('not-a-token'))).status).toBe(401);
    const { createToken } = await import('../../src/data/tokens/tokenStore.ts');
    const { token } = await createToken(closed.runtime.pool, 'scorer', ['write']);
    const accepted = await replay(closed.url, withToken(token));
    expect(accepted.status).toBe(200);
    expect(accepted.body).toEqual({ successful: true });
  });
});
