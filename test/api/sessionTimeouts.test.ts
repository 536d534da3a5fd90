import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { createHash } from 'node:crypto';
import { sql } from 'slonik';
import { sweepExpired } from '../../src/api/maintenance.ts';
import { startApiHarness, type ApiHarness } from '../support/api.ts';
import type { ApiClient } from '../support/apiClient.ts';
import { until } from '../support/wait.ts';

// Idle 30 minutes and absolute 12 hours (the defaults). Time passing is simulated by moving the
// session's own timestamps back, which is exactly what the store compares against now().

let harness: ApiHarness;

beforeAll(async () => {
  harness = await startApiHarness({ SESSION_IDLE_MINUTES: '30', SESSION_ABSOLUTE_HOURS: '12' });
});

afterAll(async () => {
  await harness.close();
});

function idHash(client: ApiClient) {
  return createHash('sha256').update(client.jar.get('sid')!).digest();
}

async function age(client: ApiClient, column: 'last_seen_at' | 'created_at', minutes: number) {
  await harness.runtime.pool.query(sql.unsafe`
    UPDATE app.sessions SET ${sql.identifier([column])} = now() - make_interval(mins => ${minutes})
    WHERE id_hash = ${sql.binary(idHash(client))}
  `);
}

const signedIn = async (client: ApiClient) =>
  (await client.get('/api/authorize/isloggedin')).status === 200;

test('a session idle for less than the idle time-out lives on, and use refreshes it', async () => {
  const { client } = await harness.signedInClient();
  await age(client, 'last_seen_at', 29);
  expect(await signedIn(client)).toBe(true);
  const lastSeen = await harness.runtime.pool.oneFirst(sql.unsafe`
    SELECT extract(epoch FROM now() - last_seen_at) FROM app.sessions
    WHERE id_hash = ${sql.binary(idHash(client))}
  `);
  expect(Number(lastSeen)).toBeLessThan(60);
});

test('a session idle past the idle time-out is over, and its row is gone', async () => {
  const { client } = await harness.signedInClient();
  await age(client, 'last_seen_at', 31);
  expect(await signedIn(client)).toBe(false);
  expect((await client.get('/api/portfolio/get')).status).toBe(401);
  const rows = await harness.runtime.pool.oneFirst(sql.unsafe`
    SELECT count(*) FROM app.sessions WHERE id_hash = ${sql.binary(idHash(client))}
  `);
  expect(Number(rows)).toBe(0);
});

test('a session past the absolute time-out is over even when used all along', async () => {
  const { client } = await harness.signedInClient();
  await age(client, 'created_at', 11 * 60 + 59);
  expect(await signedIn(client)).toBe(true);
  await age(client, 'created_at', 12 * 60 + 1);
  expect(await signedIn(client)).toBe(false);
});

test('the cookie itself expires with the absolute time-out', async () => {
  const client = harness.client();
  const started = Date.now();
  const response = await client.post('/api/authorize/signup', {
    email: `cookie${started}@example.com`,
    username: `cookie${started}`,
    password: 'long enough password',
  });
  const line = response.setCookies.find((l) => l.startsWith('sid='))!;
  const expires = Date.parse(/expires=([^;]+)/i.exec(line)![1]!);
  expect(expires - started).toBeGreaterThan(12 * 3_600_000 - 60_000);
  expect(expires - started).toBeLessThan(12 * 3_600_000 + 60_000);
});

test('the sweeper deletes expired sessions and keeps live ones', async () => {
  const { client: idle } = await harness.signedInClient();
  const { client: live } = await harness.signedInClient();
  await age(idle, 'last_seen_at', 45);
  const swept = await sweepExpired(harness.runtime.pool, harness.service.timeouts);
  expect(swept.sessions).toBeGreaterThanOrEqual(1);
  expect(await signedIn(live)).toBe(true);
  const left = await harness.runtime.pool.oneFirst(sql.unsafe`
    SELECT count(*) FROM app.sessions WHERE id_hash = ${sql.binary(idHash(idle))}
  `);
  expect(Number(left)).toBe(0);
});

test('a short idle time-out really expires a session on the clock', async () => {
  const short = await startApiHarness({ SESSION_IDLE_MINUTES: '0.05' }); // 3 s
  try {
    const { client } = await short.signedInClient();
    expect(await signedIn(client)).toBe(true);
    // The clock passing is the point: wait (without touching the session, which would renew it)
    // until the database, whose clock decides, sees it idle for longer than the 3 s allowed.
    await until(
      async () =>
        Number(
          await short.runtime.pool.oneFirst(sql.unsafe`
            SELECT extract(epoch FROM now() - last_seen_at) FROM app.sessions
            WHERE id_hash = ${sql.binary(idHash(client))}`),
        ) > 3.2,
      30_000,
      'the session to be idle past its limit',
    );
    expect(await signedIn(client)).toBe(false);
  } finally {
    await short.close();
  }
});
