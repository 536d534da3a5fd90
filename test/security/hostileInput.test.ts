import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import sharp from 'sharp';
import { sql } from 'slonik';
import { z } from 'zod';
import { createToken } from '../../src/data/tokens/tokenStore.ts';
import { startApiHarness, type ApiHarness } from '../support/api.ts';
import type { ApiClient } from '../support/apiClient.ts';
import { getJson } from '../support/http.ts';
import { solid, SVG_WITH_SCRIPT } from '../support/images.ts';
import { setSnapshot } from '../support/prices.ts';

let harness: ApiHarness;
let me: { client: ApiClient; userId: number };
let token: string;

beforeAll(async () => {
  harness = await startApiHarness();
  await setSnapshot(harness.runtime.pool, 'BTC', 100, new Date());
  me = await harness.signedInClient();
  ({ token } = await createToken(harness.runtime.pool, 'hostile', ['read', 'write']));
});

afterAll(async () => {
  await harness.close();
});

const ROW_COUNTS = sql.type(z.object({ n: z.number() }))`
  SELECT (SELECT count(*) FROM predictions) + (SELECT count(*) FROM news_sentiment)
       + (SELECT count(*) FROM training_sessions) + (SELECT count(*) FROM currencies)
       + (SELECT count(*) FROM price_observations) + (SELECT count(*) FROM app.users)
       + (SELECT count(*) FROM app.holdings) + (SELECT count(*) FROM app.profile_pictures) AS n`;

function expectErrorShape(response: { status: number; body: any }) {
  expect(response.status).toBeLessThan(500);
  if (response.status >= 400) {
    expect(response.body.error).toEqual({
      code: expect.any(String),
      message: expect.any(String),
      details: expect.any(Array),
    });
  }
}

describe('uploads: polyglots are refused or re-encoded to a clean image', () => {
  const upload = (bytes: Buffer, filename: string, type: string) => {
    const body = new FormData();
    body.append('file', new Blob([new Uint8Array(bytes)], { type }), filename);
    return me.client.request('POST', '/api/account/image/upload', {
      body,
      headers: { 'x-csrf-token': me.client.jar.get('csrf-token') ?? '' },
    });
  };
  const SCRIPT = '<script>alert(document.cookie)</script>';

  test.each([
    [
      'a GIF/HTML polyglot',
      async () =>
        Buffer.concat([
          Buffer.from(`GIF89a/*<html><body>${SCRIPT}</body></html>*/`),
          await solid(8, 8).gif().toBuffer(),
        ]),
      'avatar.gif',
      'image/gif',
    ],
    [
      'a PNG with a script after its end',
      async () =>
        Buffer.concat([
          await solid(12, 12).png().toBuffer(),
          Buffer.from(`<html>${SCRIPT}</html>`),
        ]),
      'avatar.png',
      'image/png',
    ],
    [
      'a JPEG with HTML in a comment segment',
      async () => {
        const jpeg = await solid(12, 12).jpeg().toBuffer();
        const comment = Buffer.from(SCRIPT);
        const segment = Buffer.concat([
          Buffer.from([0xff, 0xfe, (comment.length + 2) >> 8, (comment.length + 2) & 0xff]),
          comment,
        ]);
        return Buffer.concat([jpeg.subarray(0, 2), segment, jpeg.subarray(2)]);
      },
      'avatar.jpg',
      'image/jpeg',
    ],
    ['an SVG with a script named .png', async () => SVG_WITH_SCRIPT, 'avatar.png', 'image/png'],
    [
      'HTML named .gif',
      async () => Buffer.from(`<!doctype html>${SCRIPT}`),
      'avatar.gif',
      'image/gif',
    ],
  ])('%s', async (_, make, filename, type) => {
    const response = await upload(await make(), filename, type);
    expectErrorShape(response);
    const served = await me.client.get(`/api/account/get/${me.userId}/profile-picture`);
    if (response.status === 200) {
      expect(served.status).toBe(200);
      expect(served.headers.get('content-type')).toMatch(/^image\/(png|jpeg|gif|webp)$/);
      expect(served.headers.get('x-content-type-options')).toBe('nosniff');
      expect(served.bytes.includes(Buffer.from('<script'))).toBe(false);
      expect(served.bytes.includes(Buffer.from('<html'))).toBe(false);
      const info = await sharp(served.bytes).metadata();
      expect(info.width).toBeGreaterThan(0);
    } else {
      expect([400, 413, 415, 422]).toContain(response.status);
    }
  });
});

describe('SQL injection through every kind of parameter', () => {
  const INJECTIONS = [
    "' OR '1'='1",
    "BTC'; DROP TABLE predictions; --",
    '1; DELETE FROM app.users; --',
    "BTC' UNION SELECT password_hash, 1 FROM app.users --",
    "1' AND pg_sleep(3) IS NULL --",
    '$1',
    "\\'; TRUNCATE currencies; --",
  ];

  test('path, query, body fields and headers: a 2xx or a 4xx, never a 5xx, nothing changed', async () => {
    const before = await harness.runtime.pool.oneFirst(ROW_COUNTS);
    const data = (path: string, init: RequestInit = {}, bearer = token) =>
      getJson(`${harness.dataUrl}${path}`, bearer, init);
    const jsonPost = (body: unknown, headers: Record<string, string> = {}) => ({
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
    for (const bad of INJECTIONS) {
      const q = encodeURIComponent(bad);
      const answers = [
        await data(`/data/currency/history/${q}`),
        await data(`/data/currency/history/BTC?hours=${q}&intervalSeconds=${q}`),
        await data(`/data/currency/all?limit=${q}&offset=${q}`),
        await data(`/data/predictions?code=${q}&modelType=${q}&from=${q}`),
        await data(`/data/training-sessions?currency=${q}&modelType=${q}`),
        await data(`/data/news-sentiment?from=${q}&to=${q}&intervalSeconds=${q}`),
        await data('/data/predictions/add', jsonPost({ currencyCode: bad, modelType: bad })),
        await data('/data/currency/all', { headers: { 'x-request-id': bad } }),
        await data('/data/currency/all', {}, bad),
        await me.client.get(`/api/account/get/${q}/profile-picture`),
        await me.client.get(`/api/portfolio/history/profit/${q}`),
        await me.client.get(`/api/currency/value?currencyCode=${q}&shares=${q}`),
        await me.client.post('/api/portfolio/add', {
          currencyCode: bad,
          shares: 1,
          walletDollars: 1,
        }),
        await me.client.post('/api/currency/value', { currencyCode: bad, shares: 1 }),
        await me.client.get('/api/portfolio/get', { headers: { 'x-request-id': bad } }),
        await harness.client().post('/api/authorize/login', { email: bad, password: bad }),
        await harness
          .client()
          .post('/api/authorize/signup', { email: bad, username: bad, password: bad }),
        await harness
          .client()
          .get('/api/portfolio/get', { cookie: `sid=${bad}; csrf-token=${bad}` }),
      ];
      for (const answer of answers) expectErrorShape(answer);
      // The caller's hostile X-Request-Id is not echoed back as it is.
      expect(answers[7]!.headers.get('x-request-id')).not.toBe(bad);
    }
    expect(await harness.runtime.pool.oneFirst(ROW_COUNTS)).toBe(before);
    // The tables are all still there and the platform still works.
    expect((await getJson(`${harness.dataUrl}/data/currency/all`, token)).status).toBe(200);
    expect((await me.client.get('/api/portfolio/get')).status).toBe(200);
  }, 60_000);
});
