import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createHash } from 'node:crypto';
import { sql } from 'slonik';
import { startApiHarness, type ApiHarness } from '../support/api.ts';
import { cookieAttributes, newAccount, type ApiClient } from '../support/apiClient.ts';

let harness: ApiHarness;

beforeAll(async () => {
  harness = await startApiHarness();
});

afterAll(async () => {
  await harness.close();
});

const signup = (client: ApiClient, account: object) =>
  client.post('/api/authorize/signup', account);
const login = (client: ApiClient, email: string, password: string) =>
  client.post('/api/authorize/login', { email, password });

describe('signup', () => {
  test('creates the account and signs the new user in', async () => {
    const client = harness.client();
    const response = await signup(client, newAccount());
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ authorized: true });
    const check = await client.get('/api/authorize/isloggedin');
    expect(check.status).toBe(200);
    expect(check.body).toEqual({ authorized: true });
  });

  test('stores an argon2id hash, never the password', async () => {
    const account = newAccount();
    await signup(harness.client(), account);
    const hash = await harness.runtime.pool.oneFirst(
      sql.unsafe`SELECT password_hash FROM app.users WHERE email = ${account.email}`,
    );
    expect(hash).toMatch(/^\$argon2id\$v=19\$m=19456,p=1,t=2\$/);
    expect(String(hash)).not.toContain(account.password);
  });

  test('409 when the email or the username is taken, without regard to case', async () => {
    const account = newAccount();
    expect((await signup(harness.client(), account)).status).toBe(200);
    const sameEmail = await signup(harness.client(), {
      ...newAccount(),
      email: account.email.toUpperCase(),
    });
    expect(sameEmail.status).toBe(409);
    expect(sameEmail.body.authorized).toBe(false);
    expect(sameEmail.body.error.code).toBe('account_exists');
    expect(sameEmail.body.error.details).toEqual([
      { path: 'body.email', message: 'already taken' },
    ]);
    const sameName = await signup(harness.client(), {
      ...newAccount(),
      username: account.username.toUpperCase(),
    });
    expect(sameName.status).toBe(409);
    expect(sameName.body.error.details[0].path).toBe('body.username');
    const both = await signup(harness.client(), account);
    expect(both.status).toBe(409);
    expect(both.body.error.details.map((d: { path: string }) => d.path)).toEqual([
      'body.email',
      'body.username',
    ]);
  });

  test.each([
    ['an invalid email', { email: 'not-an-email' }, 'body.email'],
    ['a username too short', { username: 'ab' }, 'body.username'],
    ['a username too long', { username: 'a'.repeat(33) }, 'body.username'],
    ['a username with a space', { username: 'ada lovelace' }, 'body.username'],
    ['a password of 7 characters', { password: '1234567' }, 'body.password'],
    ['a password of 257 characters', { password: 'p'.repeat(257) }, 'body.password'],
    ['a missing password', { password: undefined }, 'body.password'],
  ])('400 for %s, naming the field', async (_, change, path) => {
    const response = await signup(harness.client(), { ...newAccount(), ...change });
    expect(response.status).toBe(400);
    expect(response.body.authorized).toBe(false);
    expect(response.body.error.code).toBe('validation_error');
    expect(response.body.error.details[0].path).toBe(path);
  });

  test('accepts the limits: 3- and 32-character usernames, 8- and 256-character passwords', async () => {
    for (const change of [
      { username: `a.${Math.random().toString(36).slice(2, 3)}` },
      { username: `u_${Math.random().toString(36).slice(2, 12)}`.padEnd(32, 'x') },
      { password: '12345678' },
      { password: 'é'.repeat(256) },
    ]) {
      const response = await signup(harness.client(), { ...newAccount(), ...change });
      expect(response.status).toBe(200);
    }
  });

  test('400 when already signed in, and the session stays', async () => {
    const { client } = await harness.signedInClient();
    const response = await signup(client, newAccount());
    expect(response.status).toBe(400);
    expect(response.body.error.code).toBe('already_signed_in');
    // The old system's clients read {"authorized": false}: this request signed nobody in.
    expect(response.body.authorized).toBe(false);
    expect((await client.get('/api/authorize/isloggedin')).status).toBe(200);
  });

  test('415 for a body that is not JSON', async () => {
    const response = await harness.client().request('POST', '/api/authorize/signup', {
      body: JSON.stringify(newAccount()),
      headers: { 'content-type': 'text/plain' },
    });
    expect(response.status).toBe(415);
    expect(response.body.authorized).toBe(false);
  });
});

describe('login', () => {
  test('200 with the right password; the password may be a client-side SHA-256 hex', async () => {
    const digest = createHash('sha256').update('hunter2').digest('hex');
    const account = { ...newAccount(), password: digest };
    await signup(harness.client(), account);
    const client = harness.client();
    const response = await login(client, account.email.toUpperCase(), digest);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ authorized: true });
    expect((await client.get('/api/authorize/isloggedin')).status).toBe(200);
    expect((await login(harness.client(), account.email, 'hunter2')).status).toBe(401);
  });

  test('401 alike for an unknown email and a wrong password', async () => {
    const { account } = await harness.signedInClient();
    const wrong = await login(harness.client(), account.email, 'wrong password');
    const unknown = await login(harness.client(), 'nobody@example.com', 'wrong password');
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    expect(wrong.body).toEqual(unknown.body);
    expect(wrong.body.authorized).toBe(false);
    expect(wrong.body.error.code).toBe('invalid_credentials');
    expect(wrong.setCookies).toEqual([]);
  });

  test('400 when already signed in', async () => {
    const { client, account } = await harness.signedInClient();
    const response = await login(client, account.email, account.password);
    expect(response.status).toBe(400);
    expect(response.body.error.code).toBe('already_signed_in');
    expect(response.body.authorized).toBe(false);
    expect((await client.get('/api/authorize/isloggedin')).status).toBe(200);
  });

  test('400 for a missing field', async () => {
    const response = await harness.client().post('/api/authorize/login', { email: 'a@b.c' });
    expect(response.status).toBe(400);
    expect(response.body.error.details[0].path).toBe('body.password');
  });
});

