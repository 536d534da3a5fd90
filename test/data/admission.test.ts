import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { startApiHarness, type ApiHarness } from '../support/api.ts';
import { startDataModule, type DataModuleHarness } from '../support/dataModule.ts';
import { getJson } from '../support/http.ts';
import { setSnapshot } from '../support/prices.ts';
import { post, predictionRequest } from '../support/signals.ts';
import { shedTally, untilShedAndTimed } from '../support/shedAnswers.ts';
import { lockPrices, runningQueries } from '../support/slowReads.ts';
import { until } from '../support/wait.ts';

// Admission control: past a route's concurrency limit and its short queue, requests are shed
// with 503 and Retry-After; past a client's rate, 429 and Retry-After; health, snapshots,
// sign-in and writes stay served meanwhile (their own pool); never a 500. The slow reads are
// real (support/slowReads.ts): history reads waiting on a lock in the database.

const LONG = { DATABASE_STATEMENT_TIMEOUT_MS: '600000', REQUEST_TIMEOUT_MS: '600000' };

type Answer = Awaited<ReturnType<typeof getJson>>;

/** Fires requests without waiting; their answers gather in `answers` as they arrive. */
function fire(urls: string[], token?: string) {
  const answers: Answer[] = [];
  const controller = new AbortController();
  const all = urls.map((url) =>
    getJson(url, token, { signal: controller.signal }).then(
      (answer) => {
        answers.push(answer);
      },
      () => {},
    ),
  );
  return { answers, abort: () => controller.abort(), settled: () => Promise.all(all) };
}

