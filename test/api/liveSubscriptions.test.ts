import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { setTimeout as sleep } from 'node:timers/promises';
import { io } from 'socket.io-client';
import { PRICE_FEED_APPLICATION_NAME } from '../../src/api/live/priceFeed.ts';
import { eventually } from '../support/wait.ts';
import { setSnapshot } from '../support/prices.ts';
import {
  connectTrader,
  feedsListening,
  startLiveHarness,
  type LiveHarness,
} from '../support/live.ts';

let harness: LiveHarness;
let url: string;
// The server sends at most one price per code per window; short here, so tests that must tick a
// code again in a fresh window wait little.
const COALESCE_MS = 300;

/** Deliberate wait: the coalescing window of the codes just sent must pass (a clock rule). */
const coalesceWindowPassed = () => sleep(COALESCE_MS + 100);

beforeAll(async () => {
  harness = await startLiveHarness({ coalesceMs: COALESCE_MS });
  url = harness.instances[0]!.url;
  await feedsListening(harness);
});

afterAll(async () => {
  await harness.close();
});

describe('subscribe and unsubscribe', () => {
  test('the acknowledgement carries the current values; unknown codes are named', async () => {
    await harness.tick({ BTC: 50_000, ETH: 3_000 });
    const client = await harness.trader();
    await eventually(async () => {
      const ack = await client.emit('subscribe', { codes: ['BTC'] });
      return ack.prices[0]?.value === 50_000;
    });
    const ack = await client.emit('subscribe', { codes: ['btc', 'ETH', 'NOPE'] });
    expect(ack).toEqual({
      ok: true,
      prices: [
        { code: 'BTC', value: 50_000, timestamp: expect.any(String) },
        { code: 'ETH', value: 3_000, timestamp: expect.any(String) },
      ],
      unknown: ['NOPE'],
    });
    expect(client.snapshots[0]).toEqual({ signedIn: false, prices: [], portfolio: null });
  });

  test('price events reach subscribers of that code only, until they unsubscribe', async () => {
    const btc = await harness.trader();
    const eth = await harness.trader();
    expect((await btc.emit('subscribe', { codes: ['BTC'] })).ok).toBe(true);
    expect((await eth.emit('subscribe', { codes: ['ETH'] })).ok).toBe(true);
    await harness.tick({ BTC: 51_000, ETH: 3_100, SOL: 150 });
    await btc.waitForPrice('BTC', 51_000);
    await eth.waitForPrice('ETH', 3_100);
    expect(btc.prices.every((p) => p.code === 'BTC')).toBe(true);
    expect(eth.prices.every((p) => p.code === 'ETH')).toBe(true);
    expect(btc.prices.at(-1)).toEqual({
      code: 'BTC',
      value: 51_000,
      timestamp: harness.clock.now().toISOString(),
      receivedAt: expect.any(Number),
    });

    const ack = await btc.emit('unsubscribe', { codes: ['BTC'] });
    expect(ack).toEqual({ ok: true, codes: [] });
    const heard = btc.prices.length;
    const witness = await harness.trader({ codes: ['BTC'] });
    await harness.tick({ BTC: 52_000, ETH: 3_200 });
    await eth.waitForPrice('ETH', 3_200);
    await witness.waitForPrice('BTC', 52_000);
    // One round trip on btc's own connection: a price sent to it would have arrived before this.
    await btc.emit('unsubscribe', { codes: ['BTC'] });
    expect(btc.prices.length).toBe(heard);
  });

  test('codes given at the handshake are followed at once and come back in the snapshot', async () => {
    const client = await harness.trader({ codes: ['ETH', 'DOGE'] });
    expect(client.snapshots[0].prices).toEqual([
      { code: 'ETH', value: expect.any(Number), timestamp: expect.any(String) },
    ]);
    await harness.tick({ ETH: 3_300 });
    await client.waitForPrice('ETH', 3_300);
  });

  test('a reconnecting client gets a fresh snapshot with what moved while it was away', async () => {
    const client = await harness.trader({ codes: ['BTC'] });
    const witness = await harness.trader({ codes: ['BTC'] });
    client.socket.disconnect(); // away (the connection dropped, the laptop slept …)
    await harness.tick({ BTC: 53_500 });
    await witness.waitForPrice('BTC', 53_500); // the server has taken the new price
    client.socket.connect();
    await eventually(() => client.snapshots.length >= 2, 10_000, 'a second snapshot');
    const last = client.snapshots.at(-1);
    expect(last.prices).toEqual([{ code: 'BTC', value: 53_500, timestamp: expect.any(String) }]);
  });
});

