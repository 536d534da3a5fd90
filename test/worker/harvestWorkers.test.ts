import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { sql } from 'slonik';
import { z } from 'zod';
import { generateCurrencies } from '../../src/data/currencies/generator.ts';
import { createDataService } from '../../src/data/service.ts';
import { createToken } from '../../src/data/tokens/tokenStore.ts';
import { loadConfig } from '../../src/shared/config.ts';
import { createLogger } from '../../src/shared/logger.ts';
import { createRuntime, type Runtime } from '../../src/shared/runtime.ts';
import { startWorker, type Worker } from '../../src/worker/start.ts';
import { getJson, serve } from '../support/http.ts';
import { listenToTicks, type TickListener } from '../support/priceTicks.ts';
import { eventually } from '../support/wait.ts';
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';

// Whole workers (graphile-worker runner + ticker) against one database, as separate processes
// would run them: each has its own pools and its own ticker connection.

let runtime: TestRuntime;
let listener: TickListener;
let currencyCount: number;
const others: Runtime[] = [];

beforeAll(async () => {
  runtime = await createTestRuntime({ HARVEST_INTERVAL_SECONDS: '1' });
  await generateCurrencies({ pool: runtime.pool, logger: runtime.logger, loadFromExchange: false });
  currencyCount = await runtime.pool.oneFirst(
    sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM currencies`,
  );
  listener = await listenToTicks(runtime.database.url);
});

afterAll(async () => {
  await listener.close();
  await Promise.all(others.map((other) => other.close()));
  await runtime.dispose();
});

/** Another process's runtime on the same database. */
async function anotherRuntime(env: Record<string, string> = {}): Promise<Runtime> {
  const config = loadConfig({
    PLATFORM_LOAD_CURRENCIES: 'false',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    HARVEST_INTERVAL_SECONDS: '1',
    ...env,
    DATABASE_URL: runtime.database.url,
  });
  const other = await createRuntime(config, createLogger(config.LOG_LEVEL));
  others.push(other);
  return other;
}

const isLeading = (worker: Worker) => worker.tickers.some((t) => t.isLeader());

const slotRow = z.object({ time: z.date(), n: z.number(), sources: z.number() });

describe('harvesting with several workers', () => {
  test('two workers harvest each slot exactly once; when the leader stops the other carries on', async () => {
    // The first worker's ticker writes slots while the second one starts: the upper bound on the
    // slot count counts from before the first start, the lower bound from after both started.
    const beforeFirstStart = Date.now();
    const first = await startWorker(runtime);
    const second = await startWorker(await anotherRuntime());
    const bothStarted = Date.now();
    let stoppedLeaderAt = 0;
    try {
      await eventually(() => listener.ticks.length >= 3, 60_000, 'three harvested slots');
      const leaders = [first, second].filter(isLeading);
      expect(leaders).toHaveLength(1);
      const [leader] = leaders;
      const follower = leader === first ? second : first;
      stoppedLeaderAt = Date.now();
      await leader!.stop();
      await eventually(() => isLeading(follower), 30_000, 'the follower to take the lead');
      const ticksAtHandOver = listener.ticks.length;
      await eventually(
        () => listener.ticks.length >= ticksAtHandOver + 4,
        60_000,
        'four slots harvested by the survivor',
      );
      await follower.stop();
    } finally {
      await Promise.allSettled([first.stop(), second.stop()]);
    }
    const stoppedAt = Date.now();

    const slots = await runtime.pool.any(sql.type(slotRow)`
      SELECT time, count(*)::int AS n, count(DISTINCT source)::int AS sources
      FROM price_observations GROUP BY time ORDER BY time`);
    // Every slot holds one full cycle: one observation per currency, from one source.
    for (const slot of slots) {
      expect(slot.time.getTime() % 1000).toBe(0);
      expect(slot).toMatchObject({ n: currencyCount, sources: 1 });
    }
    // About one slot a second; a loaded machine may miss a few (stale slots are skipped).
    expect(slots.length).toBeGreaterThanOrEqual(Math.floor((stoppedAt - bothStarted) / 1000) - 4);
    expect(slots.length).toBeLessThanOrEqual(Math.ceil((stoppedAt - beforeFirstStart) / 1000) + 1);
    // The survivor kept harvesting after the leader stopped.
    const afterHandOver = slots.filter((s) => s.time.getTime() > stoppedLeaderAt + 500);
    expect(afterHandOver.length).toBeGreaterThanOrEqual(2);

    // One price event per written slot, no more.
    await listener.waitFor(slots.length);
    await listener.settled();
    expect(listener.ticks.map((t) => t.at)).toEqual(slots.map((s) => s.time.toISOString()));

    // Nothing left failed in the queue.
    const failed = await runtime.pool.oneFirst(sql.unsafe`
      SELECT count(*)::int FROM graphile_worker.jobs
      WHERE task_identifier = 'harvest_prices' AND last_error IS NOT NULL`);
    expect(failed).toBe(0);
  });

  test('a started platform shows live prices within one harvest interval', async () => {
    const platform = await anotherRuntime({ HARVEST_INTERVAL_SECONDS: '5' });
    await platform.pool.query(sql.unsafe`DELETE FROM currency_snapshots`);
    const { token } = await createToken(platform.pool, 'live-check', ['read']);
    const server = await serve(createDataService(platform).app);
    const worker = await startWorker(platform);
    try {
      const started = Date.now();
      let body: {
        currencies: Array<{ currencyCode: string; value: number; lastUpdated: string }>;
      } = { currencies: [] };
      // Until the first slot would be stale (two intervals): a loaded machine may take longer than
      // an interval to fetch and write, which the schedule below does not depend on.
      await eventually(
        async () => {
          body = (await getJson(`${server.url}/data/currency/all?limit=500`, token)).body;
          return body.currencies.length === currencyCount;
        },
        10_000,
        'every currency to have a price',
      );
      // The prices shown are stamped with their harvest slot: one that begins within one interval
      // of the start, however long a loaded machine then takes to fetch and write it.
      for (const currency of body.currencies) {
        const slot = Date.parse(currency.lastUpdated);
        expect(slot).toBeLessThanOrEqual(started + 5000);
        expect(slot).toBeGreaterThan(started - 2 * 5000);
      }
      expect(body.currencies.every((c) => c.value > 0)).toBe(true);
    } finally {
      await worker.stop();
      await server.close();
    }
  });
});