function expectShed(answer: Answer) {
  expect(answer.status).toBe(503);
  expect(answer.body.error.code).toBe('overloaded');
  expect(Number(answer.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
}

describe('concurrency gates of the data module', () => {
  let data: DataModuleHarness;
  const HOUR = 3_600_000;

  beforeAll(async () => {
    data = await startDataModule({
      ...LONG,
      HISTORY_MAX_CONCURRENT: '2',
      CANDLES_MAX_CONCURRENT: '1',
      ADMISSION_QUEUE_LENGTH: '1',
      ADMISSION_QUEUE_WAIT_MS: '60000',
      DATABASE_READ_POOL_SIZE: '4',
      DATABASE_POOL_SIZE: '2',
    });
    // The snapshot's day statistics read the price table: computed once before it is locked.
    await setSnapshot(data.runtime.pool, 'BTC', 100, new Date());
    expect((await getJson(`${data.server.url}/data/currency/all`, data.readToken)).status).toBe(
      200,
    );
  }, 60_000);
  afterAll(async () => {
    await data?.close();
  });

  const window = () => {
    const to = new Date(Math.floor(Date.now() / 60_000) * 60_000);
    return `from=${new Date(to.getTime() - HOUR).toISOString()}&to=${to.toISOString()}`;
  };

  test.each([
    ['history', 2, () => '/data/currency/history/BTC?hours=1&intervalSeconds=1'],
    ['candle', 1, () => `/data/candles/BTC?${window()}&interval=1s`],
  ])(
    '%s: a full gate and queue shed at once with 503 + Retry-After, while health, snapshots and writes are served',
    async (group, limit, path) => {
      const shedBefore = await shedTally(group, 'queue_full');
      const lock = await lockPrices(data.runtime.pgPool);
      const url = `${data.server.url}${path()}`;
      const admitted = fire(
        Array.from({ length: limit }, () => url),
        data.readToken,
      );
      let burst: ReturnType<typeof fire> | undefined;
      try {
        await until(
          async () => (await runningQueries(data.runtime.pool, lock.pid)) >= limit,
          60_000,
          'the admitted reads to wait in the database',
        );
        // One more waits in the queue; the rest are shed.
        burst = fire(
          Array.from({ length: 6 }, () => url),
          data.readToken,
        );
        await until(async () => burst!.answers.length >= 5, 60_000, 'the shed answers');
        for (const answer of burst.answers) expectShed(answer);
        // Each counted, and its answer timed by the data module itself.
        const shed = burst.answers.length;
        const shedAfter = await untilShedAndTimed(group, 'queue_full', shedBefore, shed);
        expect(shedAfter.shed - shedBefore.shed).toBe(shed);
        expect(shedAfter.timed - shedBefore.timed).toBe(shed);

        // Bounded only so that a regression fails instead of hanging.
        const signal = AbortSignal.timeout(60_000);
        const ready = await getJson(`${data.server.url}/health/ready`, undefined, { signal });
        expect(ready.status).toBe(200);
        const snapshot = await getJson(
          `${data.server.url}/data/currency/all?limit=5`,
          data.readToken,
          { signal },
        );
        expect(snapshot.status).toBe(200);
        const write = await post(
          `${data.server.url}/data/predictions/add`,
          data.writeToken,
          predictionRequest(),
        );
        expect(write.status).toBe(202);
      } finally {
        await lock.release();
      }
      // The admitted and the queued one are answered once the reads can run.
      await admitted.settled();
      await burst?.settled();
      const all = [...admitted.answers, ...(burst?.answers ?? [])];
      expect(all).toHaveLength(limit + 6);
      expect(all.filter((a) => a.status >= 500 && a.status !== 503)).toEqual([]);
      expect(all.filter((a) => a.status === 200 || a.status === 204)).toHaveLength(limit + 1);
    },
    180_000,
  );
});

describe('admission control through the API', () => {
  let harness: ApiHarness;

  beforeAll(async () => {
    harness = await startApiHarness({
      ...LONG,
      DATA_CACHE_MS: '600000',
      HISTORY_MAX_CONCURRENT: '1',
      ADMISSION_QUEUE_LENGTH: '0',
      API_RATE_LIMIT_ANONYMOUS: '5',
      API_RATE_LIMIT_SIGNED_IN: '1000',
    });
    await setSnapshot(harness.runtime.pool, 'BTC', 100, new Date());
    expect((await fetch(`${harness.url}/api/currency/all`)).status).toBe(200);
  }, 60_000);
  afterAll(async () => {
    await harness?.close();
  });

  test('the data gate full: the API sheds with 503 + Retry-After; readiness and sign-up still answer', async () => {
    const lock = await lockPrices(harness.runtime.pgPool);
    const url = `${harness.url}/api/currency/history/BTC?hours=1&intervalSeconds=1`;
    const first = fire([url]);
    try {
      await until(
        async () => (await runningQueries(harness.runtime.pool, lock.pid)) >= 1,
        60_000,
        'the admitted read',
      );
      const shed = await getJson(url);
      expectShed(shed);
      expect((await getJson(`${harness.url}/health/ready`)).status).toBe(200);
      // Sign-up (a password hash and writes) and the session check are served meanwhile.
      const { client } = await harness.signedInClient();
      expect((await client.get('/api/authorize/isloggedin')).status).toBe(200);
    } finally {
      await lock.release();
    }
    await first.settled();
    expect(first.answers).toHaveLength(1);
    expect([200, 204]).toContain(first.answers[0]!.status);
  }, 180_000);

  test('anonymous history past the per-address rate: 429 + Retry-After; a signed-in user is counted apart', async () => {
    const url = `${harness.url}/api/currency/history/BTC?hours=1&intervalSeconds=60`;
    const burst = fire(Array.from({ length: 12 }, () => url));
    await burst.settled();
    const limited = burst.answers.filter((a) => a.status === 429);
    expect(limited.length).toBeGreaterThanOrEqual(6);
    for (const answer of limited) {
      expect(Number(answer.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    }
    // The rest are answered, or shed by the data module's gate (limit 1 here), never a 500.
    for (const answer of burst.answers.filter((a) => a.status !== 429)) {
      if (answer.status === 503) expectShed(answer);
      else expect([200, 204]).toContain(answer.status);
    }
    const { client } = await harness.signedInClient();
    expect(
      (await client.get('/api/currency/history/BTC?hours=1&intervalSeconds=60')).status,
    ).toBeLessThan(300);
  }, 120_000);
});