describe('batched delivery (auth.batch)', () => {
  test('one prices event per cycle with the followed codes only; unsubscribe narrows it', async () => {
    const a = await harness.trader({ batch: true, codes: ['BTC', 'ETH'] });
    const b = await harness.trader({ batch: true, codes: ['ETH', 'BTC'] }); // the same set
    const c = await harness.trader({ batch: true });
    expect(a.snapshots[0].prices.map((p: any) => p.code).sort()).toEqual(['BTC', 'ETH']);
    expect(await c.emit('subscribe', { codes: ['SOL'] })).toMatchObject({ ok: true });
    await coalesceWindowPassed(); // so the cycle below goes out whole, at once
    await harness.tick({ BTC: 60_000, ETH: 4_000, SOL: 160, ADA: 0.4 });
    const stamp = harness.clock.now().toISOString();
    for (const client of [a, b]) {
      await eventually(() => client.batches.length === 1, 10_000, 'a batch');
      expect(client.batches[0]).toEqual({
        timestamp: stamp,
        codes: ['BTC', 'ETH'],
        values: [60_000, 4_000],
      });
    }
    await eventually(() => c.batches.length === 1, 10_000, 'a batch for SOL');
    expect(c.batches[0]).toEqual({ timestamp: stamp, codes: ['SOL'], values: [160] });

    expect(await a.emit('unsubscribe', { codes: ['BTC'] })).toEqual({ ok: true, codes: ['ETH'] });
    await coalesceWindowPassed();
    await harness.tick({ BTC: 61_000, ETH: 4_100 });
    await eventually(() => a.batches.length === 2 && b.batches.length === 2, 10_000, 'batches');
    expect(a.batches[1]).toMatchObject({ codes: ['ETH'], values: [4_100] });
    expect(b.batches[1]).toMatchObject({ codes: ['BTC', 'ETH'], values: [61_000, 4_100] });
    // Batch connections never get per-currency events as well.
    const perCurrency: unknown[] = [];
    a.socket.on('price', (p) => perCurrency.push(p));
    await coalesceWindowPassed();
    await harness.tick({ ETH: 4_200 });
    await eventually(() => a.batches.length === 3, 10_000, 'a third batch');
    expect(perCurrency).toEqual([]);
  });
});

describe('coalescing', () => {
  test('at most one price per code per window, the latest value winning', async () => {
    // LINK is ticked by no other test: its window is open, so the first price goes out at once.
    const client = await harness.trader({ codes: ['LINK'] });
    for (let i = 1; i <= 6; i++) await harness.tick({ LINK: 100 + i });
    await client.waitForPrice('LINK', 106, 10_000);
    const heard = client.prices.filter((p) => p.code === 'LINK');
    // The first at once, then the held ones coalesced to the latest, a window apart (a loaded
    // machine may spread the six ticks over more than one window, hence no exact list).
    expect(heard[0]!.value).toBe(101);
    expect(heard.at(-1)!.value).toBe(106);
    expect(heard.length).toBeLessThan(6);
    for (let i = 1; i < heard.length; i++) {
      expect(heard[i]!.value).toBeGreaterThan(heard[i - 1]!.value);
      expect(heard[i]!.receivedAt - heard[i - 1]!.receivedAt).toBeGreaterThanOrEqual(
        COALESCE_MS / 2,
      );
    }
  });
});

