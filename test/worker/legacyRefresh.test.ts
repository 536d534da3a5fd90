import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { sql } from 'slonik';
import { z } from 'zod';
import { generateCurrencies } from '../../src/data/currencies/generator.ts';
import { startWorker, type Worker } from '../../src/worker/start.ts';
import { insertCandles } from '../support/prices.ts';
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';
import { valueOf } from '../support/wait.ts';

// The worker keeps legacy.market_snapshots by itself: refresh_legacy recurs every harvest cycle.

let runtime: TestRuntime;
let worker: Worker | undefined;

beforeAll(async () => {
  runtime = await createTestRuntime({ HARVEST_INTERVAL_SECONDS: '1' });
  await generateCurrencies({ pool: runtime.pool, logger: runtime.logger, loadFromExchange: false });
});

afterAll(async () => {
  await worker?.stop();
  await runtime.dispose();
});

test('a running worker fills legacy.market_snapshots from the history', async () => {
  const minute = new Date(Math.floor((Date.now() - 3 * 60_000) / 60_000) * 60_000);
  await insertCandles(runtime.pool, [{ code: 'BTC', time: minute, open: 42_000 }]);
  worker = await startWorker(runtime);
  const price = () =>
    runtime.pool.maybeOneFirst(sql.type(z.object({ p: z.string().nullable() }))`
      SELECT btc_price::text AS p FROM legacy.market_snapshots
      WHERE last_updated = ${sql.timestamp(minute)}
    `);
  // Until the first run, the column does not exist yet (an error counts as "not yet").
  const found = await valueOf(
    async () => (await price()) ?? undefined,
    60_000,
    'the legacy row of the minute',
  );
  expect(found).toBe('42000');
  // Rows follow up to the last complete minute, one per minute.
  const span = await runtime.pool.one(sql.type(z.object({ rows: z.number(), minutes: z.number() }))`
    SELECT count(*)::int AS rows,
           (extract(epoch FROM max(last_updated) - min(last_updated)) / 60)::int + 1 AS minutes
    FROM legacy.market_snapshots
  `);
  expect(span.rows).toBe(span.minutes);
  expect(span.rows).toBeGreaterThanOrEqual(3);
});
