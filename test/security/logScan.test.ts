import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createToken } from '../../src/data/tokens/tokenStore.ts';
import { startApiHarness, type ApiHarness } from '../support/api.ts';
import { newAccount } from '../support/apiClient.ts';
import { getJson } from '../support/http.ts';
import { solid } from '../support/images.ts';
import { setSnapshot } from '../support/prices.ts';
import { findSecrets } from './logScan.ts';

// Every log line the platform writes during a session of sign-ups, sign-ins (right and wrong
// passwords), token calls (good, revoked, forged), uploads, cross-site refusals and a data-module
// outage — at debug level, the most talkative — is scanned for the passwords, tokens and cookies
// used. (With TEST_LOG_FILE set, the global teardown scans the logs of the whole suite too.)

const dir = mkdtempSync(join(tmpdir(), 'logscan-'));
const logFile = join(dir, 'platform.log');
let harness: ApiHarness;
const secrets: string[] = [];

beforeAll(async () => {
  const previous = process.env.TEST_LOG_FILE;
  process.env.TEST_LOG_FILE = logFile;
  try {
    harness = await startApiHarness({ DATA_TIMEOUT_MS: '1000' });
  } finally {
    if (previous === undefined) delete process.env.TEST_LOG_FILE;
    else process.env.TEST_LOG_FILE = previous;
  }
  await setSnapshot(harness.runtime.pool, 'BTC', 100, new Date());
});

afterAll(async () => {
  await harness.close();
  rmSync(dir, { recursive: true, force: true });
});

test('no password, token or cookie reaches the logs', async () => {
  const { token } = await createToken(harness.runtime.pool, 'scan', ['read', 'write']);
  secrets.push(token);
  const data = (path: string, bearer: string, init: RequestInit = {}) =>
    getJson(`${harness.dataUrl}${path}`, bearer, init);
  expect((await data('/data/currency/all', token)).status).toBe(200);
  const forged = 'pdt_forgedForgedForgedForgedForged123456';
  secrets.push(forged);
  expect((await data('/data/currency/all', forged)).status).toBe(401);
  expect(
    (
      await data('/data/predictions/add', token, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"password":"hunter2-secret-value"}',
      })
    ).status,
  ).toBe(400);
  secrets.push('hunter2-secret-value');

  const account = { ...newAccount('scan'), password: 'Sup3r-Secret-Passphrase!' };
  secrets.push(account.password);
  const client = harness.client();
  expect((await client.post('/api/authorize/signup', account)).status).toBe(200);
  secrets.push(...client.jar.values());
  await client.get('/api/authorize/logout');
  const wrong = 'Wrong-Passphrase-123456';
  secrets.push(wrong);
  expect(
    (await client.post('/api/authorize/login', { email: account.email, password: wrong })).status,
  ).toBe(401);
  expect(
    (
      await client.post('/api/authorize/login', {
        email: account.email,
        password: account.password,
      })
    ).status,
  ).toBe(200);
  secrets.push(...client.jar.values());
  const csrf = client.jar.get('csrf-token') ?? '';
  const body = new FormData();
  body.append(
    'file',
    new Blob([new Uint8Array(await solid(20, 20).png().toBuffer())], { type: 'image/png' }),
    'me.png',
  );
  expect(
    (
      await client.request('POST', '/api/account/image/upload', {
        body,
        headers: { 'x-csrf-token': csrf },
      })
    ).status,
  ).toBe(200);
  expect(
    (
      await client.post(
        '/api/portfolio/add',
        { currencyCode: 'BTC', shares: 1, walletDollars: 1 },
        { headers: { origin: 'https://evil.example' } },
      )
    ).status,
  ).toBe(403);
  await harness.stopData();
  try {
    expect(
      (await client.post('/api/currency/value', { currencyCode: 'BTC', shares: 2 })).status,
    ).toBe(503);
  } finally {
    await harness.startData();
  }
  expect((await client.post('/api/authorize/logout')).status).toBe(200);

  const text = readFileSync(logFile, 'utf8');
  // The scan is only worth something if the logs were written and are detailed.
  expect(text.split('\n').length).toBeGreaterThan(10);
  expect(text).toContain('/api/authorize/login');
  expect(findSecrets(text, secrets)).toEqual([]);
}, 60_000);
