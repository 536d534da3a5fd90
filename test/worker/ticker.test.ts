import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import pg from 'pg';
import { tickerStatus, workerCheck } from '../../src/worker/status.ts';
import { startTicker, type Slot, type Ticker } from '../../src/worker/ticker.ts';
import { eventually } from '../support/wait.ts';
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';

let runtime: TestRuntime;

beforeAll(async () => {
  runtime = await createTestRuntime();
});
afterAll(async () => {
  await runtime.dispose();
});

interface Recorded {
  ticker: string;
  slot: Slot;
  firedAt: number;
}

function tickerFor(name: string, label: string, seen: Recorded[], intervalMs = 1000): Ticker {
  return startTicker({
    name,
    intervalMs,
    connectionString: runtime.database.url,
    logger: runtime.logger,
    followerRetryMs: 200,
    onTick: async (slot) => {
      seen.push({ ticker: label, slot, firedAt: Date.now() });
    },
  });
}

describe('ticker', () => {
  test('ticks once per slot, on the epoch-aligned grid', async () => {
    const seen: Recorded[] = [];
    const ticker = tickerFor('cadence', 'a', seen);
    const started = Date.now();
    await eventually(() => seen.length >= 5, 60_000, 'five ticks');
    await ticker.stop();
    const elapsedSlots = (Date.now() - started) / 1000;

    // About one tick a second; a loaded machine may lose one at the edges, never gain extra.
    expect(seen.length).toBeGreaterThanOrEqual(Math.floor(elapsedSlots) - 1);
    expect(seen.length).toBeLessThanOrEqual(Math.ceil(elapsedSlots) + 1);
    const indexes = seen.map((s) => s.slot.index);
    expect(new Set(indexes).size).toBe(indexes.length);
    for (const { slot, firedAt } of seen) {
      expect(slot.start.getTime() % 1000).toBe(0);
      expect(slot.start.getTime()).toBe(slot.index * 1000);
      expect(firedAt).toBeGreaterThanOrEqual(slot.start.getTime());
    }
    // Consecutive: no slot skipped while the ticker ran unhindered.
    expect(indexes.at(-1)! - indexes[0]! + 1).toBeLessThanOrEqual(indexes.length + 1);
    expect(ticker.isLeader()).toBe(false);
  });

  test('of two tickers with one name, one leads; when it stops, the other takes over', async () => {
    const seen: Recorded[] = [];
    const a = tickerFor('election', 'a', seen);
    await eventually(() => a.isLeader(), 5000, 'a to lead');
    const b = tickerFor('election', 'b', seen);
    // b retries the election every 200 ms: a's two further ticks give it many tries to misbehave.
    const ticksBeforeB = seen.length;
    await eventually(() => seen.length >= ticksBeforeB + 2, 30_000, 'two more ticks of a');
    expect(a.isLeader()).toBe(true);
    expect(b.isLeader()).toBe(false);
    expect(seen.every((s) => s.ticker === 'a')).toBe(true);
    const ticksOfA = seen.length;
    expect(ticksOfA).toBeGreaterThanOrEqual(2);

    const stoppedAt = Date.now();
    await a.stop();
    await eventually(() => b.isLeader(), 5000, 'b to take over');
    const takeover = Date.now() - stoppedAt;
    await eventually(() => seen.length >= ticksOfA + 2, 30_000, 'two ticks of b');
    await b.stop();

    expect(takeover).toBeLessThan(3000);
    const ofB = seen.slice(ticksOfA);
    expect(ofB.length).toBeGreaterThanOrEqual(2);
    expect(ofB.every((s) => s.ticker === 'b')).toBe(true);
    // Each leader ticks a slot once. The new leader ticks the slot it takes over in at once (the
    // old one may have died before ticking it), so at most that slot is ticked by both; the
    // per-slot job key and slot claim make the second tick a no-op.
    const indexesOf = (recorded: Recorded[]) => recorded.map((s) => s.slot.index);
    const [ofAIndexes, ofBIndexes] = [indexesOf(seen.slice(0, ticksOfA)), indexesOf(ofB)];
    expect(new Set(ofAIndexes).size).toBe(ofAIndexes.length);
    expect(new Set(ofBIndexes).size).toBe(ofBIndexes.length);
    expect(ofBIndexes.filter((i) => ofAIndexes.includes(i)).length).toBeLessThanOrEqual(1);
  });

  test('doctor sees the worker processes and the one leader of the harvest ticker', async () => {
    expect(await workerCheck({ pool: runtime.pool })).toEqual([
      expect.objectContaining({ name: 'worker', ok: false }),
    ]);
    const seen: Recorded[] = [];
    const a = tickerFor('harvest_prices', 'a', seen, 60_000);
    const b = tickerFor('harvest_prices', 'b', seen, 60_000);
    try {
      await eventually(() => a.isLeader() || b.isLeader(), 5000, 'a leader');
      await eventually(
        async () => (await tickerStatus(runtime.pool)).some((t) => t.processes === 2),
        5000,
        'both tickers connected',
      );
      expect(await tickerStatus(runtime.pool)).toEqual([
        { name: 'harvest_prices', processes: 2, leaders: 1 },
      ]);
      const [check] = await workerCheck({ pool: runtime.pool });
      expect(check).toMatchObject({ name: 'worker', ok: true });
      expect(check!.detail).toMatch(/2 worker process/);
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  });

  test('tickers of different names lead independently', async () => {
    const seen: Recorded[] = [];
    const one = tickerFor('task-one', 'one', seen);
    const two = tickerFor('task-two', 'two', seen);
    await eventually(() => one.isLeader() && two.isLeader(), 5000, 'both to lead');
    await Promise.all([one.stop(), two.stop()]);
  });

  test('a leader whose connection is killed comes back (or yields to another)', async () => {
    const seen: Recorded[] = [];
    const ticker = tickerFor('resilient', 'a', seen);
    await eventually(() => ticker.isLeader(), 5000, 'leading');
    const admin = new pg.Client({ connectionString: runtime.database.url });
    await admin.connect();
    try {
      const killed = await admin.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
         WHERE application_name = 'ticker:resilient' AND pid <> pg_backend_pid()`,
      );
      expect(killed.rowCount).toBe(1);
    } finally {
      await admin.end();
    }
    const before = seen.length;
    await eventually(() => seen.length >= before + 2, 8000, 'ticks after the reconnect');
    expect(ticker.isLeader()).toBe(true);
    await ticker.stop();
  });
});
