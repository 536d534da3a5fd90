import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import type pg from 'pg';
import type { DatabasePool } from 'slonik';
import { startApiHarness, type ApiHarness } from '../support/api.ts';
import { startDataModule, type DataModuleHarness } from '../support/dataModule.ts';
import { setSnapshot } from '../support/prices.ts';
import {
  expectAbandonedSqlStops as stopsWhenAbandoned,
  lockPrices,
  runningQueries,
} from '../support/slowReads.ts';
import { until } from '../support/wait.ts';

// A request given up on (client gone, deadline passed) must not leave its SQL running. The slow
// query is real (see support/slowReads.ts): history reads wait in the database on a lock.

// No deadline may end the reads first (the API's call to the data module included).
const LONG = {
  DATABASE_STATEMENT_TIMEOUT_MS: '600000',
  REQUEST_TIMEOUT_MS: '600000',
  DATA_TIMEOUT_MS: '600000',
};

async function expectAbandonedSqlStops(
  pool: DatabasePool,
  pgPool: pg.Pool,
  url: string,
  token?: string,
) {
  await stopsWhenAbandoned({
    pool,
    pgPool,
    url,
    ...(token ? { headers: { authorization: `Bearer ${token}` } } : {}),
  });
}

describe('abandoned requests in the data module', () => {
  let data: DataModuleHarness;
  const HOUR = 3_600_000;

  beforeAll(async () => {
    data = await startDataModule(LONG);
  }, 60_000);
  afterAll(async () => {
    await data?.close();
  });

  const at = (path: string) => `${data.server.url}${path}`;
  const window = () => {
    const to = new Date(Math.floor(Date.now() / 60_000) * 60_000);
    return `from=${new Date(to.getTime() - HOUR).toISOString()}&to=${to.toISOString()}`;
  };

  test('history: the client leaving cancels its query', async () => {
    await expectAbandonedSqlStops(
      data.runtime.pool,
      data.runtime.pgPool,
      at('/data/currency/history/BTC?hours=1&intervalSeconds=1'),
      data.readToken,
    );
  }, 120_000);

  test('candles: the client leaving cancels its query', async () => {
    await expectAbandonedSqlStops(
      data.runtime.pool,
      data.runtime.pgPool,
      at(`/data/candles/BTC?${window()}&interval=1s`),
      data.readToken,
    );
  }, 120_000);

  test('export: the client leaving cancels the cursor query and frees its connection', async () => {
    await expectAbandonedSqlStops(
      data.runtime.pool,
      data.runtime.pgPool,
      at(`/data/candles/BTC/export?${window()}&interval=1s&fill=previous`),
      data.readToken,
    );
    // The pool is whole again: the next read is answered.
    const response = await fetch(at('/data/currency/all?limit=1'), {
      headers: { authorization: `Bearer ${data.readToken}` },
    });
    expect(response.status).toBe(200);
  }, 120_000);
});

describe('a passed request deadline cancels the query', () => {
  let data: DataModuleHarness;
  beforeAll(async () => {
    data = await startDataModule({
      DATABASE_STATEMENT_TIMEOUT_MS: '600000',
      REQUEST_TIMEOUT_MS: '1500',
    });
  }, 60_000);
  afterAll(async () => {
    await data?.close();
  });

  test('history past REQUEST_TIMEOUT_MS: 503, and nothing left running', async () => {
    const lock = await lockPrices(data.runtime.pgPool);
    try {
      const response = await fetch(
        `${data.server.url}/data/currency/history/BTC?hours=1&intervalSeconds=1`,
        { headers: { authorization: `Bearer ${data.readToken}` } },
      );
      expect(response.status).toBe(503);
      await until(
        async () => (await runningQueries(data.runtime.pool, lock.pid)) === 0,
        30_000,
        'the timed-out query to stop',
      );
    } finally {
      await lock.release();
    }
  }, 120_000);
});

describe('abandoned requests through the API', () => {
  let harness: ApiHarness;
  let locks: Array<{ release(): Promise<void> }> = [];

  beforeAll(async () => {
    harness = await startApiHarness({ ...LONG, DATA_CACHE_MS: '600000' });
    await setSnapshot(harness.runtime.pool, 'BTC', 100, new Date());
    // The API's snapshot (and the data module's day statistics) are read before the lock.
    expect((await fetch(`${harness.url}/api/currency/all`)).status).toBe(200);
  }, 60_000);
  afterEach(async () => {
    await Promise.all(locks.map((lock) => lock.release()));
    locks = [];
  });
  afterAll(async () => {
    await harness?.close();
  });

  test("the browser leaving aborts the API's call and the data module's query", async () => {
    await expectAbandonedSqlStops(
      harness.runtime.pool,
      harness.runtime.pgPool,
      `${harness.url}/api/currency/history/BTC?hours=1&intervalSeconds=1`,
    );
  }, 120_000);
});
