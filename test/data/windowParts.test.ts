import { describe, expect, test } from '@jest/globals';
import type { CandleRequest } from '../../src/data/history/candleQuery.ts';
import type { Segment } from '../../src/data/history/planner.ts';
import {
  bucketRuns,
  isCuttable,
  jsonArrayPieces,
  MIN_BUCKETS_TO_SPLIT,
  RUN_BUCKETS,
  splitWindow,
} from '../../src/data/history/windowParts.ts';

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
  { source: 'raw', start: from, end: from + 18_000 },
  { source: '1m', start: from + 18_000, end: Date.UTC(2025, 10, 22, 10) },
  { source: '1h', start: Date.UTC(2025, 10, 22, 10), end: to - 30 * 60_000 },
  { source: 'raw', start: to - 30 * 60_000, end: to },
];

describe('splitWindow', () => {
  test('cuts a long UTC window at a bucket boundary into parts that cover it exactly', () => {
    const parts = splitWindow(request(), plan);
    expect(parts).toHaveLength(2);
    const cut = parts[0]!.request.to.getTime();
    expect(cut % HOUR).toBe(0);
    expect(Math.abs(cut - (from + to) / 2)).toBeLessThan(HOUR);
    expect(parts[0]!.request.from.getTime()).toBe(from);
    expect(parts[1]!.request.from.getTime()).toBe(cut);
    expect(parts[1]!.request.to.getTime()).toBe(to);
    // The segments of the parts, laid end to end, are the plan's, cut once more at the boundary.
    const laid = parts.flatMap((part) => part.segments);
    expect(laid.map((s) => [s.source, s.start, s.end])).toEqual([
      ['raw', from, from + 18_000],
      ['1m', from + 18_000, Date.UTC(2025, 10, 22, 10)],
      ['1h', Date.UTC(2025, 10, 22, 10), cut],
      ['1h', cut, to - 30 * 60_000],
      ['raw', to - 30 * 60_000, to],
    ]);
  });

  test('cuts on the grid shifted by origin and offset', () => {
    const origin = new Date(Date.UTC(2024, 0, 1, 0, 17));
    const parts = splitWindow(request({ origin, offsetSeconds: 60 }), plan);
    const cut = parts[0]!.request.to.getTime();
    expect((cut - origin.getTime() - 60_000) % HOUR).toBe(0);
  });

  test('leaves short windows, zones and carrying fills whole', () => {
    const short = request({ to: new Date(from + (MIN_BUCKETS_TO_SPLIT - 1) * HOUR) });
    expect(splitWindow(short, plan)).toHaveLength(1);
    expect(splitWindow(request({ timeZone: 'Europe/Berlin' }), plan)).toHaveLength(1);
    expect(splitWindow(request({ fill: 'previous' }), plan)).toHaveLength(1);
    expect(splitWindow(request({ fill: 'linear' }), plan)).toHaveLength(1);
    expect(splitWindow(request({ fill: 'null' }), plan)).toHaveLength(2);
  });
});

describe('bucketRuns', () => {
  /** How many buckets of width `width` starting at grid + k·width overlap [start, end). */
  const bucketsIn = (start: number, end: number, width: number, grid: number) =>
    Math.floor((end - 1 - grid) / width) - Math.floor((start - grid) / width) + 1;

  test.each([
    ['a year at one hour', request(), 0],
    ['a week at 90 s', request({ intervalSeconds: 90, to: new Date(from + 168 * HOUR) }), 0],
    [
      'a shifted grid',
      request({ origin: new Date(Date.UTC(2024, 0, 1, 0, 17)), offsetSeconds: 60 }),
      Date.UTC(2024, 0, 1, 0, 18),
    ],
  ])('%s: runs cover the window end to end, cut on the grid, none too long', (_, r, grid) => {
    const runs = bucketRuns(r);
    const width = r.intervalSeconds * 1000;
    expect(runs[0]![0]).toBe(r.from.getTime());
    expect(runs.at(-1)![1]).toBe(r.to.getTime());
    for (const [i, [start, end]] of runs.entries()) {
      expect(end).toBeGreaterThan(start);
      if (i > 0) {
        expect(start).toBe(runs[i - 1]![1]);
        expect((start - grid) % width).toBe(0);
      }
      expect(bucketsIn(start, end, width, grid)).toBeLessThanOrEqual(RUN_BUCKETS);
    }
    const total = bucketsIn(r.from.getTime(), r.to.getTime(), width, grid);
    expect(runs).toHaveLength(Math.ceil(total / RUN_BUCKETS));
  });

  test('a window shorter than a run is one run', () => {
    const short = request({ to: new Date(from + 30 * HOUR) });
    expect(bucketRuns(short)).toEqual([[from, from + 30 * HOUR]]);
  });

  test('only windows on a UTC grid without carried values are cuttable', () => {
    expect(isCuttable(request())).toBe(true);
    expect(isCuttable(request({ fill: 'null' }))).toBe(true);
    expect(isCuttable(request({ timeZone: 'Europe/Berlin' }))).toBe(false);
    expect(isCuttable(request({ fill: 'previous' }))).toBe(false);
    expect(isCuttable(request({ fill: 'linear' }))).toBe(false);
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
