import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { sql, type QuerySqlToken } from 'slonik';
import { z } from 'zod';
import { runsJsonQuery } from '../../src/data/history/answerSql.ts';
import { planRequest, settledSegments } from '../../src/data/history/plan.ts';
import { refreshRollups } from '../../src/data/history/refresh.ts';
import type { CandleRequest } from '../../src/data/history/request.ts';
import { planRuns } from '../../src/data/history/runs.ts';
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

/** Five-minute candles of three currencies over 75 days: candles_5m spans three 30-day chunks. */
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

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Relation Name'?: string;
  'Actual Loops'?: number;
  Plans?: PlanNode[];
}

function nodes(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(nodes)];
}

/** The executed plan of a statement, as EXPLAIN (ANALYZE, FORMAT JSON) gives it. */
async function explain(query: QuerySqlToken): Promise<PlanNode[]> {
  const explained: QuerySqlToken = {
    ...query,
    parser: z.object({ 'QUERY PLAN': z.array(z.object({ Plan: z.any() })) }),
    sql: `EXPLAIN (ANALYZE, FORMAT JSON) ${query.sql}`,
  };
  const row = await runtime.pool.one(explained);
  const plan = (row as { 'QUERY PLAN': Array<{ Plan: PlanNode }> })['QUERY PLAN'][0]!.Plan;
  return nodes(plan);
}

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

    // The scans of the three chunks: each run opens only the one or two its bounds reach (three
    // per run when nothing is skipped).
    const chunkScans = executed.filter((node) => /_chunk$/.test(node['Relation Name'] ?? ''));
    expect(chunkScans).toHaveLength(3);
    const opened = chunkScans.reduce((sum, node) => sum + node['Actual Loops']!, 0);
    expect(opened).toBeGreaterThanOrEqual(runs.length);
    expect(opened).toBeLessThan(1.5 * runs.length);
    const indexes = executed.flatMap((node) => node['Index Name'] ?? []);
    const levelIndexes = indexes.filter((name) => name.includes('candles_5m'));
    expect(levelIndexes).toHaveLength(3);
    for (const index of levelIndexes) expect(index).toMatch(/candles_5m_pkey$/);
  });
});
