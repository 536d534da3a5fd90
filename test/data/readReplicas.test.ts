import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import pg from 'pg';
import { sql, type DatabasePool } from 'slonik';
import { queryOpensJson } from '../../src/data/history/candleQuery.ts';
import { refreshRollups } from '../../src/data/history/refresh.ts';
import { RunCache } from '../../src/data/history/runCache.ts';
import { markTouchedRanges } from '../../src/data/prices/invalidations.ts';
import { createDataService } from '../../src/data/service.ts';
import { loadConfig } from '../../src/shared/config.ts';
import { checkReplicas } from '../../src/shared/db/replicaCheck.ts';
import { createDatabasePool } from '../../src/shared/db/pool.ts';
import type { RunningServer } from '../../src/shared/http/server.ts';
import { createRuntime, type Runtime } from '../../src/shared/runtime.ts';
import { randomCandles } from '../support/candles.ts';
import { startDataModule, type DataModuleHarness } from '../support/dataModule.ts';
import { getJson, serve } from '../support/http.ts';
import {
  expectedFirstPerBucket,
  insertCandles,
  setSnapshot,
  type Candle,
} from '../support/prices.ts';
import { replicaUnsupported, replicaUrl, testReplica } from '../support/replica.ts';
import { startReplica, stopReplica, type ReplicaCluster } from '../support/streamingReplica.ts';
import { eventually } from '../support/wait.ts';

// The data module with READ_DATABASE_URL naming a real physical streaming replica of the test
// server (test/support/replica.ts), beside one reading from the primary alone, on one database.

const unsupported = replicaUnsupported();
if (unsupported) process.stderr.write(`\nread replica tests skipped: ${unsupported}\n`);
const describeReplica = unsupported ? describe.skip : describe;

const HOUR = 3_600_000;
const CODE = 'BTC';
const now = Date.now();
// The data starts after the start of a 72-hour window and ends an hour before now: an answer
// does not depend on the milliseconds between two requests.
const dataStart = now - 70 * HOUR;
const fixedWindow = `from=${new Date(now - 71 * HOUR).toISOString()}&to=${new Date(now).toISOString()}`;

