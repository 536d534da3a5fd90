import { afterAll, beforeAll, describe, test } from '@jest/globals';
import { startApiHarness, type ApiHarness } from '../support/api.ts';
import { startDataModule, type DataModuleHarness } from '../support/dataModule.ts';
import { setSnapshot } from '../support/prices.ts';
import { expectAbandonedSqlStops } from '../support/slowReads.ts';

// The other long reads follow the rule of history, candles and export (abandonedRequests.test.ts):
// when the client leaves, nothing of its SQL runs on. Each read really waits in the database on a
// lock of the table it reads.

// No deadline may end the reads first (the API's call to the data module included).
const LONG = {
  DATABASE_STATEMENT_TIMEOUT_MS: '600000',
  REQUEST_TIMEOUT_MS: '600000',
  DATA_TIMEOUT_MS: '600000',
};

describe('signal read-backs of the data module', () => {
  let data: DataModuleHarness;
  beforeAll(async () => {
    data = await startDataModule(LONG);
  }, 60_000);
  afterAll(async () => {
    await data?.close();
  });

  test.each([
    ['/data/predictions?code=BTC', 'predictions'],
    ['/data/predictions?code=BTC&intervalSeconds=60', 'predictions'],
    ['/data/news-sentiment?intervalSeconds=60', 'news_sentiment'],
    ['/data/training-sessions', 'training_sessions'],
  ])(
    '%s: the client leaving cancels its query',
    async (path, table) => {
      await expectAbandonedSqlStops({
        pool: data.runtime.pool,
        pgPool: data.runtime.pgPool,
        url: `${data.server.url}${path}`,
        headers: { authorization: `Bearer ${data.readToken}` },
        table,
      });
    },
    120_000,
  );
});

describe("the API's portfolio history", () => {
  let harness: ApiHarness;
  let cookie: string;
  beforeAll(async () => {
    harness = await startApiHarness({ ...LONG, DATA_CACHE_MS: '600000' });
    const { client } = await harness.signedInClient();
    await setSnapshot(harness.runtime.pool, 'BTC', 100, new Date());
    const added = await client.post('/api/portfolio/add', {
      currencyCode: 'BTC',
      shares: 1,
      walletDollars: 0,
    });
    if (added.status !== 200) throw new Error(`portfolio/add answered ${added.status}`);
    cookie = client.cookieHeader();
    // The API's snapshot of prices (shared by every request, never abandoned with one; the
    // asset routes name their points with it) is read before the lock.
    const all = await fetch(`${harness.url}/api/currency/all`);
    if (all.status !== 200) throw new Error(`currency/all answered ${all.status}`);
  }, 60_000);
  afterAll(async () => {
    await harness?.close();
  });

  test.each([
    '/api/portfolio/history/get?hours=1&intervalSeconds=60',
    '/api/portfolio/history/get/asset?hours=1&intervalSeconds=60',
    '/api/portfolio/history/get/asset/BTC?hours=1&intervalSeconds=60',
  ])(
    "%s: the browser leaving aborts the data module's query",
    async (path) => {
      await expectAbandonedSqlStops({
        pool: harness.runtime.pool,
        pgPool: harness.runtime.pgPool,
        url: `${harness.url}${path}`,
        headers: { cookie },
      });
    },
    120_000,
  );
});
