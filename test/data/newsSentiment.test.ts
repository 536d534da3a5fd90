import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { sql } from 'slonik';
import { z } from 'zod';
import { getJson } from '../support/http.ts';
import {
  startCountingDataModule,
  startDataModule,
  type DataModuleHarness,
} from '../support/dataModule.ts';
import { ndjson, newsEvent, post } from '../support/signals.ts';

let harness: DataModuleHarness;

beforeAll(async () => {
  harness = await startDataModule();
});

afterAll(async () => {
  await harness.close();
});

const addNews = (body: unknown, token = harness.writeToken) =>
  post(`${harness.server.url}/data/news-sentiment/add`, token, body);
const addNewsBulk = (body: unknown, contentType = 'application/json') =>
  post(`${harness.server.url}/data/news-sentiment/add/bulk`, harness.writeToken, body, contentType);

const storedRow = z.object({
  article_id: z.number(),
  publish_date: z.date(),
  title: z.string(),
  weighted_score: z.number(),
  received_at: z.date(),
});

async function storedArticles(ids: number[]) {
  return harness.runtime.pool.any(sql.type(storedRow)`
    SELECT article_id, publish_date, title, weighted_score, received_at FROM news_sentiment
    WHERE article_id = ANY(${sql.array(ids, 'int8')}) ORDER BY article_id
  `);
}

describe('POST /data/news-sentiment/add', () => {
  test('stores the harvester payload with weightedScore and the server receipt time', async () => {
    const before = Date.now();
    const { status, body } = await addNews(newsEvent());
    expect(status).toBe(200);
    expect(body).toEqual({ successful: true });
    const [row] = await storedArticles([101]);
    expect(row!.publish_date.toISOString()).toBe('2026-03-01T12:00:00.000Z');
    expect(row!.weighted_score).toBeCloseTo(0.75 * 0.8, 12);
    // lastUpdated in the payload (2026) is ignored: the server stamps receipt.
    expect(row!.received_at.getTime()).toBeGreaterThanOrEqual(before - 1000);
    expect(row!.received_at.getTime()).toBeLessThanOrEqual(Date.now() + 1000);
  });

  test('a repeated articleId is accepted and stored once, keeping the first version', async () => {
    const first = await addNews(newsEvent({ articleId: 202, title: 'First title' }));
    const again = await addNews(newsEvent({ articleId: 202, title: 'Second title' }));
    expect(first.status).toBe(200);
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ successful: true });
    const rows = await storedArticles([202]);
    expect(rows.map((r) => r.title)).toEqual(['First title']);
  });

  test('ISO timestamps with a zone are converted; zone-less ones are UTC; unknown fields ignored', async () => {
    await addNews(
      newsEvent({ articleId: 301, publishDate: '2026-03-01T14:00:00+02:00', extra: 'x' }),
    );
    await addNews(newsEvent({ articleId: 302, publishDate: '2026-03-01T12:00:00' }));
    const rows = await storedArticles([301, 302]);
    expect(rows.map((r) => r.publish_date.toISOString())).toEqual([
      '2026-03-01T12:00:00.000Z',
      '2026-03-01T12:00:00.000Z',
    ]);
  });

  test('lastUpdated is optional', async () => {
    const { lastUpdated: _ignored, ...withoutLastUpdated } = newsEvent({ articleId: 303 });
    expect((await addNews(withoutLastUpdated)).status).toBe(200);
  });

  const invalid: Array<[string, string, Record<string, unknown>]> = [
    ['articleId', 'missing', { articleId: undefined }],
    ['articleId', 'not an integer', { articleId: 1.5 }],
    ['articleId', 'a string', { articleId: '101' }],
    ['articleId', 'beyond safe integers', { articleId: 2 ** 60 }],
    ['title', 'missing', { title: undefined }],
    ['title', 'empty', { title: '' }],
    ['title', 'a number', { title: 42 }],
    ['title', 'over 1000 characters', { title: 'x'.repeat(1001) }],
    ['title', 'a NUL character', { title: 'nul \u0000 inside' }],
    ['title', 'a lone surrogate', { title: 'lone \ud800 surrogate' }],
    ['publishDate', 'missing', { publishDate: undefined }],
    ['publishDate', 'another format', { publishDate: '01/03/2026 12:00' }],
    ['publishDate', 'no such day', { publishDate: '2026-02-30 12:00:00' }],
    ['publishDate', 'epoch seconds', { publishDate: 1772366400 }],
    ['source', 'missing', { source: undefined }],
    ['source', 'empty', { source: '' }],
    ['source', 'over 200 characters', { source: 'x'.repeat(201) }],
    ['url', 'missing', { url: undefined }],
    ['url', 'not a URL', { url: 'not a url' }],
    ['url', 'not http(s)', { url: 'ftp://example.com/file' }],
    ['url', 'over 2048 characters', { url: `https://example.com/${'a'.repeat(2048)}` }],
    ['positiveScore', 'a string', { positiveScore: '0.5' }],
    ['neutralScore', 'null', { neutralScore: null }],
    ['negativeScore', 'missing', { negativeScore: undefined }],
    ['compositeScore', 'out of range', { compositeScore: 1e7 }],
    ['cryptoRelevance', 'a boolean', { cryptoRelevance: true }],
  ];
  test.each(invalid)('400 naming %s when %s', async (field, _why, override) => {
    const { status, body } = await addNews(newsEvent({ articleId: 999, ...override }));
    expect(status).toBe(400);
    expect(body.error.code).toBe('validation_error');
    expect(body.error.message).toContain(`'${field}'`);
    expect(body.error.details[0].path).toBe(`body.${field}`);
    expect(await storedArticles([999])).toEqual([]);
  });

  test('a number JSON cannot hold as a double (1e400) is refused, not stored as Infinity', async () => {
    const text = JSON.stringify(newsEvent({ articleId: 998 })).replace(
      '"compositeScore":0.75',
      '"compositeScore":1e400',
    );
    const { status, body } = await addNews(text);
    expect(status).toBe(400);
    expect(body.error.details[0].path).toBe('body.compositeScore');
  });

  test('a body that is not JSON is a 400, a wrong media type a 415, an array a 400', async () => {
    const broken = await addNews('{"articleId": 1,');
    expect(broken.status).toBe(400);
    expect(broken.body.error.code).toBe('invalid_json');
    const wrongType = await post(
      `${harness.server.url}/data/news-sentiment/add`,
      harness.writeToken,
      'articleId=1',
      'text/plain',
    );
    expect(wrongType.status).toBe(415);
    expect(wrongType.body.error.code).toBe('unsupported_media_type');
    const array = await addNews([newsEvent()]);
    expect(array.status).toBe(400);
  });

  test('needs a token with the write scope', async () => {
    expect((await addNews(newsEvent(), '')).status).toBe(401);
    const forbidden = await addNews(newsEvent(), harness.readToken);
    expect(forbidden.status).toBe(403);
    expect(forbidden.body.error.code).toBe('insufficient_scope');
  });
});

