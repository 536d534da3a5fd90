import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { startApiHarness, type ApiHarness } from '../support/api.ts';
import { newAccount, type ApiClient } from '../support/apiClient.ts';

// Three failures per account, five per client address. The API trusts X-Forwarded-For here (as
// behind a proxy), so each test plays from its own address.

let harness: ApiHarness;

beforeAll(async () => {
  harness = await startApiHarness({
    API_TRUST_PROXY: 'true',
    LOGIN_MAX_FAILURES_PER_ACCOUNT: '3',
    LOGIN_ACCOUNT_WINDOW_MINUTES: '15',
    LOGIN_MAX_FAILURES_PER_ADDRESS: '5',
    LOGIN_ADDRESS_WINDOW_MINUTES: '60',
  });
});

afterAll(async () => {
  await harness.close();
});

let lastAddress = 10;
const nextAddress = () => `203.0.113.${++lastAddress}`;

async function registered() {
  const account = newAccount();
  expect((await harness.client().post('/api/authorize/signup', account)).status).toBe(200);
  return account;
}

function attempt(email: string, password: string, address: string) {
  return harness
    .client()
    .post('/api/authorize/login', { email, password }, { headers: { 'x-forwarded-for': address } });
}

test('after the account limit every attempt gets 429 with Retry-After, even the right password', async () => {
  const account = await registered();
  for (let i = 0; i < 3; i++) {
    expect((await attempt(account.email, 'wrong', nextAddress())).status).toBe(401);
  }
  const blocked = await attempt(account.email, account.password, nextAddress());
  expect(blocked.status).toBe(429);
  expect(blocked.body.authorized).toBe(false);
  expect(blocked.body.error.code).toBe('rate_limited');
  const retryAfter = Number(blocked.headers.get('retry-after'));
  expect(retryAfter).toBeGreaterThan(14 * 60);
  expect(retryAfter).toBeLessThanOrEqual(15 * 60);
});

test('the account limit is per account and counts the email without regard to case', async () => {
  const victim = await registered();
  const bystander = await registered();
  for (const email of [victim.email, victim.email.toUpperCase(), ` ${victim.email}`]) {
    expect((await attempt(email, 'wrong', nextAddress())).status).toBe(401);
  }
  expect((await attempt(victim.email, victim.password, nextAddress())).status).toBe(429);
  expect((await attempt(bystander.email, bystander.password, nextAddress())).status).toBe(200);
});

test('a successful login resets the account count', async () => {
  const account = await registered();
  const address = nextAddress();
  for (let round = 0; round < 2; round++) {
    expect((await attempt(account.email, 'wrong', address)).status).toBe(401);
    expect((await attempt(account.email, 'wrong', address)).status).toBe(401);
    expect((await attempt(account.email, account.password, address)).status).toBe(200);
  }
});

test('unknown accounts are throttled the same way as real ones', async () => {
  const email = `ghost${Date.now()}@example.com`;
  for (let i = 0; i < 3; i++) expect((await attempt(email, 'x', nextAddress())).status).toBe(401);
  expect((await attempt(email, 'x', nextAddress())).status).toBe(429);
});

test('the address limit stops one client guessing across many accounts', async () => {
  const address = nextAddress();
  const emails = Array.from({ length: 5 }, (_, i) => `spray${i}.${Date.now()}@example.com`);
  for (const email of emails) expect((await attempt(email, 'guess', address)).status).toBe(401);
  const account = await registered();
  const blocked = await attempt(account.email, account.password, address);
  expect(blocked.status).toBe(429);
  expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(59 * 60);
  expect((await attempt(account.email, account.password, nextAddress())).status).toBe(200);
});

function statusCounts(statuses: number[]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const status of statuses) counts[status] = (counts[status] ?? 0) + 1;
  return counts;
}

test('a parallel burst of wrong passwords gets exactly the account limit of 401s, then 429s', async () => {
  const account = await registered();
  const burst = await Promise.all(
    Array.from({ length: 40 }, () => attempt(account.email, 'wrong', nextAddress())),
  );
  expect(statusCounts(burst.map((answer) => answer.status))).toEqual({ 401: 3, 429: 37 });
  expect((await attempt(account.email, account.password, nextAddress())).status).toBe(429);
});

test('a parallel burst from one address across accounts gets exactly the address limit of 401s', async () => {
  const address = nextAddress();
  const burst = await Promise.all(
    Array.from({ length: 30 }, (_, i) =>
      attempt(`burst${i}.${Date.now()}@example.com`, 'guess', address),
    ),
  );
  expect(statusCounts(burst.map((answer) => answer.status))).toEqual({ 401: 5, 429: 25 });
  const account = await registered();
  expect((await attempt(account.email, account.password, address)).status).toBe(429);
});

test('a correct password does not use up the address allowance', async () => {
  const account = await registered();
  const address = nextAddress();
  for (let i = 0; i < 8; i++) {
    expect((await attempt(account.email, account.password, address)).status).toBe(200);
  }
});

test('behind one trusted proxy, rotating the leftmost X-Forwarded-For entry does not escape the address limit', async () => {
  const address = nextAddress();
  const spoofed = (i: number, email: string, password: string) =>
    harness
      .client()
      .post(
        '/api/authorize/login',
        { email, password },
        { headers: { 'x-forwarded-for': `198.51.100.${i}, ${address}` } },
      );
  for (let i = 0; i < 5; i++) {
    expect((await spoofed(i, `rotate${i}.${Date.now()}@example.com`, 'guess')).status).toBe(401);
  }
  const account = await registered();
  expect((await spoofed(99, account.email, account.password)).status).toBe(429);
});

