import { request, type IncomingMessage } from 'node:http';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { startDataModule, type DataModuleHarness } from '../support/dataModule.ts';
import { insertCandles } from '../support/prices.ts';
import { sql, type DatabasePool } from 'slonik';
import { candleJson } from '../../src/data/history/candleOutput.ts';
import { queryCandlesJson } from '../../src/data/history/candleQuery.ts';
import { streamCandles } from '../../src/data/history/candleStream.ts';
import type { CandleRequest } from '../../src/data/history/request.ts';
import { eventually, valueOf } from '../support/wait.ts';

// A year at one-second buckets with fill=previous is 31.5 M rows: the export must start sending
// at once (it is computed window after window, not sorted whole first) and, when the client
// hangs up, nothing of it may keep running in the database.

const DAY = 86_400_000;

/** Sessions of this test's database still running a statement or holding a transaction open. */
async function busySessions(pool: DatabasePool): Promise<number> {
  return Number(
    await pool.oneFirst(sql.unsafe`
      SELECT count(*) FROM pg_stat_activity
      WHERE datname = current_database() AND pid <> pg_backend_pid()
        AND state IN ('active', 'idle in transaction', 'idle in transaction (aborted)')`),
  );
}
const YEAR = 365 * DAY;

/** Starts a GET and resolves with the response, the text received so far and a way to hang up. */
function startExport(url: string, token: string) {
  let text = '';
  const req = request(url, { headers: { authorization: `Bearer ${token}` } });
  req.on('error', () => {});
  const response = new Promise<IncomingMessage>((resolve) => req.on('response', resolve));
  void response.then((res) => {
    res.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    res.on('error', () => {});
  });
  req.end();
  return { response, received: () => text, hangUp: () => req.destroy() };
}

describe('a year-long export at one second with fill=previous', () => {
  let data: DataModuleHarness;
  const to = new Date(Math.floor(Date.now() / 1000) * 1000);
  const from = new Date(to.getTime() - YEAR);

  beforeAll(async () => {
    data = await startDataModule({
      DATABASE_STATEMENT_TIMEOUT_MS: '600000',
      REQUEST_TIMEOUT_MS: '600000',
    });
    // An observation a day: every other second of the year is filled from the one before.
    await insertCandles(
      data.runtime.pool,
      Array.from({ length: 366 }, (_, day) => ({
        code: 'BTC',
        time: new Date(from.getTime() - DAY / 2 + day * DAY),
        open: 100 + day,
      })),
    );
  }, 60_000);
  afterAll(async () => {
    await data?.close();
  });

  // Observations at noon of each day of the window, the window starting at midnight: its first
  // second carries the close from before it, or lies halfway between the two around it.
  test.each([
    ['previous', '100'],
    ['linear', '100.5'],
  ])(
    'fill=%s: sends its first rows at once, and the client leaving stops its SQL',
    async (fill, first) => {
      const url =
        `${data.server.url}/data/candles/BTC/export?from=${from.toISOString()}` +
        `&to=${to.toISOString()}&interval=1s&fill=${fill}`;
      const exported = startExport(url, data.readToken);
      expect((await exported.response).statusCode).toBe(200);
      // Header and the first filled rows. A ceiling, not a timing: computing the whole year before
      // the first row takes minutes.
      const firstRows = await valueOf(
        async () => {
          const lines = exported.received().split('\n');
          return lines.length > 3 ? lines.slice(0, 3) : undefined;
        },
        10_000,
        'the first rows of the export',
      );
      expect(firstRows[0]).toBe('timestamp,open,high,low,close,volume,count');
      expect(firstRows[1]).toBe(`${from.toISOString()},${first},${first},${first},${first},0,0`);
      const [second, ...values] = firstRows[2]!.split(',');
      expect(second).toBe(new Date(from.getTime() + 1000).toISOString());
      expect(Number(values[3])).toBeCloseTo(fill === 'previous' ? 100 : 100.5 + 1 / 86_400, 9);

      exported.hangUp();
      const left = Date.now();
      await eventually(
        async () => (await busySessions(data.runtime.pool)) === 0,
        10_000,
        "the export's SQL to stop",
      );
      // The rule: no abandoned SQL still running 2 s after its request ended (slack for a loaded
      // machine's polling on top).
      expect(Date.now() - left).toBeLessThan(2_000 + 1_000);
    },
    120_000,
  );
});

