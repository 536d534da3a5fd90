import { afterEach, describe, expect, test } from '@jest/globals';
import { sql } from 'slonik';
import { z } from 'zod';
import { generateCurrencies } from '../../src/data/currencies/generator.ts';
import { checkSimulatedHistory } from '../../src/data/ingest/simulated/doctorCheck.ts';
import {
  queueSimulatedHistory,
  SIMULATED_HISTORY_TASK,
} from '../../src/data/ingest/simulated/firstStart.ts';
import { createSimulatedMarket } from '../../src/data/market/sources/simulated.ts';
import type { Config } from '../../src/shared/config.ts';
import { startWorkerRole } from '../../src/worker/start.ts';
import { runCli } from '../support/cli.ts';
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';
import { until } from '../support/wait.ts';

// The first start on the simulated market loads its past (SIMULATED_HISTORY_DAYS, one day here)
// in the background; the guard rails keep it away from real sources, existing data and a second
// start. Each test gets a fresh database.

const runtimes: TestRuntime[] = [];
afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((r) => r.dispose()));
});

async function freshPlatform(env: Partial<Record<keyof Config, string>> = {}) {
  const runtime = await createTestRuntime({ SIMULATED_HISTORY_DAYS: '1', ...env });
  runtimes.push(runtime);
  await generateCurrencies({ pool: runtime.pool, logger: runtime.logger, loadFromExchange: false });
  return runtime;
}