describe('malformed messages', () => {
  test('every bad payload gets an error acknowledgement and the connection carries on', async () => {
    const client = await harness.trader();
    const bad: unknown[] = [
      undefined,
      'BTC',
      42,
      null,
      { codes: 'BTC' },
      { codes: [] },
      { codes: ['B T C'] },
      { codes: [{ $gt: '' }] },
      { codes: Array.from({ length: 501 }, (_, i) => `C${i}`) },
    ];
    for (const payload of bad) {
      const ack = await client.emit('subscribe', payload);
      expect(ack).toMatchObject({ ok: false, error: { code: 'invalid_message' } });
      expect(typeof ack.error.message).toBe('string');
    }
    expect(await client.emit('unsubscribe', { codes: 7 })).toMatchObject({
      ok: false,
      error: { code: 'invalid_message', details: [{ path: 'payload.codes' }] },
    });
    expect(await client.emit('buy', { code: 'BTC' })).toMatchObject({
      ok: false,
      error: { code: 'unknown_event' },
    });
    // Without an acknowledgement callback: nothing to answer, nothing breaks.
    client.socket.emit('subscribe', 'nonsense');
    client.socket.emit('whatever');
    expect(await client.emit('subscribe', { codes: ['BTC'] })).toMatchObject({ ok: true });
  });

  test('an oversized message closes only that connection', async () => {
    const victim = await harness.trader({ reconnection: false });
    const bystander = await harness.trader({ codes: ['BTC'] });
    const closed = new Promise((resolve) => victim.socket.once('disconnect', resolve));
    victim.socket.emit('subscribe', { codes: ['X'.repeat(200 * 1024)] });
    await closed;
    await harness.tick({ BTC: 54_000 });
    await bystander.waitForPrice('BTC', 54_000);
  });

  test('a garbled Socket.IO packet is refused without harm to the server', async () => {
    const socket = new WebSocket(
      `${url.replace('http', 'ws')}/websocket/?EIO=4&transport=websocket`,
    );
    await new Promise((resolve) => socket.addEventListener('open', resolve));
    socket.send('40/trader,');
    socket.send('42/trader,[not json');
    socket.send('\u0000\u0001garbage');
    await new Promise((resolve) => socket.addEventListener('close', resolve));
    const client = await harness.trader();
    expect((await client.emit('subscribe', { codes: ['ETH'] })).ok).toBe(true);
  });
});

describe('handshake', () => {
  test('a browser from a foreign origin is refused; our own origin is welcome', async () => {
    await expect(connectTrader(url, { origin: 'https://evil.example' })).rejects.toThrow();
    const own = await harness.trader({ origin: url });
    expect(own.snapshots[0].signedIn).toBe(false);
  });

  test('the Socket.IO client bundle is served', async () => {
    const response = await fetch(`${url}/websocket/socket.io.esm.min.js`);
    expect(response.status).toBe(200);
    expect(await response.text()).toContain('export');
  });
});

describe('the price feed', () => {
  test('reconnects after its connection is killed and catches up on missed prices', async () => {
    const client = await harness.trader({ codes: ['ADA'] });
    await harness.tick({ ADA: 0.5 });
    await client.waitForPrice('ADA', 0.5);
    // A price written while the feed is away: its event is lost, the snapshot is not.
    await harness.runtime.pool.query(
      (await import('slonik')).sql.unsafe`
        SELECT pg_terminate_backend(pid) FROM pg_stat_activity
        WHERE application_name = ${PRICE_FEED_APPLICATION_NAME} AND datname = current_database()`,
    );
    await setSnapshot(harness.runtime.pool, 'ADA', 0.6, harness.clock.next());
    await client.waitForPrice('ADA', 0.6, 15_000);
    await feedsListening(harness);
    await harness.tick({ ADA: 0.7 });
    await client.waitForPrice('ADA', 0.7);
  });
});

test('an anonymous raw socket.io client without auth is served prices', async () => {
  const socket = io(`${url}/trader`, { path: '/websocket', transports: ['polling'] });
  try {
    const ack = await socket.timeout(10_000).emitWithAck('subscribe', { codes: ['BTC'] });
    expect(ack.ok).toBe(true);
  } finally {
    socket.disconnect();
  }
});