describe('POST /data/news-sentiment/add/bulk', () => {
  test('counts accepted, duplicate (in the batch and already stored) and rejected items', async () => {
    await addNews(newsEvent({ articleId: 500 }));
    const items = [
      newsEvent({ articleId: 501, title: 'kept' }),
      newsEvent({ articleId: 502 }),
      newsEvent({ articleId: 501, title: 'repeat in batch' }),
      newsEvent({ articleId: 503, url: 'not a url' }),
      newsEvent({ articleId: 500 }),
      'not an object',
    ];
    const { status, body } = await addNewsBulk(items);
    expect(status).toBe(200);
    expect(body).toMatchObject({ received: 6, accepted: 2, duplicates: 2, rejected: 2 });
    expect(body.rejections.map((r: { index: number }) => r.index)).toEqual([3, 5]);
    const single = await addNews(newsEvent({ articleId: 503, url: 'not a url' }));
    expect(body.rejections[0]).toEqual({
      index: 3,
      status: 400,
      code: 'validation_error',
      message: single.body.error.message,
      details: single.body.error.details,
    });
    expect((await storedArticles([501])).map((r) => r.title)).toEqual(['kept']);
    expect(await storedArticles([503])).toEqual([]);
  });

  test('accepts NDJSON, blank lines skipped', async () => {
    const text = `${ndjson([newsEvent({ articleId: 601 }), newsEvent({ articleId: 602 })])}\n\n`;
    const { status, body } = await addNewsBulk(text, 'application/x-ndjson');
    expect(status).toBe(200);
    expect(body).toEqual({
      received: 2,
      accepted: 2,
      duplicates: 0,
      rejected: 0,
      rejections: [],
    });
    expect((await storedArticles([601, 602])).length).toBe(2);
  });

  test('/metrics counts items by outcome', async () => {
    const { text } = await getJson(`${harness.server.url}/metrics`);
    for (const outcome of ['accepted', 'duplicate', 'rejected']) {
      expect(text).toMatch(
        new RegExp(`data_signal_items_total\\{kind="news_sentiment",outcome="${outcome}"\\} [1-9]`),
      );
    }
  });

  test('an empty array stores nothing and says so', async () => {
    const { status, body } = await addNewsBulk([]);
    expect(status).toBe(200);
    expect(body).toMatchObject({ received: 0, accepted: 0, duplicates: 0, rejected: 0 });
  });

  test('thousands of items go to the database in one statement', async () => {
    const counted = await startCountingDataModule(harness.runtime);
    try {
      const send = (items: unknown[]) =>
        post(`${counted.url}/data/news-sentiment/add/bulk`, harness.writeToken, items);
      // A first request verifies the token; the next ones within a second find it kept.
      expect((await send([newsEvent({ articleId: 699 })])).body.accepted).toBe(1);
      const start = counted.statements();
      expect((await send([newsEvent({ articleId: 700 })])).body.accepted).toBe(1);
      const forOne = counted.statements() - start;
      const many = Array.from({ length: 5000 }, (_, i) => newsEvent({ articleId: 10_000 + i }));
      const before = counted.statements();
      const { body } = await send(many);
      expect(body.accepted).toBe(5000);
      // One insert for 5,000 items (and the token check if its kept verification expired).
      expect(counted.statements() - before).toBeLessThanOrEqual(2);
      // The insert, and the token check when its kept verification has expired in between.
      expect(forOne).toBeGreaterThanOrEqual(1);
      expect(forOne).toBeLessThanOrEqual(2);
    } finally {
      await counted.close();
    }
    const stored = await harness.runtime.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*) AS n FROM news_sentiment WHERE article_id BETWEEN 10000 AND 14999
    `);
    expect(stored).toBe(5000);
  });
});

describe('GET /data/news-sentiment', () => {
  beforeAll(async () => {
    const events = [
      {
        articleId: 9001,
        publishDate: '2026-04-01 10:05:00',
        compositeScore: 0.5,
        cryptoRelevance: 0.8,
      },
      {
        articleId: 9002,
        publishDate: '2026-04-01 10:40:00',
        compositeScore: -0.2,
        cryptoRelevance: 0.5,
      },
      {
        articleId: 9003,
        publishDate: '2026-04-01T11:10:00Z',
        compositeScore: 0.9,
        cryptoRelevance: 1,
      },
      {
        articleId: 9004,
        publishDate: '2026-04-01 13:00:00',
        compositeScore: 1,
        cryptoRelevance: 1,
      },
      {
        articleId: 9005,
        publishDate: '2026-04-01 09:59:59',
        compositeScore: 1,
        cryptoRelevance: 1,
      },
    ];
    const { body } = await addNewsBulk(events.map((e) => newsEvent(e)));
    expect(body.accepted).toBe(5);
  });

  const read = (query: string, token = harness.readToken) =>
    getJson(`${harness.server.url}/data/news-sentiment?${query}`, token);

  test('hourly buckets: count and weighted score, hand-computed', async () => {
    const { status, body } = await read(
      'from=2026-04-01 10:00:00&to=2026-04-01T13:00:00Z&intervalSeconds=3600',
    );
    expect(status).toBe(200);
    expect(body.buckets).toHaveLength(2);
    const [ten, eleven] = body.buckets;
    expect(ten.timestamp).toBe('2026-04-01T10:00:00.000Z');
    expect(ten.count).toBe(2);
    // weighted scores 0.5×0.8 = 0.4 and −0.2×0.5 = −0.1
    expect(ten.weightedScore).toBeCloseTo(0.15, 12);
    expect(ten.weightedScoreSum).toBeCloseTo(0.3, 12);
    expect(ten.compositeScore).toBeCloseTo(0.15, 12);
    expect(ten.cryptoRelevance).toBeCloseTo(0.65, 12);
    expect(eleven).toEqual({
      timestamp: '2026-04-01T11:00:00.000Z',
      count: 1,
      weightedScore: 0.9,
      weightedScoreSum: 0.9,
      compositeScore: 0.9,
      cryptoRelevance: 1,
    });
  });

  test('half-hour buckets split the first hour; empty buckets are left out', async () => {
    const { body } = await read(
      'from=2026-04-01 10:00:00&to=2026-04-01 13:00:00&intervalSeconds=1800',
    );
    expect(
      body.buckets.map((b: { timestamp: string; count: number; weightedScore: number }) => [
        b.timestamp,
        b.count,
        Math.round(b.weightedScore * 1e9) / 1e9,
      ]),
    ).toEqual([
      ['2026-04-01T10:00:00.000Z', 1, 0.4],
      ['2026-04-01T10:30:00.000Z', 1, -0.1],
      ['2026-04-01T11:00:00.000Z', 1, 0.9],
    ]);
  });

  test('an empty range answers an empty list', async () => {
    const { status, body } = await read('from=2020-01-01&to=2020-01-02');
    expect(status).toBe(200);
    expect(body).toEqual({ buckets: [] });
  });

  test.each([
    ['from=garbage', 'from'],
    ['from=2026-04-02&to=2026-04-01', 'to'],
    ['from=2026-04-01&to=2026-04-02&intervalSeconds=0', 'intervalSeconds'],
    ['from=2026-04-01&to=2026-04-02&intervalSeconds=1.5', 'intervalSeconds'],
  ])('400 naming the parameter for %s', async (query, parameter) => {
    const { status, body } = await read(query);
    expect(status).toBe(400);
    expect(body.error.details[0].path).toBe(`query.${parameter}`);
  });

  test('400 when the answer would exceed the bucket cap', async () => {
    const { status, body } = await read('from=2020-01-01&to=2026-01-01&intervalSeconds=1');
    expect(status).toBe(400);
    expect(body.error.code).toBe('too_many_points');
  });

  test('needs the read scope', async () => {
    expect((await read('', harness.writeToken)).status).toBe(403);
  });
});
