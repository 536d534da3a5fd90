import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { createHash } from 'node:crypto';
import { sql } from 'slonik';
import { eventually } from '../support/wait.ts';
import {
  feedsListening,
  startLiveHarness,
  type LiveHarness,
  type TraderClient,
} from '../support/live.ts';
import { setSnapshot } from '../support/prices.ts';
import { ApiClient } from '../support/apiClient.ts';

// A live connection follows its session: logout (on any instance) and idle or absolute expiry
// end the user's connections on every API instance within a second, and no portfolio event
// reaches them afterwards. Two instances with their own pools, as two processes.

let harness: LiveHarness;
let price = 100;

beforeAll(async () => {
  harness = await startLiveHarness({
    instances: 2,
    coalesceMs: 50,
    env: { SESSION_IDLE_MINUTES: '30', SESSION_ABSOLUTE_HOURS: '12', SESSIONS_MAX_PER_USER: '3' },
  });
  await setSnapshot(harness.runtime.pool, 'BTC', price, harness.clock.now());
  await feedsListening(harness);
});

afterAll(async () => {
  await harness.close();
});

/** A signed-in user holding BTC, connected to both instances. */
async function holderOnBothInstances() {
  const user = await harness.signUp(0);
  const added = await user.client.post('/api/portfolio/add', {
    currencyCode: 'BTC',
    shares: 1,
    walletDollars: 0,
  });
  expect(added.status).toBe(200);
  const sockets = [
    await harness.trader({ instance: 0, cookie: user.cookie }),
    await harness.trader({ instance: 1, cookie: user.cookie }),
  ];
  return { ...user, sockets };
}

function disconnectReasons(sockets: TraderClient[]) {
  const reasons: string[] = [];
  for (const trader of sockets) trader.socket.on('disconnect', (reason) => reasons.push(reason));
  return reasons;
}

/** Moves BTC and waits until `witness` (still signed in) got the new portfolio on both instances. */
async function movePriceSeenBy(witness: TraderClient[]) {
  price += 1;
  await harness.tick({ BTC: price });
  for (const socket of witness) {
    await eventually(
      () => socket.portfolios.some((p) => p.totalWorth === price),
      10_000,
      `portfolio at ${price}`,
    );
  }
}

async function expectEndedAndSilent(ended: TraderClient[], witness: TraderClient[]) {
  const reasons = disconnectReasons(ended);
  return {
    async within(ms: number) {
      await eventually(() => ended.every((s) => !s.socket.connected), ms, 'connections ended');
      expect(reasons).toEqual(['io server disconnect', 'io server disconnect']);
      const counts = ended.map((s) => s.portfolios.length);
      await movePriceSeenBy(witness);
      expect(ended.map((s) => s.portfolios.length)).toEqual(counts);
    },
  };
}

test('logout ends the session’s connections on both instances within a second', async () => {
  const owner = await holderOnBothInstances();
  const witness = await holderOnBothInstances();
  await movePriceSeenBy([...owner.sockets, ...witness.sockets]);

  const check = await expectEndedAndSilent(owner.sockets, witness.sockets);
  const logout = await owner.client.post('/api/authorize/logout', {});
  expect(logout.status).toBe(200);
  await check.within(1000);
  expect(witness.sockets.every((s) => s.socket.connected)).toBe(true);
});

async function age(cookie: string, column: 'last_seen_at' | 'created_at', minutes: number) {
  const sid = /(?:^|; )sid=([^;]+)/.exec(cookie)![1]!;
  const hash = createHash('sha256').update(sid).digest();
  await harness.runtime.pool.query(sql.unsafe`
    UPDATE app.sessions SET ${sql.identifier([column])} = now() - make_interval(mins => ${minutes})
    WHERE id_hash = ${sql.binary(hash)}
  `);
}

test('an idle session’s connections end within a second of its expiry', async () => {
  const owner = await holderOnBothInstances();
  const witness = await holderOnBothInstances();
  const check = await expectEndedAndSilent(owner.sockets, witness.sockets);
  await age(owner.cookie, 'last_seen_at', 31);
  await check.within(1000);
});

test('a session past its absolute time-out ends its connections within a second', async () => {
  const owner = await holderOnBothInstances();
  const witness = await holderOnBothInstances();
  const check = await expectEndedAndSilent(owner.sockets, witness.sockets);
  await age(owner.cookie, 'created_at', 12 * 60 + 1);
  await check.within(1000);
});

test('a live session keeps its connections', async () => {
  const owner = await holderOnBothInstances();
  await age(owner.cookie, 'last_seen_at', 29);
  await movePriceSeenBy(owner.sockets);
  expect(owner.sockets.every((s) => s.socket.connected)).toBe(true);
});

test('signing in past SESSIONS_MAX_PER_USER ends the oldest session and its connections on both instances', async () => {
  const owner = await holderOnBothInstances();
  const witness = await holderOnBothInstances();
  const signIn = async (instance: number) => {
    const client = new ApiClient(harness.instances[instance]!.url);
    const answer = await client.post('/api/authorize/login', {
      email: owner.account.email,
      password: owner.account.password,
    });
    expect(answer.status).toBe(200);
    return client;
  };
  const second = await signIn(1);
  const third = await signIn(0);
  // Three sessions: all alive, the first one's connections too.
  await movePriceSeenBy([...owner.sockets, ...witness.sockets]);
  expect((await owner.client.get('/api/authorize/isloggedin')).status).toBe(200);

  const check = await expectEndedAndSilent(owner.sockets, witness.sockets);
  const fourth = await signIn(1);
  await check.within(1000);
  expect((await owner.client.get('/api/authorize/isloggedin')).status).toBe(401);
  for (const client of [second, third, fourth]) {
    expect((await client.get('/api/authorize/isloggedin')).status).toBe(200);
  }
  const sessions = await harness.runtime.pool.oneFirst(
    sql.unsafe`SELECT count(*)::int FROM app.sessions WHERE user_id = ${owner.userId}`,
  );
  expect(sessions).toBe(3);
});
