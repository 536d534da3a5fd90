import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import sharp from 'sharp';
import { setSnapshot } from '../support/prices.ts';
import { startApiHarness, type ApiHarness } from '../support/api.ts';
import { cookieAttributes, newAccount, type ApiClient } from '../support/apiClient.ts';

let harness: ApiHarness;
let png: Buffer;
const WEB_CLIENT = 'https://trader.example.com';

beforeAll(async () => {
  harness = await startApiHarness({ API_ALLOWED_ORIGINS: `${WEB_CLIENT}/` });
  await setSnapshot(harness.runtime.pool, 'BTC', 100, new Date());
  png = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#0a0' } })
    .png()
    .toBuffer();
});

afterAll(async () => {
  await harness.close();
});

const EVIL = { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' };

function uploadForm() {
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(png)], { type: 'image/png' }), 'me.png');
  return form;
}

function upload(client: ApiClient, headers: Record<string, string> = {}) {
  return client.request('POST', '/api/account/image/upload', { body: uploadForm(), headers });
}

describe('cross-site requests riding on the cookie are refused', () => {
  test('portfolio changes from a foreign origin: 403, nothing recorded', async () => {
    const { client } = await harness.signedInClient();
    const body = { currencyCode: 'BTC', shares: 1, walletDollars: 0 };
    const forged = await client.post('/api/portfolio/add', body, { headers: EVIL });
    expect(forged.status).toBe(403);
    expect(forged.body.error.code).toBe('cross_site_request');
    const byOrigin = await client.post('/api/portfolio/add', body, {
      headers: { origin: 'https://evil.example' },
    });
    expect(byOrigin.status).toBe(403);
    const bySite = await client.post('/api/portfolio/add', body, {
      headers: { 'sec-fetch-site': 'cross-site' },
    });
    expect(bySite.status).toBe(403);
    expect((await client.get('/api/portfolio/empty')).body).toEqual({ hasPortfolio: false });
  });

  test('a forged logout link (GET) does not end the session', async () => {
    const { client } = await harness.signedInClient();
    const forged = await client.get('/api/authorize/logout', {
      headers: { 'sec-fetch-site': 'cross-site' },
    });
    expect(forged.status).toBe(403);
    expect(forged.body.authorized).toBe(true);
    expect((await client.get('/api/authorize/isloggedin')).status).toBe(200);
  });

  test('login and signup from a foreign origin are refused (login CSRF)', async () => {
    const account = newAccount();
    const signup = await harness.client().post('/api/authorize/signup', account, { headers: EVIL });
    expect(signup.status).toBe(403);
    expect(signup.body.authorized).toBe(false);
    expect(signup.setCookies).toEqual([]);
    const login = await harness
      .client()
      .post(
        '/api/authorize/login',
        { email: account.email, password: account.password },
        { headers: EVIL },
      );
    expect(login.status).toBe(403);
  });

  test('an opaque origin (null) is refused', async () => {
    const { client } = await harness.signedInClient();
    const response = await client.post('/api/authorize/logout', undefined, {
      headers: { origin: 'null' },
    });
    expect(response.status).toBe(403);
  });

  test('JSON routes refuse form and text bodies (which need no CORS preflight): 415', async () => {
    const { client } = await harness.signedInClient();
    for (const [type, body] of [
      ['application/x-www-form-urlencoded', 'currencyCode=BTC&shares=1&walletDollars=0'],
      ['text/plain', '{"currencyCode":"BTC","shares":1,"walletDollars":0}'],
      ['multipart/form-data; boundary=x', '--x--'],
    ] as const) {
      const response = await client.request('POST', '/api/portfolio/add', {
        body,
        headers: { 'content-type': type },
      });
      expect(response.status).toBe(415);
    }
  });
});

describe('path spellings do not get past the guard', () => {
  test.each(['/api/authorize/logout/', '/API/authorize/logout', '/api/authorize/LOGOUT'])(
    'a forged GET %s does not end the session',
    async (path) => {
      const { client } = await harness.signedInClient();
      const forged = await client.get(path, { headers: { 'sec-fetch-site': 'cross-site' } });
      expect([403, 404]).toContain(forged.status);
      expect((await client.get('/api/authorize/isloggedin')).status).toBe(200);
    },
  );

  test.each(['/API/portfolio/add', '/api/portfolio/add/', '/api//portfolio/ADD'])(
    'a foreign POST %s records nothing',
    async (path) => {
      const { client } = await harness.signedInClient();
      const body = { currencyCode: 'BTC', shares: 1, walletDollars: 0 };
      const forged = await client.post(path, body, { headers: EVIL });
      expect([403, 404]).toContain(forged.status);
      expect((await client.get('/api/portfolio/empty')).body).toEqual({ hasPortfolio: false });
    },
  );
});

