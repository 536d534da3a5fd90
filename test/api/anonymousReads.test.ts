import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { startApiHarness, type ApiHarness } from '../support/api.ts';
import { getJson } from '../support/http.ts';
import { setSnapshot } from '../support/prices.ts';
import { shedTally, untilShedAndTimed } from '../support/shedAnswers.ts';
import { lockPrices, runningQueries } from '../support/slowReads.ts';
import { until } from '../support/wait.ts';

// Anonymous market reads (history and candles, every address together) may ask for at most
// API_ANONYMOUS_READS_MAX_POINTS points at once in the API, whatever the data module would take:
// a large read that does not fit beside a running one is shed at once with 503 + Retry-After,
// while a small one still fits and a signed-in user's read is not counted. The slow reads are
// real: history reads waiting on a lock in the database (support/slowReads.ts).

let harness: ApiHarness;

beforeAll(async () => {
  harness = await startApiHarness({
    DATABASE_STATEMENT_TIMEOUT_MS: '600000',
    REQUEST_TIMEOUT_MS: '600000',
    DATA_CACHE_MS: '600000',
    DATA_TIMEOUT_MS: '600000',
    // The data module would run four at once: the API's anonymous budget is what is tested.
    HISTORY_MAX_CONCURRENT: '4',
    // An hour at one minute is 60 points: one such read fits, two do not.
    API_ANONYMOUS_READS_MAX_POINTS: '100',
  });
  await setSnapshot(harness.runtime.pool, 'BTC', 100, new Date());
  expect((await fetch(`${harness.url}/api/currency/all`)).status).toBe(200);
}, 60_000);

afterAll(async () => {
  await harness?.close();
});

const GROUP = 'anonymous market read';

type Answer = Awaited<ReturnType<typeof getJson>>;

function expectShed(answer: Answer) {
  expect(answer.status).toBe(503);
  expect(answer.body.error.code).toBe('overloaded');
  expect(answer.body.error.message).toMatch(/anonymous market read/);
  expect(Number(answer.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
}

test('a large anonymous read beside a running one is shed at once; small and signed-in reads pass', async () => {
  const { client } = await harness.signedInClient();
  const shedBefore = await shedTally(GROUP, 'queue_full');
  const hourAtMinutes = `${harness.url}/api/currency/history/BTC?hours=1&intervalSeconds=60`;
  const running = () => runningQueries(harness.runtime.pool, lock.pid);
  const lock = await lockPrices(harness.runtime.pgPool);
  let locked = true;
  const unlock = async () => {
    if (locked) await lock.release();
    locked = false;
  };
  const controller = new AbortController();
  const anonymous = (url: string) => getJson(url, undefined, { signal: controller.signal });
  const pending: Array<Promise<unknown>> = [];
  try {
    const first = anonymous(hourAtMinutes);
    pending.push(first);
    await until(async () => (await running()) >= 1, 60_000, 'the first read in the database');

    // Another 60 points do not fit beside the first 60: shed at once, on either route.
    expectShed(await anonymous(`${hourAtMinutes}&again=1`));
    expectShed(
      await anonymous(`${harness.url}/api/currency/candles/BTC?hours=1&intervalSeconds=60`),
    );
    // Both counted, and both answers timed by the platform itself.
    const shedAfter = await untilShedAndTimed(GROUP, 'queue_full', shedBefore, 2);
    expect(shedAfter.shed - shedBefore.shed).toBe(2);
    expect(shedAfter.timed - shedBefore.timed).toBe(2);
    const firstOnly = await running();

    // Two points fit beside them: admitted (it reaches the database, or is answered at once).
    let small: Answer | undefined;
    const smallRead = anonymous(
      `${harness.url}/api/currency/history/BTC?hours=2&intervalSeconds=3600`,
    );
    pending.push(smallRead.then((answer) => (small = answer)));
    await until(
      async () => small !== undefined || (await running()) > firstOnly,
      60_000,
      'the small read to be admitted',
    );
    const beforeSignedIn = await running();

    // A signed-in user's read is not counted: it reaches the database beside the others.
    const signedIn = client.get('/api/currency/history/BTC?hours=1&intervalSeconds=60');
    pending.push(signedIn);
    await until(
      async () => (await running()) > beforeSignedIn,
      60_000,
      'the signed-in read to reach the database',
    );
    await unlock();
    expect((await signedIn).status).toBeLessThan(300);
    expect([200, 204]).toContain((await first).status);
    expect([200, 204]).toContain((await smallRead).status);
    await Promise.all(pending);
  } finally {
    await unlock();
    controller.abort();
  }
  // Their answers sent, the budget is free again.
  expect([200, 204]).toContain((await getJson(hourAtMinutes)).status);
}, 180_000);
