import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { sql } from 'slonik';
import { answerRows, numberedRunsQuery } from '../../src/data/history/answerSql.ts';
import { queryCandlesJson } from '../../src/data/history/candleQuery.ts';
import { CANDLE_IS_EMPTY, candleItem } from '../../src/data/history/jsonText.ts';
import { planRequest } from '../../src/data/history/plan.ts';
import { refreshRollups } from '../../src/data/history/refresh.ts';
import type { CandleRequest, FillMode } from '../../src/data/history/request.ts';
import { floorTo } from '../../src/data/history/levels.ts';
import { RunCache } from '../../src/data/history/runCache.ts';
import { RUN_BUCKETS } from '../../src/data/history/runs.ts';
import { random } from '../support/candles.ts';
import { insertCandles, type Candle } from '../support/prices.ts';
import { createModeRuntime, MODES, type ModeRuntime } from '../support/rollupModes.ts';

// A carrying fill is answered run by run (filledRuns.ts): every run seeded from the data around
// it must give exactly the items the whole window gives in one statement, whatever lies around
// the runs' bounds — gaps inside a run, runs with no data at all, a hole of two weeks, no data
// in the window, none before or after its middle — and whatever the window's edges.

const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;
/**
 * Runs of 5-minute buckets are cut every RUN_BUCKETS buckets from the epoch (runs.ts), every
 * 41 h 40 min, so the data must lie the same way against those cuts whatever the day the test
 * runs: a cut falls 30 h after T0, where the data's buckets on both sides hold observations (the
 * runs ending there can be kept under either fill). With T0 at midnight, whether any run of
 * 'data only at the start' could be kept under `linear` changed with the date.
 */
const RUN_SPAN = RUN_BUCKETS * 300 * 1000;
const T0 = floorTo(Date.now() - 40 * DAY, RUN_SPAN) - 30 * HOUR;

/**
 * Observations seconds to minutes apart over 20 days, gaps of up to 3 hours now and then, and a
 * hole [2 d, 19 d); one observation on either side of it all.
 */
function gappy(code: string): Candle[] {
  const next = random(7);
  const out: Candle[] = [
    { code, time: new Date(T0 - 3 * DAY), open: 40, close: 41 },
    { code, time: new Date(T0 + 25 * DAY), open: 90, close: 91 },
  ];
  let price = 50;
  for (let t = T0 + 11_000; t < T0 + 20 * DAY;) {
    if (t < T0 + 2 * DAY || t >= T0 + 19 * DAY) {
      const close = price * (1 + (next() - 0.5) / 50);
      out.push({ code, time: new Date(t), open: price, close, volume: Math.floor(next() * 8) / 4 });
      price = close;
    }
    t += next() < 0.01 ? Math.floor(next() * 180 * MIN) : 1000 + Math.floor(next() * 6 * MIN);
  }
  return out;
}

/**
 * `keeps`: whether some run of the window is made from its own rows alone and so is kept (true),
 * or every run takes values from a seed and none may be kept (false); undefined: either.
 */
const WINDOWS: Array<{
  name: string;
  from: number;
  to: number;
  seconds: number;
  keeps?: boolean;
}> = [
  { name: 'a hole of 17 days', from: T0, to: T0 + 20 * DAY, seconds: 300, keeps: true },
  {
    name: 'no data in the window',
    from: T0 + 2.5 * DAY,
    to: T0 + 18.5 * DAY,
    seconds: 300,
    keeps: false,
  },
  {
    name: 'data only at the start',
    from: T0 + DAY + 37_000,
    to: T0 + 15 * DAY,
    seconds: 300,
    keeps: true,
  },
  { name: 'data only at the end', from: T0 + 5 * DAY, to: T0 + 20 * DAY - 1234, seconds: 300 },
  { name: 'minute buckets with gaps', from: T0 + 0.5 * DAY, to: T0 + 2.2 * DAY, seconds: 60 },
  { name: 'a few runs, 7-minute buckets', from: T0 - DAY, to: T0 + 21 * DAY, seconds: 420 },
];

describe.each(MODES)('carrying fills run by run, %s mode', (mode) => {
  let runtime: ModeRuntime;

  beforeAll(async () => {
    runtime = await createModeRuntime(mode);
    await insertCandles(runtime.pool, gappy('FIL'));
    await refreshRollups(runtime.pool, { settleSeconds: 0, runPolicies: true });
  }, 120_000);

  afterAll(async () => {
    await runtime.dispose();
  });

  /** The whole window in one statement, as carrying fills were answered before runs. */
  async function whole(request: CandleRequest): Promise<string> {
    const plan = await planRequest(runtime.pool, request);
    const runs = await runtime.pool.any(
      numberedRunsQuery(sql.fragment`
        SELECT bucket, ${CANDLE_IS_EMPTY} AS is_empty, ${candleItem(request)} AS item
        FROM (${answerRows(request, plan.segments, plan.seeds)}) AS candle`),
    );
    return `[${runs.map((run) => run.items).join(',')}]`;
  }

  async function byRuns(request: CandleRequest, cache?: RunCache): Promise<string> {
    const answer = await queryCandlesJson(runtime.pool, request, cache ? { cache } : {});
    return answer.pieces.map((piece) => piece.toString()).join('');
  }

  for (const window of WINDOWS) {
    for (const fill of ['previous', 'linear'] as FillMode[]) {
      test(`${window.name}, fill=${fill}`, async () => {
        const request: CandleRequest = {
          code: 'FIL',
          from: new Date(window.from),
          to: new Date(window.to),
          intervalSeconds: window.seconds,
          fill,
        };
        const expected = await whole(request);
        expect(JSON.parse(expected).length).toBeGreaterThan(2 * RUN_BUCKETS);
        expect(await byRuns(request)).toBe(expected);
        // Runs made from their own rows alone are kept; the answer is the same from them, and
        // the runs beside kept ones that need their neighbours are still seeded exactly.
        const cache = new RunCache(64 * 1024 * 1024);
        expect(await byRuns(request, cache)).toBe(expected);
        expect(await byRuns(request, cache)).toBe(expected);
        if (window.keeps !== undefined) expect(cache.hits > 0).toBe(window.keeps);
        // A later start (inside the hole, for the first window): runs shared with the first
        // answer whose neighbours now lie outside the window take other seeds.
        const later = {
          ...request,
          from: new Date(window.from + Math.min(3 * DAY, (window.to - window.from) / 2)),
        };
        expect(await byRuns(later, cache)).toBe(await whole(later));
      });
    }
  }
});