describe('requests from our own pages pass', () => {
  test('same-origin (Sec-Fetch-Site), own Origin, an allowed Origin, and non-browser clients', async () => {
    const { client } = await harness.signedInClient();
    const body = { currencyCode: 'BTC', shares: 1, walletDollars: 0 };
    const variants: Array<Record<string, string>> = [
      { 'sec-fetch-site': 'same-origin', origin: harness.url },
      { origin: harness.url },
      { origin: WEB_CLIENT, 'sec-fetch-site': 'same-site' },
      {},
    ];
    for (const headers of variants) {
      expect((await client.post('/api/portfolio/add', body, { headers })).status).toBe(200);
    }
    const portfolio = await client.get('/api/portfolio/get');
    expect(portfolio.body.assets[0].shares).toBe(4);
  });
});

describe('CORS for the allowed web client only', () => {
  test('a preflight from the allowed origin is granted with credentials and the CSRF header', async () => {
    const response = await harness.client().request('OPTIONS', '/api/portfolio/add', {
      headers: {
        origin: WEB_CLIENT,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type',
      },
    });
    expect(response.status).toBe(204);
    expect(response.headers.get('access-control-allow-origin')).toBe(WEB_CLIENT);
    expect(response.headers.get('access-control-allow-credentials')).toBe('true');
    expect(response.headers.get('access-control-allow-headers')).toMatch(/X-CSRF-Token/);
  });

  test('a preflight from any other origin gets no CORS headers', async () => {
    const response = await harness.client().request('OPTIONS', '/api/portfolio/add', {
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
    });
    expect(response.headers.get('access-control-allow-origin')).toBeNull();
  });

  test('answers to the allowed origin are readable by it, errors included', async () => {
    const { client } = await harness.signedInClient();
    const ok = await client.get('/api/portfolio/empty', { headers: { origin: WEB_CLIENT } });
    expect(ok.headers.get('access-control-allow-origin')).toBe(WEB_CLIENT);
    expect(ok.headers.get('vary')).toMatch(/Origin/);
    const refused = await harness
      .client()
      .get('/api/portfolio/get', { headers: { origin: WEB_CLIENT } });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('access-control-allow-origin')).toBe(WEB_CLIENT);
    const foreign = await client.get('/api/portfolio/empty', {
      headers: { origin: 'https://evil.example' },
    });
    expect(foreign.headers.get('access-control-allow-origin')).toBeNull();
  });
});

describe('the upload needs the CSRF token from browsers', () => {
  test('sign-in hands out the token as a readable cookie and a header', async () => {
    const client = harness.client();
    const response = await client.post('/api/authorize/signup', newAccount());
    const cookie = cookieAttributes(response.setCookies, 'csrf-token')!;
    expect(cookie.value).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(cookie.attributes).not.toHaveProperty('httponly');
    expect(cookie.attributes.samesite).toBe('lax');
    expect(response.headers.get('x-csrf-token')).toBe(cookie.value);
    const again = await client.get('/api/authorize/isloggedin');
    expect(again.headers.get('x-csrf-token')).toBe(cookie.value);
  });

  test('a browser upload without the token: 403; with a wrong one: 403; with it: 200', async () => {
    const { client } = await harness.signedInClient();
    const sameOrigin = { 'sec-fetch-site': 'same-origin', origin: harness.url };
    const missing = await upload(client, sameOrigin);
    expect(missing.status).toBe(403);
    expect(missing.body.error.code).toBe('csrf_token_missing');
    const wrong = await upload(client, { ...sameOrigin, 'x-csrf-token': 'A'.repeat(43) });
    expect(wrong.status).toBe(403);
    expect(wrong.body.error.code).toBe('csrf_token_invalid');
    const token = client.jar.get('csrf-token')!;
    const ok = await upload(client, { ...sameOrigin, 'x-csrf-token': token });
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ successful: true });
  });

  test('a forged cross-site form post is refused whatever it carries', async () => {
    const { client } = await harness.signedInClient();
    const response = await upload(client, {
      ...EVIL,
      'x-csrf-token': client.jar.get('csrf-token')!,
    });
    expect(response.status).toBe(403);
  });

  test("another session's token does not work", async () => {
    const { client: mine } = await harness.signedInClient();
    const { client: theirs } = await harness.signedInClient();
    const response = await upload(mine, {
      'sec-fetch-site': 'same-origin',
      'x-csrf-token': theirs.jar.get('csrf-token')!,
    });
    expect(response.status).toBe(403);
  });

  test('the token changes at every sign-in and goes at logout', async () => {
    const { client, account } = await harness.signedInClient();
    const first = client.jar.get('csrf-token');
    await client.get('/api/authorize/logout');
    expect(client.jar.has('csrf-token')).toBe(false);
    await client.post('/api/authorize/login', { email: account.email, password: account.password });
    expect(client.jar.get('csrf-token')).toBeDefined();
    expect(client.jar.get('csrf-token')).not.toBe(first);
  });
});
