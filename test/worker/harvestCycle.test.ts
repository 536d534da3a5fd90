import { afterAll, beforeAll, beforeEach, describe, expect, test } from '@jest/globals';
import type { JobHelpers } from 'graphile-worker';
import { sql } from 'slonik';
import { z } from 'zod';
import { generateCurrencies } from '../../src/data/currencies/generator.ts';
import { createSimulatedSource } from '../../src/data/market/sources/simulated.ts';
import { SourceError, type PriceSource } from '../../src/data/market/sources/types.ts';
import {
  MAX_PRICE_TICK_BYTES,
  parsePriceTick,
  priceTickPayloads,
} from '../../src/data/prices/priceEvents.ts';
import { slotContext } from '../../src/worker/recurring.ts';
import { createCoinbaseSource } from '../../src/data/market/sources/coinbase.ts';
import {
  createHarvestTask,
  fetchDeadlineOf,
  runHarvestCycle,
} from '../../workers/harvestPrices.ts';
import { startFakeExchange } from '../support/fakeExchange.ts';
import { listenToTicks, type TickListener } from '../support/priceTicks.ts';
import { setSnapshot } from '../support/prices.ts';
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';

let runtime: TestRuntime;
let listener: TickListener;
let currencyCount: number;
const simulated = createSimulatedSource('harvest-test');

// Each test harvests a slot later than the previous test's: a slot is done at most once and
// never after a later one.
let nextSlot = Math.floor(Date.now() / 1000) * 1000;
const freshSlot = () => {
  nextSlot += 1000;
  return slotContext(new Date(nextSlot), 5000);
};