describeReplica('reads from a physical streaming replica', () => {
  let cluster: ReplicaCluster;
  let primary: DataModuleHarness;
  let routed: Runtime;
  let server: RunningServer;
  let candles: Candle[];
  let replicaAdmin: pg.Pool;

  /** A statement on the replica's copy of the test database. */
  const onReplica = async <T extends pg.QueryResultRow>(text: string) =>
    (await replicaAdmin.query<T>(text)).rows;

  /** Waits until the replica has replayed everything the primary has written so far. */
  async function replayed() {
    const target = await primary.runtime.pool.oneFirst(
      sql.unsafe`SELECT pg_current_wal_lsn()::text AS lsn`,
    );
    await eventually(
      async () =>
        (
          await onReplica<{ done: boolean }>(
            `SELECT pg_last_wal_replay_lsn() >= '${String(target)}'::pg_lsn AS done`,
          ).catch(() => [{ done: false }])
        )[0]!.done,
      120_000,
      'the replica to replay the primary',
    );
  }

  const inUse = async () => (await routed.reads.probeNow())[0]!.inUse;

  /** Index and sequential scans of the price tables on the replica (only reads move them). */
  const replicaScans = async () =>
    Number(
      (
        await onReplica<{ scans: string }>(`
          SELECT coalesce(sum(coalesce(seq_scan, 0) + coalesce(idx_scan, 0)), 0) AS scans
          FROM pg_stat_user_tables
          WHERE relname IN ('price_observations', 'candles_5m', 'candles_15m', 'candles_1h', 'currencies',
                            'currency_snapshots', 'rollup_watermarks')`)
      )[0]!.scans,
    );

  const get = (base: string, path: string) => getJson(`${base}${path}`, primary.readToken);

  beforeAll(async () => {
    cluster = await testReplica();
    primary = await startDataModule();
    candles = randomCandles(7, [CODE], dataStart, now - HOUR);
    await insertCandles(primary.runtime.pool, candles);
    await setSnapshot(primary.runtime.pool, CODE, 50_000, new Date(now - 60_000));
    await refreshRollups(primary.runtime.pool, { settleSeconds: 600 });
    const database = primary.runtime.database.name;
    replicaAdmin = new pg.Pool({ connectionString: replicaUrl(cluster, database), max: 1 });
    replicaAdmin.on('error', () => {});
    // The replica is stopped in a test: a checked-out client must not crash the test process.
    replicaAdmin.on('connect', (client) => client.on('error', () => {}));
    routed = await createRuntime(
      loadConfig({
        PLATFORM_LOAD_CURRENCIES: 'false',
        LOG_LEVEL: 'silent',
        DATABASE_URL: primary.runtime.database.url,
        READ_DATABASE_URL: replicaUrl(cluster, database),
        REPLICA_MAX_LAG_SECONDS: '1',
      }),
    );
    server = await serve(createDataService(routed).app);
    await replayed();
    await eventually(inUse, 60_000, 'the replica to be in use');
  }, 900_000);

  afterAll(async () => {
    await server?.close();
    await routed?.close();
    await replicaAdmin?.end();
    await primary?.close();
  });

  test('answers equal the primary’s, and the reads really reach the replica', async () => {
    const before = await replicaScans();
    const paths = [
      `/data/currency/history/${CODE}?hours=72&intervalSeconds=3600`,
      `/data/currency/history/${CODE}?hours=72&intervalSeconds=300`,
      `/data/candles/${CODE}?${fixedWindow}&interval=3600`,
      `/data/candles/${CODE}/export?${fixedWindow}&interval=900`,
      '/data/currency/all',
      `/data/predictions?code=${CODE}&${fixedWindow}`,
      `/data/news-sentiment?${fixedWindow}&intervalSeconds=3600`,
      '/data/training-sessions',
    ];
    for (const path of paths) {
      const [fromPrimary, fromReplica] = [
        await get(primary.server.url, path),
        await get(server.url, path),
      ];
      expect([path, fromReplica.status]).toEqual([path, 200]);
      expect(fromReplica.text).toBe(fromPrimary.text);
    }
    const history = await get(
      server.url,
      `/data/currency/history/${CODE}?hours=72&intervalSeconds=3600`,
    );
    expect(history.body).toEqual(
      expectedFirstPerBucket(candles, 3600, new Date(now - 72 * HOUR), new Date()),
    );
    // The replica's own statistics count the scans (flushed within seconds of each read).
    await eventually(async () => (await replicaScans()) > before, 60_000, 'replica scans');
  });

  test('a replica held beyond the lag limit is left aside: the primary answers, then it comes back', async () => {
    await onReplica('SELECT pg_wal_replay_pause()');
    try {
      // A price only the primary has.
      const late = { code: CODE, time: new Date(Date.now() - 30 * 60_000), open: 61_234 };
      // Marked as every writer marks a write below the rollups' watermarks.
      await primary.runtime.pool.transaction(async (tx) => {
        await insertCandles(tx, [late]);
        await markTouchedRanges(tx, [{ code: CODE, from: late.time, to: late.time }]);
      });
      candles = [...candles, late];
      await eventually(async () => !(await inUse()), 60_000, 'the replica to be left aside');
      const history = await get(
        server.url,
        `/data/currency/history/${CODE}?hours=72&intervalSeconds=3600`,
      );
      expect(history.status).toBe(200);
      expect(history.body.at(-1)).toMatchObject({ value: 61_234 });
      const health = await getJson(`${server.url}/health/ready`);
      const [state] = health.body.details.replicas.replicas;
      expect(state).toMatchObject({ reachable: true, inUse: false });
      expect(state.lagSeconds).toBeGreaterThan(1);
      const metrics = await getJson(`${server.url}/metrics`);
      expect(metrics.text).toMatch(/database_replica_in_use\{replica="[^"]+"\} 0/);
      const [doctor] = await checkReplicas({ config: routed.config });
      expect(doctor).toMatchObject({ ok: false, detail: expect.stringMatching(/left aside/) });
    } finally {
      await onReplica('SELECT pg_wal_replay_resume()');
    }
    await eventually(inUse, 60_000, 'the replica to come back');
    const health = await getJson(`${server.url}/health/ready`);
    expect(health.body.details.replicas.replicas[0]).toMatchObject({ inUse: true });
    await eventually(
      async () => (await checkReplicas({ config: routed.config }))[0]!.ok,
      60_000,
      'the doctor to find the replica streaming',
    );
  });

  test('a run computed across a revision change is not kept: a lagging replica never answers newer than it is', async () => {
    const primaryPool = primary.runtime.pool;
    const cache = new RunCache(64 * 1024 * 1024);
    const window = () => ({
      code: CODE,
      from: new Date(dataStart),
      to: new Date(now - 2 * HOUR),
      intervalSeconds: 3600,
    });
    const opens = async (db: DatabasePool) =>
      JSON.parse((await queryOpensJson(db, window(), { cache })).pieces.join('')) as unknown[];
    const expected = (rows: Candle[]) =>
      expectedFirstPerBucket(rows, 3600, window().from, window().to);
    const target = Math.floor((dataStart + 10 * HOUR) / HOUR) * HOUR;
    const added = [{ code: CODE, time: new Date(target), open: 1 }];
    await replayed();
    const replicaPool = await createDatabasePool(
      replicaUrl(cluster, primary.runtime.database.name),
    );
    // Between the plan's statement and the runs' statement, a backfill is recomputed on the
    // primary (its revision moves) while the replica's replay is paused.
    let backfilled = false;
    const racing = await createDatabasePool(primary.runtime.database.url, {
      interceptors: [
        {
          name: 'backfill-between-plan-and-runs',
          beforeQueryExecution: async (_context, query) => {
            if (backfilled || !/unnest/.test(query.sql)) return null;
            backfilled = true;
            await primaryPool.transaction(async (tx) => {
              await insertCandles(tx, added);
              await markTouchedRanges(tx, [
                { code: CODE, from: added[0]!.time, to: added[0]!.time },
              ]);
            });
            await refreshRollups(primaryPool, { settleSeconds: 600 });
            return null;
          },
        },
      ],
    });
    try {
      await replicaPool.query(sql.unsafe`SELECT pg_wal_replay_pause()`);
      await opens(racing);
      expect(backfilled).toBe(true);
      // The paused replica still holds the old revision: its answer is the old one, whatever the
      // cache kept from the racing answer.
      expect(await opens(replicaPool)).toEqual(expected(candles));
      await replicaPool.query(sql.unsafe`SELECT pg_wal_replay_resume()`);
      await replayed();
      // Once replayed, the replica's answers hold the backfill, never an older kept answer.
      expect(await opens(replicaPool)).toEqual(expected([...candles, ...added]));
      expect(await opens(replicaPool)).toEqual(expected([...candles, ...added]));
      candles = [...candles, ...added];
    } finally {
      await replicaPool.query(sql.unsafe`SELECT pg_wal_replay_resume()`).catch(() => {});
      await Promise.all([replicaPool.end(), racing.end()]);
    }
  });

  test('a backfill shows on the replica’s answers once replayed, never an older cached answer after', async () => {
    const path = `/data/currency/history/${CODE}?hours=72&intervalSeconds=3600`;
    const first = await get(server.url, path);
    expect((await get(server.url, path)).text).toBe(first.text); // now from kept runs
    const target = Math.floor((now - 40 * HOUR) / HOUR) * HOUR + 1;
    const added = [{ code: CODE, time: new Date(target), open: 2 }];
    await primary.runtime.pool.transaction(async (tx) => {
      await insertCandles(tx, added);
      await markTouchedRanges(tx, [{ code: CODE, from: added[0]!.time, to: added[0]!.time }]);
    });
    await refreshRollups(primary.runtime.pool, { settleSeconds: 600 });
    candles = [...candles, ...added];
    await replayed();
    await eventually(inUse, 60_000, 'the replica in use');
    const before = await replicaScans();
    for (let i = 0; i < 3; i++) {
      const answer = await get(server.url, path);
      expect(answer.status).toBe(200);
      expect(answer.body).toEqual(
        expectedFirstPerBucket(candles, 3600, new Date(Date.now() - 72 * HOUR), new Date()),
      );
    }
    await eventually(async () => (await replicaScans()) > before, 60_000, 'replica scans');
  });

  test('a stopped replica: no 5xx, the primary answers, and it comes back once started', async () => {
    await stopReplica(cluster);
    try {
      const paths = [
        `/data/currency/history/${CODE}?hours=72&intervalSeconds=3600`,
        `/data/candles/${CODE}?${fixedWindow}&interval=3600`,
        '/data/currency/all',
        '/data/training-sessions',
      ];
      // At once (the probe may not have noticed yet), then once it has.
      for (const path of paths) expect((await get(server.url, path)).status).toBe(200);
      await eventually(async () => !(await inUse()), 60_000, 'the replica to be left aside');
      const health = await getJson(`${server.url}/health/ready`);
      expect(health.status).toBe(200);
      expect(health.body.details.replicas.replicas[0]).toMatchObject({
        reachable: false,
        inUse: false,
      });
      // A process starting while its replica is down starts all the same.
      const starting = await createRuntime(routed.config);
      try {
        const app = await serve(createDataService(starting).app);
        expect((await get(app.url, paths[0]!)).status).toBe(200);
        await app.close();
      } finally {
        await starting.close();
      }
      for (const path of paths) {
        const [fromPrimary, answer] = [
          await get(primary.server.url, path),
          await get(server.url, path),
        ];
        expect(answer.status).toBe(200);
        if (!path.startsWith('/data/currency/history')) expect(answer.text).toBe(fromPrimary.text);
      }
    } finally {
      await startReplica(cluster);
    }
    await replayed();
    await eventually(inUse, 120_000, 'the replica to come back');
  });
});
