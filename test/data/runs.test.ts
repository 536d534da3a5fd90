import { describe, expect, test } from '@jest/globals';
import { jsonArrayPieces } from '../../src/data/history/jsonText.ts';
import { carriesValues, type CandleRequest } from '../../src/data/history/request.ts';
import type { Segment } from '../../src/data/history/planner.ts';
import {
  batchRuns,
  MIN_BUCKETS_TO_SPLIT,
  planRuns,
  RUN_BUCKETS,
  type Run,
  type SettledSegment,
} from '../../src/data/history/runs.ts';

const HOUR = 3_600_000;
const from = Date.UTC(2025, 10, 22, 9, 28, 42, 395);
const to = from + 8760 * HOUR;

function request(overrides: Partial<CandleRequest> = {}): CandleRequest {
  return {
    code: 'BTC',
    from: new Date(from),
    to: new Date(to),
    intervalSeconds: 3600,
    fill: 'none',
    ...overrides,
  };
}

const plan: Segment[] = [
  { source: 'raw', start: from, end: Date.UTC(2025, 10, 22, 9, 30) },
  { source: '5m', start: Date.UTC(2025, 10, 22, 9, 30), end: Date.UTC(2025, 10, 22, 10) },
  { source: '1h', start: Date.UTC(2025, 10, 22, 10), end: to - 30 * 60_000 },
  { source: 'raw', start: to - 30 * 60_000, end: to },
];

/** The plan with its rollup sources settled, as materialised rollup tables are. */
const settled = (segments: Segment[]): SettledSegment[] =>
  segments.map((segment) => ({ ...segment, settled: segment.source !== 'raw' }));

/** How many buckets of width `width` starting at grid + k·width overlap [start, end). */
const bucketsIn = (start: number, end: number, width: number, grid: number) =>
  Math.floor((end - 1 - grid) / width) - Math.floor((start - grid) / width) + 1;

describe('planRuns', () => {
  test.each([
    ['a year at one hour', request(), 0],
    ['a week at 90 s', request({ intervalSeconds: 90, to: new Date(from + 168 * HOUR) }), 0],
    [
      'a shifted grid',
      request({ origin: new Date(Date.UTC(2024, 0, 1, 0, 17)), offsetSeconds: 60 }),
      Date.UTC(2024, 0, 1, 0, 18),
    ],
  ])('%s: runs cover the window end to end, cut on the grid, none too long', (_, r, grid) => {
    const runs = planRuns(r, settled(plan));
    const width = r.intervalSeconds * 1000;
    expect(runs[0]!.start).toBe(r.from.getTime());
    expect(runs.at(-1)!.end).toBe(r.to.getTime());
    for (const [i, run] of runs.entries()) {
      expect(run.end).toBeGreaterThan(run.start);
      if (i > 0) {
        expect(run.start).toBe(runs[i - 1]!.end);
        expect((run.start - grid) % width).toBe(0);
      }
      expect(bucketsIn(run.start, run.end, width, grid)).toBeLessThanOrEqual(RUN_BUCKETS);
    }
  });

  test('cuts fall on a grid fixed in time, so windows of the same grid share their runs', () => {
    const first = planRuns(request(), settled(plan));
    const later = request({ from: new Date(from + 7 * HOUR), to: new Date(to + 7 * HOUR) });
    const laterPlan = plan.map((s) => ({ ...s, start: s.start + 7 * HOUR, end: s.end + 7 * HOUR }));
    const second = planRuns(later, settled(laterPlan));
    const block = RUN_BUCKETS * HOUR;
    const whole = (runs: Run[]) =>
      runs.filter((run) => run.settled && run.end - run.start === block).map((r) => r.start);
    for (const start of whole(first)) expect(start % block).toBe(0);
    const shared = whole(first).filter((start) => whole(second).includes(start));
    expect(shared.length).toBeGreaterThanOrEqual(whole(first).length - 1);
    expect(shared.length).toBeGreaterThan(10);
  });

  test('a run is settled only when every source it reads is; the cuts around a change are on the grid', () => {
    const runs = planRuns(request(), settled(plan));
    // The first bucket starts before the window's first full hour and reads raw rows.
    expect(runs[0]).toEqual({ start: from, end: Date.UTC(2025, 10, 22, 10), settled: false });
    // The last half hour is raw: the bucket where it starts is a run of its own, and the
    // window's last, partial bucket another; neither is settled.
    const change = to - 30 * 60_000;
    const bucket = change - (change % HOUR);
    expect(runs.slice(-2)).toEqual([
      { start: bucket, end: bucket + HOUR, settled: false },
      { start: bucket + HOUR, end: to, settled: false },
    ]);
    expect(runs.slice(1, -2).every((run) => run.settled)).toBe(true);
  });

  test('a partial bucket at either end of the window is never settled', () => {
    const start = Date.UTC(2025, 10, 22, 10);
    const hourly: Segment[] = [{ source: '1h', start: start - HOUR, end: start + 30 * HOUR }];
    const partial = request({ from: new Date(start - 1), to: new Date(start + 29 * HOUR + 1) });
    expect(planRuns(partial, settled(hourly))).toEqual([
      { start: start - 1, end: start, settled: false },
      { start, end: start + 29 * HOUR, settled: true },
      { start: start + 29 * HOUR, end: start + 29 * HOUR + 1, settled: false },
    ]);
  });

  test('a window shorter than a run is one run, or the pieces its sources make', () => {
    const start = Date.UTC(2025, 10, 22, 10);
    const short = request({ from: new Date(start), to: new Date(start + 30 * HOUR) });
    const hourly: Segment[] = [{ source: '1h', start, end: start + 30 * HOUR }];
    expect(planRuns(short, settled(hourly))).toEqual([
      { start, end: start + 30 * HOUR, settled: true },
    ]);
  });
});

