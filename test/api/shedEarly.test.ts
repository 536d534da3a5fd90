import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { httpRequestsShed } from '../../src/shared/metrics.ts';
import { startApiHarness, type ApiHarness } from '../support/api.ts';
import { getJson } from '../support/http.ts';
import { setSnapshot } from '../support/prices.ts';

// The anonymous history limit is read at the top of the API's stack: an address over it is
// refused there (429 + Retry-After, the limit's own answer), whatever path spelling or forged
// session cookie it sends, while a signed-in user from the same address is judged by their own
// limit after the session lookup. Every refusal is counted by route group and reason.

let harness: ApiHarness;
const ALLOWED_ORIGIN = 'https://web.example.com';

beforeAll(async () => {
  harness = await startApiHarness({
    API_RATE_LIMIT_ANONYMOUS: '3',
    API_ALLOWED_ORIGINS: ALLOWED_ORIGIN,
  });
  // A priced currency: its history is answered (the limit is what this test is about).
  await setSnapshot(harness.runtime.pool, 'BTC', 100, new Date());
}, 60_000);

afterAll(async () => {
  await harness?.close();
});

async function anonymousHistoryShed(): Promise<number> {
  const { values } = await httpRequestsShed.get();
  return (
    values.find(
      (v) => v.labels.route_group === 'anonymous history' && v.labels.reason === 'rate_limited',
    )?.value ?? 0
  );
}

test('an address over the anonymous history limit is refused early, however it spells the request', async () => {
  const query = '?hours=1&intervalSeconds=60';
  const history = (path = '/api/currency/history/BTC', headers: Record<string, string> = {}) =>
    getJson(`${harness.url}${path}${query}`, undefined, { headers });
  const before = await anonymousHistoryShed();
  for (let i = 0; i < 3; i++) expect([200, 204]).toContain((await history()).status);

  const refusals = [
    await history(),
    await history('/API/Currency/History/btc/'),
    // A session cookie with a forged signature cannot belong to anyone: still anonymous.
    await history(undefined, { cookie: 'sid=made-up; sid.sig=not-a-signature' }),
  ];
  for (const refusal of refusals) {
    expect(refusal.status).toBe(429);
    expect(Number(refusal.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(refusal.body.error.code).toBe('rate_limited');
    expect(refusal.body.error.message).toMatch(/anonymous history requests/);
  }
  expect(await anonymousHistoryShed()).toBe(before + refusals.length);

  // A page on an allowed origin can read its refusal (and Retry-After), as from any other route.
  const fromPage = await history(undefined, { origin: ALLOWED_ORIGIN });
  expect(fromPage.status).toBe(429);
  expect(fromPage.headers.get('access-control-allow-origin')).toBe(ALLOWED_ORIGIN);
  expect(fromPage.headers.get('access-control-allow-credentials')).toBe('true');
  expect(fromPage.headers.get('access-control-expose-headers')).toMatch(/Retry-After/);
  const foreign = await history(undefined, { origin: 'https://evil.example' });
  expect(foreign.status).toBe(429);
  expect(foreign.headers.get('access-control-allow-origin')).toBeNull();

  // The same address signed in is counted against its user, not refused with the anonymous.
  const { client } = await harness.signedInClient();
  expect((await client.get(`/api/currency/history/BTC${query}`)).status).toBeLessThan(300);
  // Routes without that limit are not refused for it.
  expect((await getJson(`${harness.url}/api/currency/all`)).status).toBe(200);
}, 60_000);
