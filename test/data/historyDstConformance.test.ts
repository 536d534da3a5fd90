import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { sql } from 'slonik';
import { z } from 'zod';
import { candleJson, csvLines, CSV_HEADER } from '../../src/data/history/candleOutput.ts';
import { queryCandlesJson } from '../../src/data/history/candleQuery.ts';
import { planRequest } from '../../src/data/history/plan.ts';
import { streamCandles } from '../../src/data/history/candleStream.ts';
import type { CandleRequest, FillMode } from '../../src/data/history/request.ts';
import { RunCache } from '../../src/data/history/runCache.ts';
import { refreshRollups } from '../../src/data/history/refresh.ts';
import {
  zoneCandlesFromRaw,
  bruteForceCandles,
  randomCandles,
  ZONE_ANCHORS,
  type Ohlcv,
} from '../support/candles.ts';
import { insertCandles } from '../support/prices.ts';
import { createModeRuntime, MODES, type ModeRuntime } from '../support/rollupModes.ts';

// Buckets in a zone across its DST changes, in both rollup modes. The rule (bucketGrid.ts):
// buckets shorter than a day keep their width in absolute time, counted from local midnight of
// 2000-01-03, so the repeated hour of an autumn night gives distinct buckets and the skipped
// hour of a spring night none; days follow local midnight (23, 24.5 or 25 hours long). Every
// answer is compared with a reference computed from the raw rows, and the export (slice by slice,
// slices crossing the change) with the JSON answer row for row.

const MIN = 60_000;
const HOUR = 60 * MIN;
const CODE = 'BTC';

// Each zone's 2025 changes, as instants: spring forward and fall back (Lord Howe moves by 30 min).
const CHANGES: Array<{ zone: string; change: string; at: string }> = [
  { zone: 'Europe/Berlin', change: 'spring forward', at: '2025-03-30T01:00:00Z' },
  { zone: 'Europe/Berlin', change: 'fall back', at: '2025-10-26T01:00:00Z' },
  { zone: 'America/New_York', change: 'spring forward', at: '2025-03-09T07:00:00Z' },
  { zone: 'America/New_York', change: 'fall back', at: '2025-11-02T06:00:00Z' },
  { zone: 'Australia/Lord_Howe', change: 'fall back', at: '2025-04-05T15:00:00Z' },
  { zone: 'Australia/Lord_Howe', change: 'spring forward', at: '2025-10-04T15:30:00Z' },
];

type Row = Omit<Ohlcv, 'open' | 'high' | 'low' | 'close'> & {
  open: number | null;
  high: number | null;
  low: number | null;
  close: number | null;
};