beforeAll(async () => {
  runtime = await createTestRuntime();
  await generateCurrencies({ pool: runtime.pool, logger: runtime.logger, loadFromExchange: false });
  currencyCount = await runtime.pool.oneFirst(
    sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM currencies`,
  );
  listener = await listenToTicks(runtime.database.url);
});

afterAll(async () => {
  await listener.close();
  await runtime.dispose();
});

beforeEach(() => {
  listener.ticks.length = 0;
  listener.raw.length = 0;
});

const countAt = (at: Date) =>
  runtime.pool.oneFirst(
    sql.type(z.object({ n: z.number() }))`
      SELECT count(*)::int AS n FROM price_observations WHERE time = ${sql.timestamp(at)}`,
  );

const snapshotRows = () =>
  runtime.pool.any(
    sql.type(
      z.object({ code: z.string(), price: z.number(), observedAt: z.date(), source: z.string() }),
    )`
      SELECT currency_code AS code, price, observed_at AS "observedAt", source FROM currency_snapshots`,
  );

/** A source that prices only some codes. */
const partialSource = (name: string, prices: Record<string, number>): PriceSource => ({
  name,
  fetchPrices: async ({ codes }) =>
    new Map(codes.filter((c) => c in prices).map((c) => [c, prices[c]!])),
});

const failingSource = (name: string): PriceSource => ({
  name,
  fetchPrices: async () => {
    throw new SourceError(name, 'http', 'answered 503');
  },
});

describe('a harvest cycle', () => {
  test('writes one observation per currency, the snapshots and exactly one price event', async () => {
    const slot = freshSlot();
    const result = await runHarvestCycle({ runtime, sources: [simulated] }, slot);
    expect(result).toMatchObject({ outcome: 'written', prices: currencyCount });

    const observations = await runtime.pool.any(
      sql.type(
        z.object({
          code: z.string(),
          open: z.number(),
          high: z.number(),
          low: z.number(),
          close: z.number(),
          volume: z.number(),
          source: z.string(),
        }),
      )`SELECT currency_code AS code, open, high, low, close, volume, source
        FROM price_observations WHERE time = ${sql.timestamp(slot.start)}`,
    );
    expect(observations).toHaveLength(currencyCount);
    for (const o of observations) {
      expect(o.open).toBeGreaterThan(0);
      expect([o.high, o.low, o.close]).toEqual([o.open, o.open, o.open]);
      expect(o.volume).toBe(0);
      expect(o.source).toBe('simulated');
    }

    const snapshots = await snapshotRows();
    expect(snapshots).toHaveLength(currencyCount);
    expect(snapshots.every((s) => s.observedAt.getTime() === slot.start.getTime())).toBe(true);

    await listener.waitFor(1);
    await listener.settled(); // a second message, had one been sent, is heard by now
    expect(listener.ticks).toHaveLength(1);
    const [tick] = listener.ticks;
    expect(tick).toMatchObject({ at: slot.start.toISOString(), part: 1, parts: 1 });
    expect(Buffer.byteLength(listener.raw[0]!)).toBeLessThan(8000);
    expect(Object.keys(tick!.prices)).toHaveLength(currencyCount);
    const btc = observations.find((o) => o.code === 'BTC')!;
    expect(tick!.prices.BTC).toBeCloseTo(btc.close, 4);
  });

  test('a slot already done is not written or announced again', async () => {
    const slot = freshSlot();
    expect((await runHarvestCycle({ runtime, sources: [simulated] }, slot)).outcome).toBe(
      'written',
    );
    const again = await runHarvestCycle({ runtime, sources: [simulated] }, slot);
    expect(again.outcome).toBe('superseded');
    expect(await countAt(slot.start)).toBe(currencyCount);
    await listener.waitFor(1);
    await listener.settled();
    expect(listener.ticks).toHaveLength(1);
  });

  test('a slot older than one already done is skipped', async () => {
    const older = freshSlot();
    const newer = freshSlot();
    expect((await runHarvestCycle({ runtime, sources: [simulated] }, newer)).outcome).toBe(
      'written',
    );
    expect((await runHarvestCycle({ runtime, sources: [simulated] }, older)).outcome).toBe(
      'superseded',
    );
    expect(await countAt(older.start)).toBe(0);
  });

  test('two cycles of one slot racing write it once', async () => {
    const slot = freshSlot();
    const results = await Promise.all([
      runHarvestCycle({ runtime, sources: [simulated] }, slot),
      runHarvestCycle({ runtime, sources: [simulated] }, slot),
    ]);
    expect(results.map((r) => r.outcome).sort()).toEqual(['superseded', 'written']);
    expect(await countAt(slot.start)).toBe(currencyCount);
    await listener.waitFor(1);
    await listener.settled();
    expect(listener.ticks).toHaveLength(1);
  });

  test('the first configured source that prices a currency wins; a failing one costs nothing', async () => {
    const slot = freshSlot();
    const result = await runHarvestCycle(
      {
        runtime,
        sources: [
          failingSource('coinbase'),
          partialSource('binance', { BTC: 90_000.5, ETH: 3000.25 }),
          simulated,
        ],
      },
      slot,
    );
    expect(result.outcome).toBe('written');
    expect(result.outcomes.map((o) => [o.source, o.error?.reason ?? null, o.priced])).toEqual([
      ['coinbase', 'http', 0],
      ['binance', null, 2],
      ['simulated', null, currencyCount],
    ]);
    const snapshots = await snapshotRows();
    const btc = snapshots.find((s) => s.code === 'BTC')!;
    expect(btc).toMatchObject({ price: 90_000.5, source: 'binance' });
    expect(snapshots.filter((s) => s.source === 'simulated')).toHaveLength(currencyCount - 2);
  });

  test('when every source fails, nothing is written and the cycle ends quietly', async () => {
    const slot = freshSlot();
    const result = await runHarvestCycle(
      { runtime, sources: [failingSource('coinbase'), failingSource('kraken')] },
      slot,
    );
    expect(result.outcome).toBe('empty');
    expect(await countAt(slot.start)).toBe(0);
    // and the next cycle works as usual
    const next = freshSlot();
    expect((await runHarvestCycle({ runtime, sources: [simulated] }, next)).outcome).toBe(
      'written',
    );
  });

  test('an exchange that hangs delays the cycle by at most about one interval', async () => {
    const exchange = await startFakeExchange();
    exchange.script('/v2/exchange-rates', { hang: true });
    try {
      const coinbase = createCoinbaseSource({ baseUrl: exchange.url, timeoutMs: 4000 });
      // A slot of now, as the ticker would enqueue it (earlier tests claimed later slots).
      await runtime.pool.query(sql.unsafe`DELETE FROM recurring_slots`);
      const slot = slotContext(new Date(Math.floor(Date.now() / 1000) * 1000), 1000);
      const started = Date.now();
      const result = await runHarvestCycle({ runtime, sources: [coinbase, simulated] }, slot);
      expect(Date.now() - started).toBeLessThan(2500);
      expect(result.outcome).toBe('written');
      expect(result.outcomes[0]).toMatchObject({ source: 'coinbase', priced: 0 });
      expect(result.outcomes[0]!.error?.reason).toBe('timeout');
      expect(await countAt(slot.start)).toBe(currencyCount);
      // The failing exchange now rests: the next cycle does not wait for it at all.
      const next = freshSlot();
      const quick = Date.now();
      const again = await runHarvestCycle({ runtime, sources: [coinbase, simulated] }, next);
      expect(again.outcomes[0]!.error?.reason).toBe('cooling_down');
      expect(Date.now() - quick).toBeLessThan(1000);
      expect(exchange.requests.length).toBeGreaterThanOrEqual(1);
    } finally {
      await exchange.close();
    }
  });

  test('sources get about one interval to answer, never past the slot going stale', () => {
    const start = new Date(1_800_000_000_000);
    const at = (ms: number) => start.getTime() + ms;
    expect(fetchDeadlineOf(slotContext(start, 5000), at(10))).toBe(at(5000));
    expect(fetchDeadlineOf(slotContext(start, 1000), at(10))).toBe(at(1010));
    expect(fetchDeadlineOf(slotContext(start, 1000), at(800))).toBe(at(1800));
    expect(fetchDeadlineOf(slotContext(start, 1000), at(2500))).toBe(at(2750));
    expect(fetchDeadlineOf(slotContext(start, 60_000), at(50))).toBe(at(60_000));
  });

  test('a currency no source prices is left out of the cycle', async () => {
    const slot = freshSlot();
    const result = await runHarvestCycle(
      { runtime, sources: [partialSource('binance', { BTC: 91_000, DOGE: 0.2 })] },
      slot,
    );
    expect(result).toMatchObject({ outcome: 'written', prices: 2 });
    expect(await countAt(slot.start)).toBe(2);
  });

  test('snapshots only move forward in time', async () => {
    const future = new Date(Date.now() + 3_600_000);
    await setSnapshot(runtime.pool, 'ETH', 1234.5, future);
    await runHarvestCycle({ runtime, sources: [simulated] }, freshSlot());
    const eth = (await snapshotRows()).find((s) => s.code === 'ETH')!;
    expect(eth).toMatchObject({ price: 1234.5, observedAt: future });
    await runtime.pool.query(
      sql.unsafe`DELETE FROM currency_snapshots WHERE currency_code = 'ETH'`,
    );
  });

  test('the task skips a stale slot instead of writing it late', async () => {
    const task = createHarvestTask(runtime, [simulated]);
    const stale = new Date(Math.floor(Date.now() / 1000) * 1000 - 60_000);
    await task({ slotStart: stale.toISOString(), intervalMs: 5000 }, fakeHelpers());
    expect(await countAt(stale)).toBe(0);
  });

  test('the task drops a job without a valid slot without failing it', async () => {
    const task = createHarvestTask(runtime, [simulated]);
    await expect(task({ slotStart: 'yesterday' }, fakeHelpers())).resolves.toBeUndefined();
  });
});

describe('price events', () => {
  test('many currencies are split into several valid messages under the size limit', async () => {
    const prices = Array.from({ length: 1200 }, (_, i) => [`C${i}X`, 1000 + i / 7] as const);
    const payloads = priceTickPayloads(new Date(nextSlot), prices);
    expect(payloads.length).toBeGreaterThan(1);
    const merged: Record<string, number> = {};
    for (const [i, payload] of payloads.entries()) {
      expect(Buffer.byteLength(payload)).toBeLessThanOrEqual(MAX_PRICE_TICK_BYTES);
      const tick = parsePriceTick(payload);
      expect(tick).toMatchObject({ part: i + 1, parts: payloads.length });
      Object.assign(merged, tick.prices);
    }
    expect(Object.keys(merged)).toHaveLength(1200);
    expect(merged.C7X).toBe(1001);
  });

  test('a cycle over more currencies than one message holds sends every part', async () => {
    const extra = Array.from({ length: 500 }, (_, i) => ({
      code: `Q${String(i).padStart(4, '0')}`,
      name: `Test coin ${i}`,
    }));
    await runtime.pool.query(sql.unsafe`
      INSERT INTO currencies (code, name)
      SELECT code, name FROM jsonb_to_recordset(${sql.jsonb(extra)}) AS x(code text, name text)`);
    try {
      const slot = freshSlot();
      const result = await runHarvestCycle({ runtime, sources: [simulated] }, slot);
      expect(result.prices).toBe(currencyCount + 500);
      await eventuallyTicks(2);
      const parts = listener.ticks;
      expect(
        parts.every((t) => t.parts === parts.length && t.at === slot.start.toISOString()),
      ).toBe(true);
      const codes = new Set(parts.flatMap((t) => Object.keys(t.prices)));
      expect(codes.size).toBe(currencyCount + 500);
      expect(listener.raw.every((raw) => Buffer.byteLength(raw) < 8000)).toBe(true);
    } finally {
      await runtime.pool.query(sql.unsafe`DELETE FROM currencies WHERE code LIKE 'Q%'`);
    }
  });
});

async function eventuallyTicks(min: number) {
  await listener.waitFor(min);
  await listener.settled();
}

function fakeHelpers(): JobHelpers {
  return {
    job: { attempts: 1, max_attempts: 2 },
    abortSignal: new AbortController().signal,
  } as unknown as JobHelpers;
}
