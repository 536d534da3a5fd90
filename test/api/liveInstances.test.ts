import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { eventually } from '../support/wait.ts';
import { feedsListening, startLiveHarness, type LiveHarness } from '../support/live.ts';
import { setSnapshot } from '../support/prices.ts';

// Two API instances (own pools, own HTTP servers, as two processes) on one database, a client
// on each: what one instance emits reaches the clients of the other through the PostgreSQL
// adapter, and each instance's own LISTEN feeds its clients' prices.

let harness: LiveHarness;

beforeAll(async () => {
  harness = await startLiveHarness({ instances: 2 });
  await setSnapshot(harness.runtime.pool, 'BTC', 100, harness.clock.now());
  await feedsListening(harness);
});

afterAll(async () => {
  await harness.close();
});

describe('two API instances', () => {
  test('both clients receive every price, once each', async () => {
    const first = await harness.trader({ instance: 0, codes: ['BTC'] });
    const second = await harness.trader({ instance: 1, codes: ['BTC'] });
    await harness.tick({ BTC: 101 });
    await first.waitForPrice('BTC', 101);
    await second.waitForPrice('BTC', 101);
    // A duplicate would be relayed through the adapter, whose events arrive in order: once a
    // notice sent after the price through each instance's adapter is here, it would be too.
    const notices = [0, 0];
    first.socket.on('notice', () => notices[0]!++);
    second.socket.on('notice', () => notices[1]!++);
    for (const instance of harness.instances) {
      instance.service.live.server!.of('/trader').emit('notice', { marker: true });
    }
    await eventually(() => notices.every((n) => n === 2), 10_000, 'the notices from both');
    expect(first.prices.filter((p) => p.value === 101)).toHaveLength(1);
    expect(second.prices.filter((p) => p.value === 101)).toHaveLength(1);
  });

  test('a holding added through one instance updates the owner connected to the other', async () => {
    const owner = await harness.signUp(0);
    const onSecond = await harness.trader({ instance: 1, cookie: owner.cookie });
    const onFirst = await harness.trader({ instance: 0, cookie: owner.cookie });
    const response = await owner.client.post('/api/portfolio/add', {
      currencyCode: 'BTC',
      shares: 3,
      walletDollars: 0,
    });
    expect(response.status).toBe(200);
    for (const socket of [onSecond, onFirst]) {
      await eventually(
        () => socket.portfolios.some((p) => p.assets[0]?.shares === 3 && p.shareBalance === 303),
        10_000,
        'portfolio on both instances',
      );
    }
  });

  test('an event emitted to a room by one instance reaches the room’s clients on the other', async () => {
    const owner = await harness.signUp(0);
    const onSecond = await harness.trader({ instance: 1, cookie: owner.cookie });
    const received: unknown[] = [];
    onSecond.socket.on('notice', (payload) => received.push(payload));
    harness.instances[0]!.service.live.server!.of('/trader')
      .to(`user:${owner.userId}`)
      .emit('notice', { hello: 'from instance 1' });
    await eventually(() => received.length === 1, 10_000, 'cross-instance emit');
    expect(received[0]).toEqual({ hello: 'from instance 1' });
  });
});