const queuedJobs = (runtime: TestRuntime) =>
  runtime.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int AS n FROM graphile_worker.jobs
     WHERE task_identifier = ${SIMULATED_HISTORY_TASK}`);

const simulatedUnits = (runtime: TestRuntime) =>
  runtime.pool.any(
    sql.type(
      z.object({ label: z.string(), rows_inserted: z.number(), kind: z.string() }),
    )`SELECT label, rows_inserted, kind FROM ingest_units WHERE source = 'simulated'`,
  );

const candleRow = z.object({
  time: z.date(),
  open: z.number(),
  high: z.number(),
  low: z.number(),
  close: z.number(),
});

describe('simulated history at the first start', () => {
  test('loads a day of every currency in the background; it runs into the live prices', async () => {
    const runtime = await freshPlatform();
    const codes = await runtime.pool.anyFirst(
      sql.type(z.object({ code: z.string() }))`SELECT code FROM currencies`,
    );
    expect(codes.length).toBeGreaterThan(100);

    // What the worker role does at its start; queued, the doctor shows the progress.
    expect(await queueSimulatedHistory(runtime.pool, runtime.config)).toBe('queued');
    const [waiting] = await checkSimulatedHistory({ pool: runtime.pool, config: runtime.config });
    expect(waiting).toMatchObject({ ok: true, detail: expect.stringMatching(/0\/1 days/) });

    const worker = await startWorkerRole(runtime);
    try {
      await until(
        async () => (await queuedJobs(runtime)) === 0 && (await simulatedUnits(runtime)).length > 0,
        120_000,
        'the simulated history job',
      );
      const [unit] = await simulatedUnits(runtime);
      expect(unit).toMatchObject({ kind: 'simulated', rows_inserted: codes.length * 1440 });
      const [, fromText, toText] = /^simulated (\S+)\.\.(\S+)$/.exec(unit!.label)!;
      const from = new Date(fromText!);
      const historyEnd = new Date(toText!);
      expect(historyEnd.getTime() - from.getTime()).toBe(86_400_000);
      expect(historyEnd.getTime() % 60_000).toBe(0);

      const market = createSimulatedMarket(runtime.config.MARKET_SIMULATED_SEED);
      for (const code of ['BTC', 'ETH', codes[codes.length - 1]!]) {
        const candles = await runtime.pool.any(sql.type(candleRow)`
          SELECT time, open, high, low, close FROM price_observations
           WHERE currency_code = ${code} AND time >= ${sql.timestamp(from)}
             AND time < ${sql.timestamp(historyEnd)} ORDER BY time`);
        expect(candles).toHaveLength(1440);
        expect(candles[0]!.open).toBe(market.priceAt(code, from));
        // Each candle closes where the next opens; the last closes at the price the live feed
        // reads at the minute history ends.
        for (let i = 1; i < candles.length; i++)
          expect(candles[i]!.open).toBe(candles[i - 1]!.close);
        expect(candles[1439]!.close).toBe(market.priceAt(code, historyEnd));
        expect(candles.some((c) => c.high > Math.max(c.open, c.close))).toBe(true);
      }

      // The harvester of the same start writes on the same path.
      await until(
        async () =>
          runtime.pool.exists(sql.unsafe`
            SELECT 1 FROM price_observations WHERE currency_code = 'BTC' AND source = 'simulated'
               AND time >= ${sql.timestamp(historyEnd)} AND high = low`),
        60_000,
        'a harvested BTC price',
      );
      const live = await runtime.pool.one(sql.type(candleRow)`
        SELECT time, open, high, low, close FROM price_observations
         WHERE currency_code = 'BTC' AND time >= ${sql.timestamp(historyEnd)} AND high = low
         ORDER BY time LIMIT 1`);
      expect(live.close).toBe(market.priceAt('BTC', live.time));

      const [done] = await checkSimulatedHistory({ pool: runtime.pool, config: runtime.config });
      expect(done).toMatchObject({ ok: true, detail: 'simulated history: 1 day loaded' });
    } finally {
      await worker.stop(30_000);
    }

    // A second start queues nothing, now or later.
    expect(await queueSimulatedHistory(runtime.pool, runtime.config)).toBe('loaded_before');
    const second = await startWorkerRole(runtime);
    await second.stop(30_000);
    expect(await queuedJobs(runtime)).toBe(0);
    expect(await simulatedUnits(runtime)).toHaveLength(1);
  }, 240_000);

  test('never with a real exchange among the sources', async () => {
    for (const source of ['coinbase', 'simulated,binance']) {
      const runtime = await freshPlatform({ MARKET_SOURCE: source });
      expect(await queueSimulatedHistory(runtime.pool, runtime.config)).toBe('real_source');
      expect(await queuedJobs(runtime)).toBe(0);
    }
  });

  test('never over existing price history', async () => {
    const runtime = await freshPlatform();
    await runtime.pool.query(sql.unsafe`
      INSERT INTO price_observations (currency_code, time, open, high, low, close, volume, source)
      VALUES ('BTC', now() - interval '3 hours', 1, 1, 1, 1, 0, 'file')`);
    expect(await queueSimulatedHistory(runtime.pool, runtime.config)).toBe('existing_data');
    expect(await queuedJobs(runtime)).toBe(0);
  });

  test('SIMULATED_HISTORY_DAYS=0 turns it off', async () => {
    const runtime = await freshPlatform({ SIMULATED_HISTORY_DAYS: '0' });
    expect(await queueSimulatedHistory(runtime.pool, runtime.config)).toBe('off');
    const [line] = await checkSimulatedHistory({ pool: runtime.pool, config: runtime.config });
    expect(line!.detail).toBe('simulated history: none (SIMULATED_HISTORY_DAYS=0)');
  });

  test('two starts at once queue one job', async () => {
    const runtime = await freshPlatform();
    const decisions = await Promise.all([
      queueSimulatedHistory(runtime.pool, runtime.config),
      queueSimulatedHistory(runtime.pool, runtime.config),
    ]);
    expect(decisions.sort()).toEqual(['already_queued', 'queued']);
    expect(await queuedJobs(runtime)).toBe(1);
  });
});

describe('platform backfill --source simulated', () => {
  test('loads the days on demand; stored rows win on a rerun', async () => {
    const runtime = await freshPlatform();
    const env = { DATABASE_URL: runtime.config.DATABASE_URL };
    const first = await runCli(
      ['backfill', '--source', 'simulated', '--days', '1', '--code', 'BTC', '--json'],
      env,
    );
    expect(first.code).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({ loaded: 1, inserted: 1440, rejected: 0 });
    const again = await runCli(
      ['backfill', '--source', 'simulated', '--days', '1', '--code', 'BTC', '--json', '--force'],
      env,
    );
    expect(again.code).toBe(0);
    const summary = JSON.parse(again.stdout) as { inserted: number; duplicates: number };
    // The same minutes (or one minute later): all but at most the newest are stored already.
    expect(summary.inserted + summary.duplicates).toBe(1440);
    expect(summary.inserted).toBeLessThanOrEqual(1);
    const btc = await runtime.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM price_observations WHERE currency_code = 'BTC'`);
    expect(btc).toBe(1440 + summary.inserted);
  }, 120_000);

  test('--enqueue hands the days to the workers as the same job', async () => {
    const runtime = await freshPlatform();
    const env = { DATABASE_URL: runtime.config.DATABASE_URL };
    const result = await runCli(
      ['backfill', '--source', 'simulated', '--days', '2', '--enqueue', '--json'],
      env,
    );
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({ enqueued: 1 });
    expect(await queuedJobs(runtime)).toBe(1);
    const [line] = await checkSimulatedHistory({ pool: runtime.pool, config: runtime.config });
    expect(line!.detail).toMatch(/^simulated history: 0\/2 days/);
  }, 120_000);

  test('refused on a real source and for bad options (exit 2)', async () => {
    const runtime = await freshPlatform();
    const env = { DATABASE_URL: runtime.config.DATABASE_URL };
    const real = await runCli(['backfill', '--source', 'simulated', '--days', '1'], {
      ...env,
      MARKET_SOURCE: 'coinbase',
    });
    expect(real.code).toBe(2);
    expect(real.stderr).toMatch(/MARKET_SOURCE=simulated/);
    expect((await runCli(['backfill', '--source', 'simulated', '--days', '0'], env)).code).toBe(2);
    expect((await runCli(['backfill', '--source', 'binance', '--days', '3'], env)).code).toBe(2);
    expect(
      (await runCli(['backfill', '--source', 'simulated', '--from', '2024-01-01'], env)).code,
    ).toBe(2);
  }, 120_000);
});