describe('the export, slice by slice, equals the one-statement answer', () => {
  let data: DataModuleHarness;
  const MIN = 60_000;

  beforeAll(async () => {
    data = await startDataModule();
    // Irregular observations across both 2024 DST changes in Europe and America, with gaps.
    const candles = [];
    for (const start of ['2024-03-09T00:00:00Z', '2024-03-30T00:00:00Z', '2024-10-26T12:00:00Z']) {
      for (let i = 0; i < 300; i++) {
        if (i % 7 === 3 || i % 11 === 5) continue;
        candles.push({
          code: 'ETH',
          time: new Date(Date.parse(start) + i * 17 * MIN + (i % 5) * 1000),
          open: 100 + i,
          close: 101 + i,
          volume: i % 4,
        });
      }
    }
    await insertCandles(data.runtime.pool, candles);
  }, 60_000);
  afterAll(async () => {
    await data?.close();
  });

  const window = (from: string, to: string) => ({ from: new Date(from), to: new Date(to) });
  test.each<[string, Omit<CandleRequest, 'code'>]>([
    [
      '1m, previous',
      {
        ...window('2024-03-30T01:00:00Z', '2024-03-30T09:00:00Z'),
        intervalSeconds: 60,
        fill: 'previous',
      },
    ],
    [
      '7 s, null, unaligned window',
      {
        ...window('2024-03-30T02:00:03Z', '2024-03-30T02:20:05Z'),
        intervalSeconds: 7,
        fill: 'null',
      },
    ],
    [
      '5m, none',
      {
        ...window('2024-03-30T02:00:00Z', '2024-03-30T10:00:00Z'),
        intervalSeconds: 300,
        fill: 'none',
      },
    ],
    [
      '15m, null, New York across spring forward',
      {
        ...window('2024-03-09T20:00:00Z', '2024-03-10T12:00:00Z'),
        intervalSeconds: 900,
        fill: 'null',
        timeZone: 'America/New_York',
      },
    ],
    [
      '1h, previous, Berlin across fall back, unaligned',
      {
        ...window('2024-10-26T13:30:00Z', '2024-10-28T00:00:00Z'),
        intervalSeconds: 3600,
        fill: 'previous',
        timeZone: 'Europe/Berlin',
      },
    ],
    [
      '1d, previous, Berlin, with an offset, before the first observation',
      {
        ...window('2024-03-01T00:00:00Z', '2024-04-10T00:00:00Z'),
        intervalSeconds: 86_400,
        fill: 'previous',
        timeZone: 'Europe/Berlin',
        offsetSeconds: 6 * 3600,
      },
    ],
    [
      '30m, linear',
      {
        ...window('2024-03-30T00:00:00Z', '2024-03-31T06:00:00Z'),
        intervalSeconds: 1800,
        fill: 'linear',
      },
    ],
    [
      '20m, linear, past the last observation and before the first',
      {
        ...window('2024-03-08T20:00:00Z', '2024-03-11T00:00:00Z'),
        intervalSeconds: 1200,
        fill: 'linear',
      },
    ],
    [
      '1h, linear, Berlin across fall back, unaligned',
      {
        ...window('2024-10-26T13:30:00Z', '2024-10-29T00:00:00Z'),
        intervalSeconds: 3600,
        fill: 'linear',
        timeZone: 'Europe/Berlin',
      },
    ],
    [
      '1d, linear, across the gaps between the three stretches',
      {
        ...window('2024-03-01T00:00:00Z', '2024-11-10T00:00:00Z'),
        intervalSeconds: 86_400,
        fill: 'linear',
      },
    ],
  ])(
    '%s',
    async (_, spec) => {
      const request = { code: 'ETH', ...spec };
      const answer = await queryCandlesJson(data.runtime.pool, request);
      const expected: unknown[] = answer.empty ? [] : JSON.parse(answer.pieces.join(''));
      expect(expected.length).toBeGreaterThan(10);
      const streamed: unknown[] = [];
      // Slices of five buckets: dozens of slice boundaries in every window.
      await streamCandles(
        data.runtime.pool,
        request,
        async (rows) => {
          for await (const row of rows) streamed.push(candleJson(row));
        },
        { sliceBuckets: 5 },
      );
      expect(streamed).toEqual(expected);
    },
    60_000,
  );
});
