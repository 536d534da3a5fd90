import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { sql } from 'slonik';
import { z } from 'zod';
import {
  queryCandlesJson,
  queryOpensJson,
  type JsonAnswer,
} from '../../src/data/history/candleQuery.ts';
import { planRequest } from '../../src/data/history/plan.ts';
import { carriesValues, type CandleRequest } from '../../src/data/history/request.ts';
import { RunCache } from '../../src/data/history/runCache.ts';
import { readRollupStatus } from '../../src/data/history/rollupState.ts';
import { refreshRollups } from '../../src/data/history/refresh.ts';
import { markTouchedRanges } from '../../src/data/prices/invalidations.ts';
import {
  bruteForceCandles,
  random,
  randomCandles,
  zoneBucketSql,
  zoneCandlesFromRaw,
  type WallClockAlignment,
} from '../support/candles.ts';
import { insertCandles, type Candle } from '../support/prices.ts';
import { createModeRuntime, MODES, type ModeRuntime } from '../support/rollupModes.ts';

// The same conformance suite against both rollup modes: random data, random resolutions and
// windows, every answer compared with a brute-force computation from the raw rows.

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const CODES = ['BTC', 'ETH', 'XRP'];

describe.each(MODES)('history conformance, %s mode', (mode) => {
  let runtime: ModeRuntime;
  const now = Date.now();
  const dataStart = Math.floor((now - 9 * DAY) / DAY) * DAY + 7 * HOUR + 13_457;
  const dataEnd = now - 10 * MINUTE;
  let candles: Candle[] = [];

  // Settled runs are kept as the routes keep them, so every answer below is checked both as
  // computed and as served again from the cache, and across backfills.
  const cache = new RunCache(64 * 1024 * 1024);

  /**
   * The JSON answer, asked twice: the second time settled runs come from the cache. With a
   * carrying fill (`carries`), a settled run whose empty buckets take values from outside it is
   * not kept (filledRuns.ts), so the second answer may miss those again.
   */
  async function parsedTwice(ask: () => Promise<JsonAnswer>, carries = false) {
    const first = await ask();
    const [hitsBefore, missesBefore] = [cache.hits, cache.misses];
    const second = await ask();
    const text = first.pieces.join('');
    expect(second.pieces.join('')).toBe(text);
    expect(second.empty).toBe(first.empty);
    // Every settled run the first answer computed was kept: the second finds them all.
    if (!carries) expect(cache.misses).toBe(missesBefore);
    const kept = second.pieces.filter((piece) => Buffer.isBuffer(piece)).length;
    expect(cache.hits - hitsBefore).toBeGreaterThanOrEqual(kept);
    const rows = JSON.parse(text) as unknown[];
    expect(first.empty).toBe(rows.length === 0);
    return rows;
  }

  /** The candles as the analyst route answers them (JSON built in SQL), parsed. */
  const answer = (request: CandleRequest) =>
    parsedTwice(() => queryCandlesJson(runtime.pool, request, { cache }), carriesValues(request));
  const ask = (request: Omit<CandleRequest, 'fill'>) => answer({ ...request, fill: 'none' });

  /** The contract history route's answer (each bucket's open), parsed. */
  const opens = (request: Omit<CandleRequest, 'fill'>) =>
    parsedTwice(() => queryOpensJson(runtime.pool, request, { cache }));

  async function write(batch: Candle[]) {
    for (let i = 0; i < batch.length; i += 5000) {
      await insertCandles(runtime.pool, batch.slice(i, i + 5000));
    }
  }

  async function refresh() {
    // Rollup tables: leave the last day and a half unmaterialised, so answers need the tail.
    const result = await refreshRollups(runtime.pool, {
      settleSeconds: 36 * 3600,
      runPolicies: true,
    });
    return result;
  }

  beforeAll(async () => {
    runtime = await createModeRuntime(mode);
    candles = randomCandles(20261122, CODES.slice(0, 2), dataStart, dataEnd).concat(
      randomCandles(7, ['XRP'], dataStart, dataEnd).filter((_, i) => i % 17 === 0),
    );
    await write(candles);
    await refresh();
  }, 180_000);

  afterAll(async () => {
    await runtime?.dispose();
  });

  test('the rollups are materialised and the planner reads them', async () => {
    const status = await readRollupStatus(runtime.pool);
    expect(status.mode).toBe(mode);
    for (const level of status.levels) {
      expect(level.watermark).not.toBeNull();
      expect(Date.parse(level.watermark!)).toBeGreaterThan(dataStart);
    }
    const window = {
      code: 'BTC',
      from: new Date(dataStart),
      to: new Date(now),
      fill: 'none' as const,
    };
    const hourly = await planRequest(runtime.pool, { ...window, intervalSeconds: 3600 });
    expect(hourly.segments.map((s) => s.source)).toContain('1h');
    const daily = await planRequest(runtime.pool, { ...window, intervalSeconds: 86_400 });
    expect(daily.segments.map((s) => s.source)).toContain('1d');
    const odd = await planRequest(runtime.pool, { ...window, intervalSeconds: 7 });
    expect(odd.segments.map((s) => s.source)).toEqual(['raw']);
    // No level copies the minutes: 1-minute buckets read the raw rows.
    const minutes = await planRequest(runtime.pool, { ...window, intervalSeconds: 60 });
    expect(minutes.segments.map((s) => s.source)).toEqual(['raw']);
    const fiveMinutes = await planRequest(runtime.pool, { ...window, intervalSeconds: 600 });
    expect(fiveMinutes.segments.map((s) => s.source)).toContain('5m');
    // Days in zones off the whole hour (+05:30, −03:30, +05:45) read the hours starting at :30
    // or :15 past the UTC hour (finer sources at the window's edges).
    for (const [timeZone, hours] of [
      ['Asia/Kolkata', '1h_at30'],
      ['America/St_Johns', '1h_at30'],
      ['Asia/Kathmandu', '1h_at15'],
    ]) {
      const days = await planRequest(runtime.pool, {
        ...window,
        intervalSeconds: 86_400,
        timeZone,
      });
      const sources = days.segments.map((s) => s.source);
      expect({ timeZone, sources }).toEqual({
        timeZone,
        sources: expect.arrayContaining([hours]),
      });
      expect(sources).not.toContain('1h');
    }
  });

  test('random resolutions and windows equal the brute-force answer', async () => {
    const next = random(mode === 'tables' ? 1 : 2);
    const widths = [7, 60, 90, 300, 600, 900, 1800, 3599, 3600, 7200, 14_400, 86_400, 604_800];
    for (let i = 0; i < 30; i++) {
      const seconds =
        i < widths.length ? widths[i]! : 1 + Math.floor(next() * (next() < 0.5 ? 7200 : 200_000));
      const code = CODES[Math.floor(next() * CODES.length)]!;
      let from = dataStart - DAY + Math.floor(next() * 10 * DAY);
      let to = from + Math.floor(next() * 10 * DAY) + 1;
      if (next() < 0.3) [from, to] = [dataStart - HOUR, now]; // the whole range, aligned edges
      const points = (to - from) / 1000 / seconds;
      if (points > 60_000) continue;
      const got = await ask({
        code,
        from: new Date(from),
        to: new Date(to),
        intervalSeconds: seconds,
      });
      const expected = bruteForceCandles(candles, code, seconds, from, to);
      expect({ seconds, code, from, to, rows: got }).toEqual({
        seconds,
        code,
        from,
        to,
        rows: expected,
      });
      const window = { code, from: new Date(from), to: new Date(to), intervalSeconds: seconds };
      expect({ seconds, code, from, to, opens: await opens(window) }).toEqual({
        seconds,
        code,
        from,
        to,
        opens: expected.map((c) => ({ timestamp: c.timestamp, value: c.open })),
      });
    }
  });

  test('an origin and an offset shift the buckets exactly', async () => {
    const next = random(3);
    for (let i = 0; i < 12; i++) {
      const seconds = [3600, 86_400, 900, 600, 604_800, 5400][i % 6]!;
      const origin = i % 2 === 0 ? Date.UTC(2024, 0, 1, 0, 0, 0) : Date.UTC(2024, 0, 1, 0, 17, 0);
      const offsetSeconds = [0, 3600, -1800, 60, 37][i % 5]!;
      const from = dataStart + Math.floor(next() * 3 * DAY);
      const to = from + 4 * DAY;
      const got = await ask({
        code: 'ETH',
        from: new Date(from),
        to: new Date(to),
        intervalSeconds: seconds,
        origin: new Date(origin),
        offsetSeconds,
      });
      expect(got).toEqual(
        bruteForceCandles(candles, 'ETH', seconds, from, to, origin + offsetSeconds * 1000),
      );
    }
  });

  test('buckets in a zone equal time_bucket over the raw rows on the same grid', async () => {
    // Days and weeks of zones that keep one offset (Kolkata, Kathmandu, UTC) are answered run by
    // run on the equal fixed grid (bucketGrid.ts fixedEquivalent), also from a given origin and
    // offset, which time_bucket reads as the origin's local time in the zone; Berlin's, New
    // York's and St John's cross a change of offset and follow the wall clock.
    const aligned = { origin: new Date('2024-01-01T00:30:00Z'), offsetSeconds: 3600 };
    const cases: Array<[string, number, WallClockAlignment?]> = [
      ['Europe/Berlin', 86_400],
      ['America/New_York', 86_400],
      ['Europe/Berlin', 3600],
      ['Asia/Kolkata', 86_400],
      ['Asia/Kathmandu', 86_400],
      ['America/St_Johns', 86_400],
      ['Asia/Kolkata', 1800],
      ['Asia/Kolkata', 3600],
      ['Asia/Kathmandu', 900],
      ['Asia/Kathmandu', 7200],
      ['America/St_Johns', 14_400],
      ['Asia/Kathmandu', 604_800],
      ['America/New_York', 604_800],
      ['UTC', 86_400],
      ['Asia/Kolkata', 86_400, aligned],
      ['Asia/Kathmandu', 86_400, aligned],
      ['Asia/Kolkata', 604_800, aligned],
      ['Asia/Kathmandu', 2 * 86_400],
    ];
    for (const [timeZone, seconds, alignment] of cases) {
      const from = new Date(dataStart + 5 * HOUR);
      const to = new Date(now);
      const got = await answer({
        code: 'BTC',
        from,
        to,
        intervalSeconds: seconds,
        timeZone,
        ...alignment,
        fill: 'none',
      });
      expect({ timeZone, seconds, alignment, rows: got }).toEqual({
        timeZone,
        seconds,
        alignment,
        rows: await zoneCandlesFromRaw(runtime.pool, 'BTC', seconds, timeZone, from, to, alignment),
      });
    }
  });

  test('fill=previous in :30 and :45 zones carries the last close exactly', async () => {
    const from = new Date(dataStart + 5 * HOUR + 7 * MINUTE);
    const to = new Date(now);
    for (const [timeZone, seconds] of [
      ['Asia/Kathmandu', 1800],
      ['Asia/Kolkata', 3600],
      ['America/St_Johns', 900],
      // Days of a zone with one offset: a fixed grid, filled run by run.
      ['Asia/Kolkata', 86_400],
    ] as const) {
      const got = await answer({
        code: 'XRP',
        from,
        to,
        intervalSeconds: seconds,
        timeZone,
        fill: 'previous',
      });
      expect({ timeZone, seconds, rows: got }).toEqual({
        timeZone,
        seconds,
        rows: await filledFromRaw('XRP', seconds, timeZone, from, to),
      });
    }
  });

  /**
   * fill=previous computed from the raw rows alone: every bucket of the zone's grid that
   * overlaps the window, empty ones carrying the last close before them.
   */
  async function filledFromRaw(
    code: string,
    seconds: number,
    timeZone: string,
    from: Date,
    to: Date,
  ) {
    const fromSql = sql.fragment`${from.toISOString()}::timestamptz`;
    const toSql = sql.fragment`${to.toISOString()}::timestamptz`;
    const data = await zoneCandlesFromRaw(runtime.pool, code, seconds, timeZone, from, to);
    const starts = await runtime.pool.anyFirst(sql.type(z.object({ b: z.date() }))`
      SELECT DISTINCT ${zoneBucketSql(seconds, timeZone, 't')} AS b
      FROM (SELECT generate_series(${fromSql}, ${toSql}, interval '1 minute') AS t
            UNION ALL SELECT ${toSql} - interval '1 microsecond') AS instants
      WHERE t < ${toSql}
      ORDER BY 1
    `);
    const seed = await runtime.pool.maybeOneFirst(sql.type(z.object({ close: z.number() }))`
      SELECT close FROM price_observations
      WHERE currency_code = ${code} AND time < ${fromSql} ORDER BY time DESC LIMIT 1
    `);
    const byStart = new Map(data.map((row) => [String(row.timestamp), row] as const));
    let carried = seed;
    return starts.map((start) => {
      const timestamp = start.toISOString();
      const row = byStart.get(timestamp);
      if (row) {
        carried = row.close;
        return row;
      }
      const c = carried;
      return { timestamp, open: c, high: c, low: c, close: c, volume: 0, count: 0 };
    });
  }

  test('prices written after an answer show in the next one', async () => {
    // Like the harvester's: a new price, unmarked, in the last full minute, which continuous
    // aggregates serve in real time and the rollup tables from the raw rows.
    const end = Math.floor(Date.now() / MINUTE) * MINUTE;
    const window = { code: 'XRP', from: new Date(end - 6 * HOUR), to: new Date(end) };
    const expectExact = async () => {
      for (const seconds of [60, 300, 3600]) {
        const expected = bruteForceCandles(candles, 'XRP', seconds, end - 6 * HOUR, end);
        expect({ seconds, rows: await ask({ ...window, intervalSeconds: seconds }) }).toEqual({
          seconds,
          rows: expected,
        });
      }
    };
    await expectExact();
    const late: Candle = { code: 'XRP', time: new Date(end - MINUTE + 7_000), open: 1234.5 };
    await insertCandles(runtime.pool, [late]);
    candles = [...candles, { ...late, high: 1234.5, low: 1234.5, close: 1234.5, volume: 0 }];
    await expectExact();
  });

  test('a backfill into an already rolled-up range is exact before and after the refresh', async () => {
    const next = random(4);
    const check = async () => {
      for (const code of ['BTC', 'ETH']) {
        for (const seconds of [60, 3600, 86_400, 7200, 45]) {
          const window = [dataStart - HOUR, now] as const;
          const request = {
            code,
            from: new Date(window[0]),
            to: new Date(window[1]),
            intervalSeconds: seconds,
          };
          const expected = bruteForceCandles(candles, code, seconds, ...window);
          expect({ code, seconds, rows: await ask(request) }).toEqual({
            code,
            seconds,
            rows: expected,
          });
          expect({ code, seconds, opens: await opens(request) }).toEqual({
            code,
            seconds,
            opens: expected.map((c) => ({ timestamp: c.timestamp, value: c.open })),
          });
        }
        // Days and hours in :30 and :45 zones: the offset hourly levels are recomputed too.
        for (const [timeZone, seconds] of [
          ['Asia/Kolkata', 86_400],
          ['Asia/Kathmandu', 3600],
        ] as const) {
          const [from, to] = [new Date(dataStart - HOUR), new Date(now)];
          const request = { code, from, to, intervalSeconds: seconds, timeZone };
          expect({ code, timeZone, rows: await ask(request) }).toEqual({
            code,
            timeZone,
            rows: await zoneCandlesFromRaw(runtime.pool, code, seconds, timeZone, from, to),
          });
        }
      }
    };
    const hitsBefore = cache.hits;
    await check(); // the settled runs of these windows are now in the cache
    expect(cache.hits - hitsBefore).toBeGreaterThan(20);
    const from = dataStart + 2 * DAY + 3 * HOUR;
    // New candles between the existing ones, and corrections of existing candles.
    const added = randomCandles(99, ['BTC'], from, from + 5 * HOUR).map((c) => ({
      ...c,
      time: new Date(c.time.getTime() + 1),
    }));
    const existing = candles.filter(
      (c) => c.code === 'ETH' && c.time.getTime() >= from && c.time.getTime() < from + DAY,
    );
    const corrected = existing
      .filter(() => next() < 0.2)
      .map((c) => ({
        ...c,
        open: c.open * 2,
        high: c.high! * 3,
        close: c.close! / 2,
        low: c.low! / 4,
      }));
    await runtime.pool.transaction(async (tx) => {
      const rows = [...added, ...corrected].map((c) => ({
        code: c.code,
        time: c.time.toISOString(),
        open: c.open,
        high: c.high,
        low: c.low,
        close: c.close,
        volume: c.volume,
      }));
      await tx.query(sql.unsafe`
        INSERT INTO price_observations (currency_code, time, open, high, low, close, volume, source)
        SELECT code, time, open, high, low, close, volume, 'backfill'
        FROM jsonb_to_recordset(${sql.jsonb(rows)})
          AS x(code text, time timestamptz, open float8, high float8, low float8, close float8, volume float8)
        ON CONFLICT (currency_code, time) DO UPDATE
          SET open = EXCLUDED.open, high = EXCLUDED.high, low = EXCLUDED.low, close = EXCLUDED.close
      `);
      await markTouchedRanges(tx, [
        { code: 'BTC', from: added[0]!.time, to: added.at(-1)!.time },
        { code: 'ETH', from: corrected[0]!.time, to: corrected.at(-1)!.time },
      ]);
    });
    const byKey = new Map(candles.map((c) => [`${c.code}|${c.time.getTime()}`, c]));
    for (const c of [...added, ...corrected]) byKey.set(`${c.code}|${c.time.getTime()}`, c);
    candles = [...byKey.values()];

    await check(); // pending invalidations: the planner reads the touched ranges from below
    const result = await refresh();
    expect(result.invalidationsConsumed).toBe(2);
    const pending = await runtime.pool.oneFirst(
      sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM price_invalidations`,
    );
    expect(pending).toBe(0);
    // Recomputed rollups: a new revision, so nothing kept from before the backfill is served.
    await check();
  }, 120_000);
});
