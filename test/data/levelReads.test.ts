import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { sql, type QuerySqlToken } from 'slonik';
import { z } from 'zod';
import { runsJsonQuery } from '../../src/data/history/answerSql.ts';
import { planRequest, settledSegments } from '../../src/data/history/plan.ts';
import { refreshRollups } from '../../src/data/history/refresh.ts';
import type { CandleRequest } from '../../src/data/history/request.ts';
import { planRuns } from '../../src/data/history/runs.ts';
import { executedPlan } from '../support/explain.ts';
import { insertCandles, type Candle } from '../support/prices.ts';
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';

// How the rollup tables (Apache edition) are read run by run: a run's bounds are known only when
// its statement runs, so each level must be read through its primary key (currency_code,
// bucket) with plain bounds on bucket, which lets TimescaleDB skip at run time the chunks a run
// does not reach. candles_5m once had a B-tree on bucket alone that the planner took for such
// reads (every currency's rows of the run, filtered), and the way round it, bounds on
// (currency_code, bucket) rows, skipped no chunk and probed every chunk of the window in every
// run; its bucket index is a BRIN index since sql/0280_candles_5m_brin.sql.

const MIN = 60_000;
const DAY = 1440 * MIN;
const now = Date.now();
const from = Math.floor((now - 80 * DAY) / DAY) * DAY;
const to = from + 75 * DAY;

let runtime: TestRuntime;

/** Five-minute candles of three currencies over 75 days: candles_5m spans eleven or twelve 7-day chunks. */
function fiveMinuteCandles(): Candle[] {
  const candles: Candle[] = [];
  for (const [i, code] of ['AAA', 'BBB', 'CCC'].entries()) {
    for (let t = from; t < to; t += 5 * MIN) {
      const open = 100 + i + (t % 7);
      candles.push({ code, time: new Date(t), open, high: open + 1, low: open - 1, close: open });
    }
  }
  return candles;
}

beforeAll(async () => {
  runtime = await createTestRuntime();
  await insertCandles(runtime.pool, fiveMinuteCandles());
  await refreshRollups(runtime.pool, { settleSeconds: 0 });
  await runtime.pool.query(sql.unsafe`ANALYZE candles_5m`);
}, 120_000);

afterAll(async () => {
  await runtime.dispose();
});

/** The executed plan of a statement, every node. */
const explain = (query: QuerySqlToken) => executedPlan(runtime.pool, query);

describe('reading candles_5m run by run (rollup tables)', () => {
  test('candles_5m has no B-tree on bucket alone, and a BRIN index on it', async () => {
    const indexes = await runtime.pool.any(sql.type(
      z.object({ name: z.string(), method: z.string(), columns: z.string() }),
    )`
      SELECT c.relname AS name, am.amname AS method,
             pg_get_indexdef(i.indexrelid) AS columns
      FROM pg_index i
      JOIN pg_class c ON c.oid = i.indexrelid
      JOIN pg_am am ON am.oid = c.relam
      WHERE i.indrelid = 'candles_5m'::regclass`);
    const onBucketAlone = indexes.filter((index) => /\(bucket( DESC)?\)$/.test(index.columns));
    expect(onBucketAlone.map((index) => index.method)).toEqual(['brin']);
  });

  test('a run skips the chunks it does not reach and reads only through the primary key', async () => {
    const request: CandleRequest = {
      code: 'BBB',
      from: new Date(from),
      to: new Date(to),
      intervalSeconds: 600,
      fill: 'none',
    };
    const plan = await planRequest(runtime.pool, request);
    expect(plan.segments.map((segment) => segment.source)).toEqual(['5m']);
    const runs = planRuns(request, settledSegments(plan.segments, plan.freshness));
    expect(runs.length).toBeGreaterThan(10);
    const executed = await explain(
      runsJsonQuery(request, plan.segments, plan.seeds, 'candle', runs),
    );

    // The scans of the window's chunks: each run (about 3.5 days) opens only the one or two its
    // bounds reach (every chunk, eleven or twelve, in every run when nothing is skipped).
    const chunks = await runtime.pool.oneFirst(sql.type(z.object({ count: z.number() }))`
      SELECT count(*)::int AS count FROM timescaledb_information.chunks
      WHERE hypertable_name = 'candles_5m'`);
    expect(chunks).toBeGreaterThanOrEqual(11);
    const chunkScans = executed.filter((node) => /_chunk$/.test(node['Relation Name'] ?? ''));
    expect(chunkScans).toHaveLength(chunks);
    const opened = chunkScans.reduce((sum, node) => sum + node['Actual Loops'], 0);
    expect(opened).toBeGreaterThanOrEqual(runs.length);
    expect(opened).toBeLessThan(2 * runs.length);
    const indexes = executed.flatMap((node) => node['Index Name'] ?? []);
    const levelIndexes = indexes.filter((name) => name.includes('candles_5m'));
    expect(levelIndexes).toHaveLength(chunks);
    for (const index of levelIndexes) expect(index).toMatch(/candles_5m_pkey$/);
  });
});

describe('reading raw minutes in the order the harvest writes them', () => {
  // The newest chunk of the raw table holds every currency of a minute together (reorder_chunks
  // leaves it so until it closes). A run's bounds are parameters, so the planner guesses how many
  // rows they hold; at PostgreSQL's default random_page_cost (4) it read one currency's minutes
  // through the index on time, whose order the heap follows, and filtered out every other
  // currency's rows (24 h at 1 min for 50 currencies: 14,014 rows removed per run, 11.5 ms p50
  // first requests against 5.2 ms through the key). Every session sets a random_page_cost for
  // memory- and SSD-resident data (src/shared/db/sessionSettings.ts).
  const codes = Array.from({ length: 30 }, (_, i) => `R${String(i).padStart(2, '0')}`);
  const end = Math.floor(now / MIN) * MIN;

  beforeAll(async () => {
    const candles: Candle[] = [];
    for (let t = end - DAY; t < end; t += MIN) {
      for (const [i, code] of codes.entries())
        candles.push({ code, time: new Date(t), open: 10 + i });
    }
    await insertCandles(runtime.pool, candles);
    await runtime.pool.query(sql.unsafe`ANALYZE price_observations`);
  }, 120_000);

  test("one currency's minutes are read through the primary key, no other currency's rows", async () => {
    const request: CandleRequest = {
      code: 'R07',
      from: new Date(end - DAY),
      to: new Date(end),
      intervalSeconds: 60,
      fill: 'none',
    };
    const plan = await planRequest(runtime.pool, request);
    expect(plan.segments.map((segment) => segment.source)).toContain('raw');
    const runs = planRuns(request, settledSegments(plan.segments, plan.freshness));
    const executed = await explain(runsJsonQuery(request, plan.segments, plan.seeds, 'open', runs));

    const rawScans = executed.filter((node) =>
      (node['Index Name'] ?? '').includes('price_observations'),
    );
    expect(rawScans.length).toBeGreaterThan(0);
    for (const scan of rawScans) {
      expect(scan['Index Name']).toMatch(/price_observations_pkey$/);
      expect(scan['Rows Removed by Filter'] ?? 0).toBe(0);
    }
  });
});
