import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { setTimeout as sleep } from 'node:timers/promises';
import { eventually } from '../support/wait.ts';
import { feedsListening, startLiveHarness, type LiveHarness } from '../support/live.ts';
import { setSnapshot } from '../support/prices.ts';

// Portfolio events: to the signed-in owner's connections only, when its value changes.

let harness: LiveHarness;
// At most one portfolio event per user per window; short here, so tests wait little for it.
const COALESCE_MS = 300;

/** Deliberate wait: the user's coalescing window must pass (a clock rule of the server). */
const coalesceWindowPassed = () => sleep(COALESCE_MS + 100);

beforeAll(async () => {
  harness = await startLiveHarness({ coalesceMs: COALESCE_MS });
  // The data module's current prices, which /api/portfolio/add reads.
  await setSnapshot(harness.runtime.pool, 'BTC', 100, harness.clock.now());
  await setSnapshot(harness.runtime.pool, 'ETH', 10, harness.clock.now());
  await feedsListening(harness);
  await harness.tick({ BTC: 100, ETH: 10 });
});

afterAll(async () => {
  await harness.close();
});

describe('portfolio events', () => {
  test('go to the owner when the value of its holdings changes, and to no one else', async () => {
    const owner = await harness.signUp();
    const other = await harness.signUp();
    const ownerSocket = await harness.trader({ cookie: owner.cookie });
    const ownerSecondTab = await harness.trader({ cookie: owner.cookie });
    const otherSocket = await harness.trader({ cookie: other.cookie });
    const anonymous = await harness.trader({ codes: ['BTC', 'ETH'] });

    expect(ownerSocket.snapshots[0]).toMatchObject({
      signedIn: true,
      portfolio: { totalWorth: 0, assets: [] },
    });
    expect(anonymous.snapshots[0].signedIn).toBe(false);
    expect(anonymous.snapshots[0].portfolio).toBeNull();

    // A holding added over HTTP is pushed at once.
    const added = await owner.client.post('/api/portfolio/add', {
      currencyCode: 'BTC',
      shares: 2,
      walletDollars: 50,
    });
    expect(added.status).toBe(200);
    await eventually(() => ownerSocket.portfolios.length >= 1, 10_000, 'portfolio after add');
    expect(ownerSocket.portfolios.at(-1)).toMatchObject({
      shareBalance: 200,
      dollarBalance: 50,
      totalWorth: 250,
      assets: [{ currencyCode: 'BTC', shares: 2, sharesValueInDollars: 200 }],
    });

    // A price move of a held currency revalues it, with the same shape as GET /api/portfolio/get.
    await harness.tick({ BTC: 120 });
    await eventually(
      () => ownerSocket.portfolios.some((p) => p.totalWorth === 290),
      10_000,
      'revalued portfolio',
    );
    await eventually(
      () => ownerSecondTab.portfolios.some((p) => p.totalWorth === 290),
      10_000,
      'second tab',
    );
    const viaHttp = await owner.client.get('/api/portfolio/get');
    expect(Object.keys(ownerSocket.portfolios.at(-1)).sort()).toEqual(
      Object.keys(viaHttp.body).sort(),
    );

    // A currency the owner does not hold, or an unchanged price: nothing is sent.
    // With the window open, a wrong event would go out at once and the move of BTC after it
    // would follow as a second one; only that one must come.
    const count = ownerSocket.portfolios.length;
    await coalesceWindowPassed();
    await harness.tick({ ETH: 11 });
    await harness.tick({ BTC: 120 });
    await anonymous.waitForPrice('ETH', 11);
    await harness.tick({ BTC: 130 });
    await eventually(
      () => ownerSocket.portfolios.some((p) => p.totalWorth === 310),
      10_000,
      'the portfolio revalued at 130',
    );
    expect(ownerSocket.portfolios.slice(count).map((p) => p.totalWorth)).toEqual([310]);

    expect(otherSocket.portfolios).toEqual([]);
    expect(anonymous.portfolios).toEqual([]);
  });

  test('portfolio updates are coalesced to one a window per user, the latest value last', async () => {
    const owner = await harness.signUp();
    await owner.client.post('/api/portfolio/add', {
      currencyCode: 'ETH',
      shares: 1,
      walletDollars: 0,
    });
    const socket = await harness.trader({ cookie: owner.cookie });
    await coalesceWindowPassed(); // the add's own event opened a window: the first tick goes out at once
    for (let i = 1; i <= 5; i++) await harness.tick({ ETH: 20 + i });
    await eventually(
      () => socket.portfolios.some((p) => p.totalWorth === 25),
      10_000,
      'the last value',
    );
    // The first at once, the held ones coalesced to the latest (a loaded machine may spread the
    // five ticks over more than one window, hence no exact list); 25 is the last value sent.
    const worths = socket.portfolios.map((p) => p.totalWorth);
    expect(worths[0]).toBe(21);
    expect(worths.at(-1)).toBe(25);
    expect(worths.length).toBeLessThan(5);
    expect([...worths].sort((a, b) => a - b)).toEqual(worths);
  });

  test('a currency priced for the first time after the feed started is named as over HTTP', async () => {
    // The book was primed before SOL had a price; its first price arrives as an event.
    await setSnapshot(harness.runtime.pool, 'SOL', 20, harness.clock.now());
    await harness.tick({ SOL: 20 });
    const owner = await harness.signUp();
    await owner.client.post('/api/portfolio/add', {
      currencyCode: 'SOL',
      shares: 1,
      walletDollars: 0,
    });
    const socket = await harness.trader({ cookie: owner.cookie });
    const viaHttp = await owner.client.get('/api/portfolio/get');
    expect(viaHttp.body.assets[0].currencyName).toBe('Solana');
    expect(socket.snapshots[0].portfolio.assets[0].currencyName).toBe('Solana');
    await coalesceWindowPassed();
    await harness.tick({ SOL: 21 });
    await eventually(() => socket.portfolios.some((p) => p.totalWorth === 21), 10_000, 'SOL at 21');
    expect(socket.portfolios.at(-1).assets[0].currencyName).toBe('Solana');
  });

  test('a forged or unknown session cookie connects anonymously', async () => {
    const owner = await harness.signUp();
    const forged = owner.cookie.replace(
      /sid=[^;]+/,
      'sid=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
    );
    const a = await harness.trader({ cookie: forged });
    expect(a.snapshots[0]).toMatchObject({ signedIn: false, portfolio: null });
    const unsigned = await harness.trader({
      cookie: owner.cookie.replace(/; ?sid\.sig=[^;]+/, ''),
    });
    expect(unsigned.snapshots[0].signedIn).toBe(false);

    await owner.client.get('/api/authorize/logout');
    const afterLogout = await harness.trader({ cookie: owner.cookie });
    expect(afterLogout.snapshots[0].signedIn).toBe(false);
  });
});