describe('carriesValues', () => {
  test('previous and linear carry values from bucket to bucket, none and null do not', () => {
    expect(carriesValues({ fill: 'previous' })).toBe(true);
    expect(carriesValues({ fill: 'linear' })).toBe(true);
    expect(carriesValues({ fill: 'null' })).toBe(false);
    expect(carriesValues({ fill: 'none' })).toBe(false);
  });
});

describe('batchRuns', () => {
  const runsOf = (r: CandleRequest) => planRuns(r, settled(plan));

  test('splits many buckets into two batches of consecutive runs of about as many buckets', () => {
    const runs = runsOf(request());
    const batches = batchRuns(runs, request());
    expect(batches).toHaveLength(2);
    expect(batches.flat()).toEqual(runs);
    const hours = batches.map((b) => b.reduce((sum, run) => sum + (run.end - run.start) / HOUR, 0));
    expect(Math.abs(hours[0]! - hours[1]!)).toBeLessThanOrEqual(RUN_BUCKETS);
  });

  test('leaves fewer buckets than MIN_BUCKETS_TO_SPLIT in one batch, and nothing as nothing', () => {
    const short = request({ to: new Date(from + (MIN_BUCKETS_TO_SPLIT - 1) * HOUR) });
    expect(batchRuns(runsOf(short), short)).toHaveLength(1);
    expect(batchRuns([], request())).toEqual([]);
  });
});

describe('jsonArrayPieces', () => {
  test('makes the pieces of one array of the runs of items, in order, skipping empty runs', () => {
    const joined = (runs: string[]) => jsonArrayPieces(runs).join('');
    expect(joined(['1,2', '', '{"a":3}'])).toBe('[1,2,{"a":3}]');
    expect(JSON.parse(joined(['', '']))).toEqual([]);
    expect(JSON.parse(joined([]))).toEqual([]);
    expect(joined(['5'])).toBe('[5]');
  });
});