describe('session cookie', () => {
  test('HttpOnly, SameSite=Lax, Path=/, not Secure over plain HTTP, with a 256-bit id', async () => {
    const client = harness.client();
    const response = await signup(client, newAccount());
    const sid = cookieAttributes(response.setCookies, 'sid')!;
    expect(sid.attributes).toHaveProperty('httponly');
    expect(sid.attributes.samesite).toBe('lax');
    expect(sid.attributes.path).toBe('/');
    expect(sid.attributes).not.toHaveProperty('secure');
    expect(sid.value).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(cookieAttributes(response.setCookies, 'sid.sig')).toBeDefined();
  });

  test('Secure over HTTPS: behind a trusted proxy that says so, never on a spoofed header', async () => {
    const spoofed = await harness.client().post('/api/authorize/signup', newAccount(), {
      headers: { 'x-forwarded-proto': 'https' },
    });
    expect(cookieAttributes(spoofed.setCookies, 'sid')!.attributes).not.toHaveProperty('secure');
    const proxied = await startApiHarness({ API_TRUST_PROXY: 'true' });
    try {
      const response = await proxied.client().post('/api/authorize/signup', newAccount(), {
        headers: { 'x-forwarded-proto': 'https' },
      });
      expect(response.status).toBe(200);
      for (const name of ['sid', 'sid.sig', 'csrf-token']) {
        expect(cookieAttributes(response.setCookies, name)!.attributes).toHaveProperty('secure');
      }
    } finally {
      await proxied.close();
    }
  });

  test('the database keeps only a hash of the session id', async () => {
    const client = harness.client();
    await signup(client, newAccount());
    const sid = client.jar.get('sid')!;
    const hash = createHash('sha256').update(sid).digest();
    const rows = await harness.runtime.pool.anyFirst(
      sql.unsafe`SELECT encode(id_hash, 'hex') FROM app.sessions`,
    );
    expect(rows).toContain(hash.toString('hex'));
    const dump = JSON.stringify(
      await harness.runtime.pool.any(sql.unsafe`SELECT * FROM app.sessions`),
    );
    expect(dump).not.toContain(sid);
  });

  test('anonymous requests create no session', async () => {
    const client = harness.client();
    const response = await client.get('/api/authorize/isloggedin');
    expect(response.status).toBe(401);
    expect(response.body.authorized).toBe(false);
    expect(response.body.error.code).toBe('not_signed_in');
    expect(response.setCookies).toEqual([]);
  });

  test('session fixation: the id changes at login, and a planted id is never adopted', async () => {
    const { client: first, account } = await harness.signedInClient();
    const before = first.jar.get('sid')!;
    expect((await first.get('/api/authorize/logout')).status).toBe(200);
    // An attacker plants a cookie of their choosing (signature and all) before the victim logs in.
    const victim = harness.client();
    victim.jar.set('sid', before);
    victim.jar.set('sid.sig', first.jar.get('sid.sig') ?? 'x');
    const response = await login(victim, account.email, account.password);
    expect(response.status).toBe(200);
    const after = victim.jar.get('sid')!;
    expect(after).not.toBe(before);
    expect(after).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  test('the id changes at every login of the same user', async () => {
    const { account } = await harness.signedInClient();
    const ids = new Set<string>();
    for (let i = 0; i < 3; i++) {
      const client = harness.client();
      expect((await login(client, account.email, account.password)).status).toBe(200);
      ids.add(client.jar.get('sid')!);
    }
    expect(ids.size).toBe(3);
  });
});

describe('logout', () => {
  test.each(['GET', 'POST'])('%s destroys the session server-side', async (method) => {
    const { client } = await harness.signedInClient();
    const stolen = client.cookieHeader();
    const response = await client.request(method, '/api/authorize/logout');
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ authorized: false });
    expect(client.jar.has('sid')).toBe(false);
    // Replaying the old cookie (as a thief would) no longer signs anyone in.
    const replay = await harness.client().get('/api/authorize/isloggedin', { cookie: stolen });
    expect(replay.status).toBe(401);
    const portfolio = await harness.client().get('/api/portfolio/get', { cookie: stolen });
    expect(portfolio.status).toBe(401);
  });

  test('400 when not signed in', async () => {
    const response = await harness.client().get('/api/authorize/logout');
    expect(response.status).toBe(400);
    expect(response.body.authorized).toBe(false);
    expect(response.body.error.code).toBe('not_signed_in');
  });

  test('the same client can sign in again afterwards', async () => {
    const { client, account } = await harness.signedInClient();
    await client.post('/api/authorize/logout');
    expect((await login(client, account.email, account.password)).status).toBe(200);
    expect((await client.get('/api/authorize/isloggedin')).status).toBe(200);
  });
});
