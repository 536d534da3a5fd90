import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { QuerySqlToken } from 'slonik';
import { candleQuery } from '../../src/data/history/answerSql.ts';
import { planRequest } from '../../src/data/history/plan.ts';
import type { CandleRequest } from '../../src/data/history/request.ts';
import { executedPlan } from '../support/explain.ts';
import { insertCandles, type Candle } from '../support/prices.ts';
import { createTestRuntime, type TestRuntime } from '../support/runtime.ts';

// A carrying fill ('previous', 'linear') changes nothing where no bucket is empty, and its window
// functions (two to six sorts of the window's buckets) are then skipped: the statement runs them
// only behind a one-time test for an empty bucket (answerSql.ts onlyWhereEmpty). Whether the
// answers stay exact is the conformance suite's and filledRuns.test.ts's work; this file checks
// that the fill's steps run exactly when some bucket is empty.

const MIN = 60_000;
const HOUR = 60 * MIN;
const start = Math.floor((Date.now() - 3 * 86_400_000) / HOUR) * HOUR;
const hours = 48;

let runtime: TestRuntime;

/** Minutes over 48 hours; 'GAP' misses its tenth hour. */
function minuteCandles(): Candle[] {
  const candles: Candle[] = [];
  for (const code of ['FULL', 'GAP']) {
    for (let t = start; t < start + hours * HOUR; t += MIN) {
      if (code === 'GAP' && t >= start + 10 * HOUR && t < start + 11 * HOUR) continue;
      const open = 100 + (t % 13);
      candles.push({ code, time: new Date(t), open, high: open + 1, low: open - 1, close: open });
    }
  }
  return candles;
}

beforeAll(async () => {
  runtime = await createTestRuntime();
  await insertCandles(runtime.pool, minuteCandles());
}, 120_000);

afterAll(async () => {
  await runtime.dispose();
});

/** How many times the statement's window functions ran (0: skipped). */
async function windowAggLoops(query: QuerySqlToken): Promise<number> {
  const windows = (await executedPlan(runtime.pool, query)).filter(
    (node) => node['Node Type'] === 'WindowAgg',
  );
  expect(windows.length).toBeGreaterThan(0);
  return windows.reduce((sum, node) => sum + node['Actual Loops'], 0);
}

async function loopsFor(code: string, fill: CandleRequest['fill']): Promise<number> {
  const request: CandleRequest = {
    code,
    from: new Date(start),
    to: new Date(start + hours * HOUR),
    intervalSeconds: 900,
    fill,
  };
  const plan = await planRequest(runtime.pool, request);
  return windowAggLoops(candleQuery(request, plan.segments, plan.seeds));
}

describe.each(['previous', 'linear'] as const)(
  "fill '%s' runs only where a bucket is empty",
  (fill) => {
    test('no bucket empty: the fill is skipped', async () => {
      expect(await loopsFor('FULL', fill)).toBe(0);
    });

    test('an empty hour: the fill runs', async () => {
      expect(await loopsFor('GAP', fill)).toBeGreaterThan(0);
    });
  },
);