test('sign-ups from one address are limited (a parallel burst included); other addresses are not', async () => {
  const limited = await startApiHarness({ API_TRUST_PROXY: 'true', SIGNUP_MAX_PER_ADDRESS: '4' });
  try {
    const signup = (address: string) =>
      limited
        .client()
        .post('/api/authorize/signup', newAccount(), { headers: { 'x-forwarded-for': address } });
    const address = nextAddress();
    const burst = await Promise.all(Array.from({ length: 12 }, () => signup(address)));
    expect(statusCounts(burst.map((answer) => answer.status))).toEqual({ 200: 4, 429: 8 });
    const refused = burst.find((answer) => answer.status === 429)!;
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(59 * 60);
    expect((await signup(nextAddress())).status).toBe(200);
  } finally {
    await limited.close();
  }
});

test('behind a throttled shared address, a browser that signed in before still gets in with the right password; others get 429', async () => {
  const address = nextAddress();
  const login = (client: ApiClient, email: string, password: string) =>
    client.post(
      '/api/authorize/login',
      { email, password },
      { headers: { 'x-forwarded-for': address } },
    );
  const account = await registered();
  const knownBrowser = harness.client();
  expect((await login(knownBrowser, account.email, account.password)).status).toBe(200);
  expect(knownBrowser.jar.has('device')).toBe(true);
  expect((await knownBrowser.get('/api/authorize/logout')).status).toBe(200);

  // Someone else behind the same address exhausts its limit guessing at other accounts.
  for (let i = 0; i < 5; i++) {
    const guess = await login(harness.client(), `nat${i}.${Date.now()}@example.com`, 'guess');
    expect(guess.status).toBe(401);
  }
  expect((await login(harness.client(), account.email, account.password)).status).toBe(429);

  expect((await login(knownBrowser, account.email, account.password)).status).toBe(200);
});

test('a device cookie counts only for its own account, and a forged one counts for nothing', async () => {
  const address = nextAddress();
  const login = (client: ApiClient, email: string, password: string) =>
    client.post(
      '/api/authorize/login',
      { email, password },
      { headers: { 'x-forwarded-for': address } },
    );
  const owner = await registered();
  const other = await registered();
  const browser = harness.client();
  expect((await login(browser, owner.email, owner.password)).status).toBe(200);
  expect((await browser.get('/api/authorize/logout')).status).toBe(200);
  for (let i = 0; i < 5; i++) {
    expect((await login(harness.client(), `nat${i}.${Date.now()}@example.com`, 'x')).status).toBe(
      401,
    );
  }
  expect((await login(browser, other.email, other.password)).status).toBe(429);

  const forger = harness.client();
  const [userId] = browser.jar.get('device')!.split('.');
  forger.jar.set('device', `${userId}.${'A'.repeat(22)}`);
  forger.jar.set('device.sig', browser.jar.get('device.sig')!);
  expect((await login(forger, owner.email, owner.password)).status).toBe(429);
});

test('a known device is still held to the account limit', async () => {
  const account = await registered();
  const browser = harness.client();
  expect((await attemptWith(browser, account.email, account.password)).status).toBe(200);
  expect((await browser.get('/api/authorize/logout')).status).toBe(200);
  for (let i = 0; i < 3; i++) {
    expect((await attemptWith(browser, account.email, 'wrong')).status).toBe(401);
  }
  expect((await attemptWith(browser, account.email, account.password)).status).toBe(429);
});

function attemptWith(client: ApiClient, email: string, password: string) {
  return client.post(
    '/api/authorize/login',
    { email, password },
    { headers: { 'x-forwarded-for': nextAddress() } },
  );
}

test('behind proxies trusted by CIDR, rotating the leftmost X-Forwarded-For entry does not escape the address limit', async () => {
  const byNetwork = await startApiHarness({
    API_TRUST_PROXY: '10.0.0.0/8,127.0.0.1/32',
    LOGIN_MAX_FAILURES_PER_ADDRESS: '5',
  });
  try {
    const address = nextAddress();
    const login = (i: number, email: string, password: string) =>
      byNetwork
        .client()
        .post(
          '/api/authorize/login',
          { email, password },
          { headers: { 'x-forwarded-for': `198.51.100.${i}, ${address}, 10.20.30.40` } },
        );
    for (let i = 0; i < 5; i++) {
      expect((await login(i, `cidr${i}.${Date.now()}@example.com`, 'guess')).status).toBe(401);
    }
    const account = newAccount();
    expect((await byNetwork.client().post('/api/authorize/signup', account)).status).toBe(200);
    expect((await login(99, account.email, account.password)).status).toBe(429);
    // The same account from another client behind the same proxies is not held back.
    const elsewhere = await byNetwork
      .client()
      .post(
        '/api/authorize/login',
        { email: account.email, password: account.password },
        { headers: { 'x-forwarded-for': `${address}, ${nextAddress()}, 10.20.30.40` } },
      );
    expect(elsewhere.status).toBe(200);
  } finally {
    await byNetwork.close();
  }
});