describe.each(MODES)('buckets in a zone across DST changes, %s mode', (mode) => {
  let runtime: ModeRuntime;
  const cache = new RunCache(16 * 1024 * 1024);
  // A day and a half of irregular prices (gaps of hours now and then) around every change.
  const candles = CHANGES.flatMap(({ at }, i) =>
    randomCandles(1800 + i, [CODE], Date.parse(at) - 20 * HOUR, Date.parse(at) + 20 * HOUR),
  ).sort((a, b) => a.time.getTime() - b.time.getTime());

  beforeAll(async () => {
    runtime = await createModeRuntime(mode);
    for (let i = 0; i < candles.length; i += 5000) {
      await insertCandles(runtime.pool, candles.slice(i, i + 5000));
    }
    // The levels must be complete before the planner is asked about them: on a busy machine one
    // refresh may stop at its time budget.
    while (!(await refreshRollups(runtime.pool, { settleSeconds: 0, runPolicies: true })).caughtUp);
  }, 300_000);

  afterAll(async () => {
    await runtime?.dispose();
  });

  /** The JSON answer, asked twice (the second time kept runs serve), parsed. */
  async function answer(request: CandleRequest): Promise<Row[]> {
    const first = await queryCandlesJson(runtime.pool, request, { cache });
    const second = await queryCandlesJson(runtime.pool, request, { cache });
    expect(second.pieces.join('')).toBe(first.pieces.join(''));
    return JSON.parse(first.pieces.join('')) as Row[];
  }

  /** The export's CSV, slices of seven buckets, so slices begin and end around the change. */
  async function exportedCsv(request: CandleRequest): Promise<string> {
    let text = '';
    await streamCandles(
      runtime.pool,
      request,
      async (rows) => {
        for await (const line of csvLines(rows)) text += line;
      },
      { sliceBuckets: 7 },
    );
    return text;
  }

  const csvOf = (rows: Row[]) =>
    CSV_HEADER +
    rows
      .map((r) =>
        [r.timestamp, r.open, r.high, r.low, r.close, r.volume, r.count]
          .map((v) => (v === null ? '' : String(v)))
          .join(','),
      )
      .map((line) => `${line}\n`)
      .join('');

  /** Every bucket start of the grid that overlaps [from, to): fixed widths from the zone's anchor. */
  async function bucketStarts(zone: string, seconds: number, from: number, to: number) {
    if (seconds < 86_400) {
      const width = seconds * 1000;
      const anchor = ZONE_ANCHORS[zone]!;
      const starts: number[] = [];
      for (let s = anchor + Math.floor((from - anchor) / width) * width; s < to; s += width) {
        starts.push(s);
      }
      return starts.map((s) => new Date(s).toISOString());
    }
    // Days follow the zone's midnight: TimescaleDB's time_bucket with the zone is the reference.
    const starts = await runtime.pool.anyFirst(sql.type(z.object({ b: z.date() }))`
      SELECT DISTINCT time_bucket(make_interval(secs => ${seconds}::float8), t, ${zone}::text) AS b
      FROM generate_series(${new Date(from).toISOString()}::timestamptz,
                           ${new Date(to - 1).toISOString()}::timestamptz, interval '1 minute') AS t
      ORDER BY 1`);
    return starts.map((s) => s.toISOString());
  }

  /** The non-empty buckets computed from the raw rows alone. */
  async function reference(zone: string, seconds: number, from: number, to: number) {
    if (seconds < 86_400)
      return bruteForceCandles(candles, CODE, seconds, from, to, ZONE_ANCHORS[zone]);
    return zoneCandlesFromRaw(runtime.pool, CODE, seconds, zone, new Date(from), new Date(to));
  }

  /** The reference with empty buckets as the fill asks ('linear' is checked against the export). */
  async function filledReference(
    zone: string,
    seconds: number,
    from: number,
    to: number,
    fill: Exclude<FillMode, 'linear'>,
  ): Promise<Row[]> {
    const data: Row[] = await reference(zone, seconds, from, to);
    if (fill === 'none') return data;
    const byStart = new Map(data.map((row) => [row.timestamp, row]));
    const before = candles.filter((c) => c.time.getTime() < from).at(-1);
    let carried = fill === 'previous' && before ? (before.close ?? before.open) : null;
    return (await bucketStarts(zone, seconds, from, to)).map((timestamp) => {
      const row = byStart.get(timestamp);
      if (row) {
        if (fill === 'previous') carried = row.close;
        return row;
      }
      const c = carried;
      return { timestamp, open: c, high: c, low: c, close: c, volume: 0, count: 0 };
    });
  }

  test.each(CHANGES)(
    '$zone, $change: 15 min, 30 min, 1 h, 4 h and days, every fill, equal the reference and the export',
    async ({ zone, at }) => {
      // An unaligned window of 30 hours around the change.
      const from = Date.parse(at) - 14 * HOUR - 7 * MIN;
      const to = Date.parse(at) + 16 * HOUR + 11 * MIN;
      for (const seconds of [900, 1800, 3600, 14_400, 86_400]) {
        for (const fill of ['none', 'null', 'previous', 'linear'] as const) {
          const request: CandleRequest = {
            code: CODE,
            from: new Date(from),
            to: new Date(to),
            intervalSeconds: seconds,
            timeZone: zone,
            fill,
          };
          const got = await answer(request);
          const label = { zone, seconds, fill };
          if (fill !== 'linear') {
            const expected = await filledReference(zone, seconds, from, to, fill);
            expect({ ...label, rows: got }).toEqual({ ...label, rows: expected });
          }
          const stamps = got.map((row) => row.timestamp);
          expect({ ...label, distinct: new Set(stamps).size }).toEqual({
            ...label,
            distinct: stamps.length,
          });
          expect({ ...label, ascending: [...stamps].sort() }).toEqual({
            ...label,
            ascending: stamps,
          });
          expect({ ...label, csv: await exportedCsv(request) }).toEqual({
            ...label,
            csv: csvOf(got),
          });
        }
      }
    },
    300_000,
  );

  test.each([
    // Local days from midnight to midnight: 25 h, 23 h; Lord Howe's 24.5 h and 23.5 h.
    ['Europe/Berlin', '2025-10-25T22:00:00Z', '2025-10-26T23:00:00Z', 25 * HOUR],
    ['Europe/Berlin', '2025-03-29T23:00:00Z', '2025-03-30T22:00:00Z', 23 * HOUR],
    ['America/New_York', '2025-11-02T04:00:00Z', '2025-11-03T05:00:00Z', 25 * HOUR],
    ['America/New_York', '2025-03-09T05:00:00Z', '2025-03-10T04:00:00Z', 23 * HOUR],
    ['Australia/Lord_Howe', '2025-04-05T13:00:00Z', '2025-04-06T13:30:00Z', 24.5 * HOUR],
    ['Australia/Lord_Howe', '2025-10-04T13:30:00Z', '2025-10-05T13:00:00Z', 23.5 * HOUR],
  ])(
    '%s, the local day from %s: sub-day buckets keep their width, the day is one candle',
    async (zone, fromIso, toIso, length) => {
      const [from, to] = [new Date(fromIso), new Date(toIso)];
      expect(to.getTime() - from.getTime()).toBe(length);
      for (const seconds of [900, 1800]) {
        const rows = await answer({
          code: CODE,
          from,
          to,
          intervalSeconds: seconds,
          timeZone: zone,
          fill: 'null',
        });
        const stamps = rows.map((row) => Date.parse(row.timestamp));
        expect({ zone, seconds, buckets: rows.length }).toEqual({
          zone,
          seconds,
          buckets: length / (seconds * 1000),
        });
        expect(stamps[0]).toBe(from.getTime());
        expect(stamps.slice(1).every((s, i) => s - stamps[i]! === seconds * 1000)).toBe(true);
      }
      const days = await answer({
        code: CODE,
        from,
        to,
        intervalSeconds: 86_400,
        timeZone: zone,
        fill: 'null',
      });
      expect(days.map((row) => row.timestamp)).toEqual([from.toISOString()]);
      const inDay = candles.filter((c) => c.time >= from && c.time < to);
      expect(days[0]!.count).toBe(inDay.length);
    },
    120_000,
  );

  test('a :45 zone keeps its quarter-hour anchor through the year', async () => {
    // Kathmandu (+05:45, no DST): hours start at local :00, i.e. at :15 past the UTC hour.
    const at = Date.parse(CHANGES[1]!.at);
    const rows = await answer({
      code: CODE,
      from: new Date(at - 10 * HOUR),
      to: new Date(at + 10 * HOUR),
      intervalSeconds: 3600,
      timeZone: 'Asia/Kathmandu',
      fill: 'none',
    });
    expect(rows.length).toBeGreaterThan(5);
    for (const row of rows) expect(row.timestamp).toMatch(/T\d\d:15:00\.000Z$/);
    expect(rows).toEqual(
      bruteForceCandles(
        candles,
        CODE,
        3600,
        at - 10 * HOUR,
        at + 10 * HOUR,
        ZONE_ANCHORS['Asia/Kathmandu'],
      ),
    );
  });

  test('the levels serve them: a fixed grid nests level buckets across every change', async () => {
    const window = (at: string) => ({
      from: new Date(Date.parse(at) - 14 * HOUR),
      to: new Date(Date.parse(at) + 16 * HOUR),
    });
    const sources = async (zone: string, at: string, seconds: number) =>
      (
        await planRequest(runtime.pool, {
          code: CODE,
          ...window(at),
          intervalSeconds: seconds,
          timeZone: zone,
          fill: 'none',
        })
      ).segments.map((s) => s.source);
    expect(await sources('Europe/Berlin', CHANGES[1]!.at, 900)).toContain('15m');
    expect(await sources('Europe/Berlin', CHANGES[1]!.at, 14_400)).toContain('1h');
    expect(await sources('America/New_York', CHANGES[3]!.at, 3600)).toContain('1h');
    // Lord Howe's hours are anchored on the whole UTC hour (+11:00 at the anchor): 1h serves them
    // on both sides of its 30-minute change.
    expect(await sources('Australia/Lord_Howe', CHANGES[4]!.at, 3600)).toContain('1h');
    // Kathmandu's hours start at :15 past the UTC hour: the offset hourly level serves them.
    expect(await sources('Asia/Kathmandu', CHANGES[1]!.at, 3600)).toContain('1h_at15');
    expect(await sources('Asia/Kathmandu', CHANGES[1]!.at, 3600)).not.toContain('1h');
  });

  test('JSON rows and export rows agree field for field, as objects too', async () => {
    const { at } = CHANGES[1]!;
    const request: CandleRequest = {
      code: CODE,
      from: new Date(Date.parse(at) - 3 * HOUR),
      to: new Date(Date.parse(at) + 3 * HOUR),
      intervalSeconds: 900,
      timeZone: 'Europe/Berlin',
      fill: 'previous',
    };
    const streamed: unknown[] = [];
    await streamCandles(runtime.pool, request, async (rows) => {
      for await (const row of rows) streamed.push(candleJson(row));
    });
    expect(streamed).toEqual(await answer(request));
    expect(streamed).toHaveLength(24);
  });
});
